import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import ONNXFormat
import ONNXTestSupport
import ReferenceRuntime
import Testing

/// A node whose inputs are all float constants is computed at import time (the ONNX frontend's evaluator),
/// so what reads it sees a constant: Swin V2's relative position bias is a small MLP of a constant
/// coordinate table, gathered by a constant index, which otherwise became one slice per index (98 526
/// slices in Swin V2 S). Expected values are computed here from Operators.md (MatMul, Add, Relu, Gather,
/// Sigmoid).
@Suite struct ImportFoldingTests {
  /// bias = Sigmoid(Gather(Relu(table · w + b), index)), [4, 2]; y = x + bias, broadcast over x [1, 2, 4, 2].
  static func positionBiasModel() throws -> ONNXModel {
    let table: [Float] = [0.5, -1, 1.5, 2, -0.25, 0.75]  // [3, 2]
    let w: [Float] = [1, -2, 0.5, 0.25]  // [2, 2]
    let b: [Float] = [0.1, -0.3]
    let index = [2, 0, 1, 2]  // [4]
    return try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("MatMul", inputs: ["table", "w"], outputs: ["h"]),
        ONNXProtos.node("Add", inputs: ["h", "b"], outputs: ["hb"]),
        ONNXProtos.node("Relu", inputs: ["hb"], outputs: ["r"]),
        ONNXProtos.node("Gather", inputs: ["r", "index"], outputs: ["g"]),
        ONNXProtos.node("Sigmoid", inputs: ["g"], outputs: ["bias"]),
        ONNXProtos.node("Add", inputs: ["x", "bias"], outputs: ["y"]),
      ],
      inputs: [("x", [1, 2, 4, 2])], outputs: [("y", [1, 2, 4, 2])],
      initializers: [
        ONNXTestModels.floats("table", [3, 2], table), ONNXTestModels.floats("w", [2, 2], w),
        ONNXTestModels.floats("b", [2], b),
        ONNXTestModels.int64s("index", [4], index),
      ])
  }

  static var expectedBias: [Float] {
    let table: [[Double]] = [[0.5, -1], [1.5, 2], [-0.25, 0.75]]
    let w: [[Double]] = [[1, -2], [0.5, 0.25]]
    let b: [Double] = [0.1, -0.3]
    var rows: [[Double]] = []
    for row in table {
      var out: [Double] = []
      for j in 0..<2 {
        let sum: Double = row[0] * w[0][j] + row[1] * w[1][j] + b[j]
        out.append(max(0, sum))
      }
      rows.append(out)
    }
    var result: [Float] = []
    for i in [2, 0, 1, 2] { for v in rows[i] { result.append(Float(1 / (1 + exp(-v)))) } }
    return result
  }

  @Test func aGraphOfConstantsBecomesOneConstant() throws {
    let source = try ONNXFrontend.source(
      try Self.positionBiasModel(), path: "m.onnx", options: SourceOptions(), constants: [:])
    let kinds = source.graph.nodes.map(\.operation.kindName)
    // What is left: the input's layout, the constant bias and the addition; no product, gather or slice.
    #expect(
      !kinds.contains("matMul") && !kinds.contains("dense") && !kinds.contains("slice")
        && !kinds.contains("concatenate"), "\(kinds)")
    let constants = source.graph.nodes.compactMap { node -> Constant? in
      if case .constant(let c) = node.operation { return c }
      return nil
    }
    let bias = try #require(constants.first { $0.count == 8 }, "no folded bias among \(constants.map(\.shape))")
    for (actual, expected) in zip(bias.values, Self.expectedBias) {
      // float32 sums of two products, then a sigmoid: a few float32 roundoffs.
      #expect(abs(actual - expected) <= 4 * Float.ulpOfOne, "\(actual) vs \(expected)")
    }
    // Both formats write and verify it.
    try ONNXTestModels.convertAndVerify(try Self.positionBiasModel(), format: .mlProgram)
    try ONNXTestModels.convertAndVerify(try Self.positionBiasModel(), format: .neuralNetwork)
  }

  @Test func withoutAnEvaluatorTheGatherStaysSlices() throws {
    // The importer alone folds only what its handlers fold: the MLP stays, and the Gather of a computed
    // tensor is one slice per index.
    let imported = try ONNXGraphImporter.importGraph(try Self.positionBiasModel(), path: "m.onnx")
    #expect(imported.graph.nodes.filter { $0.operation.kindName == "slice" }.count == 4)
  }
}
