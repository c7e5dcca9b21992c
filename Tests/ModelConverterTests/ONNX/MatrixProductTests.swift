import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import ONNXFormat
import ONNXTestSupport
import ReferenceRuntime
import Testing

/// Products of two computed tensors (`MatMul`, `Einsum`, as attention computes them) and `ScatterND` on
/// constants (the masks Swin builds from shapes). Expected values are computed here from the operators'
/// definitions in ONNX's Operators.md (numpy's matmul; Einstein summation; ScatterND's own example).
@Suite struct MatrixProductTests {
  /// The graph's outputs on `inputs`, run with the direct loops and with the fast kernels; both are checked
  /// against `expected` within float32 rounding of sums of `terms` products.
  static func expectRuns(
    _ model: ONNXModel, _ inputs: [Tensor], _ expected: [Float], terms: Int,
    sourceLocation: SourceLocation = #_sourceLocation
  ) throws {
    let imported = try ONNXGraphImporter.importGraph(model, path: "m.onnx")
    for kernels in [Interpreter.KernelChoice.direct, .fast] {
      let output = Interpreter(graph: imported.graph, kernels: kernels).run(inputs)[0]
      #expect(output.values.count == expected.count, sourceLocation: sourceLocation)
      for (actual, wanted) in zip(output.values, expected) {
        // Both sides sum `terms` products below 4 in magnitude in float32 (or better): each is within
        // terms · ε · 4 · terms of the exact sum, so they differ by at most twice that.
        let bound = 8 * Float(terms * terms) * Float.ulpOfOne + 1e-6
        #expect(abs(actual - wanted) <= bound, "\(kernels): \(actual) vs \(wanted)", sourceLocation: sourceLocation)
      }
    }
  }

  /// Deterministic values in [-2, 2).
  static func values(_ count: Int, seed: Int) -> [Float] {
    (0..<count).map { Float(($0 * 37 + seed * 11) % 64) / 16 - 2 }
  }

  // MARK: MatMul

  @Test func matMulOfTwoComputedTensorsBroadcastsBatchAxes() throws {
    // a [2, 3, 4] by b [1, 4, 5]: b's batch axis of 1 broadcasts over a's 2.
    let model = try ONNXTestModels.model(
      nodes: [ONNXProtos.node("MatMul", inputs: ["a", "b"], outputs: ["y"])],
      inputs: [("a", [2, 3, 4]), ("b", [1, 4, 5])], outputs: [("y", [2, 3, 5])])
    let (a, b) = (Self.values(24, seed: 1), Self.values(20, seed: 2))
    var expected: [Float] = []
    for batch in 0..<2 {
      for i in 0..<3 {
        for j in 0..<5 { expected.append((0..<4).reduce(Float(0)) { $0 + a[batch * 12 + i * 4 + $1] * b[$1 * 5 + j] }) }
      }
    }
    try Self.expectRuns(
      model, [Tensor(shape: [2, 3, 4], values: a), Tensor(shape: [1, 4, 5], values: b)], expected, terms: 4)
  }

  @Test func matMulOfAVectorByComputedMatrices() throws {
    // numpy: a vector A is one row, removed again: [4] by [2, 4, 3] is [2, 3].
    let model = try ONNXTestModels.model(
      nodes: [ONNXProtos.node("MatMul", inputs: ["v", "m"], outputs: ["y"])], inputs: [("v", [4]), ("m", [2, 4, 3])],
      outputs: [("y", [2, 3])])
    let (v, m) = (Self.values(4, seed: 3), Self.values(24, seed: 4))
    var expected: [Float] = []
    for batch in 0..<2 {
      for j in 0..<3 {
        var sum: Float = 0
        for p in 0..<4 { sum += v[p] * m[batch * 12 + p * 3 + j] }
        expected.append(sum)
      }
    }
    try Self.expectRuns(
      model, [Tensor(shape: [4], values: v), Tensor(shape: [2, 4, 3], values: m)], expected, terms: 4)
  }

  // MARK: Einsum

  @Test(arguments: ["B G H I D, B G H J D -> B G H I J", "bghid,bghjd->bghij"])
  func einsumAsMaxViTWritesAttentionScores(equation: String) throws {
    let (g, h, i, j, d) = (2, 2, 3, 4, 5)
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "Einsum", inputs: ["q", "k"], outputs: ["s"],
          attributes: [ONNXTestModels.stringAttribute("equation", equation)])
      ],
      inputs: [("q", [1, g, h, i, d]), ("k", [1, g, h, j, d])], outputs: [("s", [1, g, h, i, j])])
    let (q, k) = (Self.values(g * h * i * d, seed: 5), Self.values(g * h * j * d, seed: 6))
    var expected: [Float] = []
    for gh in 0..<(g * h) {
      for row in 0..<i {
        for column in 0..<j {
          expected.append((0..<d).reduce(Float(0)) { $0 + q[(gh * i + row) * d + $1] * k[(gh * j + column) * d + $1] })
        }
      }
    }
    try Self.expectRuns(
      model, [Tensor(shape: [1, g, h, i, d], values: q), Tensor(shape: [1, g, h, j, d], values: k)], expected, terms: d)
  }

  @Test func einsumWithAnOutputOrderOtherThanTheProducts() throws {
    // "ij,jk->ki": the product transposed.
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "Einsum", inputs: ["a", "b"], outputs: ["y"],
          attributes: [ONNXTestModels.stringAttribute("equation", "ij,jk->ki")])
      ],
      inputs: [("a", [2, 3]), ("b", [3, 4])], outputs: [("y", [4, 2])])
    let (a, b) = (Self.values(6, seed: 7), Self.values(12, seed: 8))
    var expected: [Float] = []
    for k in 0..<4 {
      for i in 0..<2 {
        var sum: Float = 0
        for j in 0..<3 { sum += a[i * 3 + j] * b[j * 4 + k] }
        expected.append(sum)
      }
    }
    try Self.expectRuns(
      model, [Tensor(shape: [2, 3], values: a), Tensor(shape: [3, 4], values: b)], expected, terms: 3)
  }

  @Test(arguments: ["ii->i", "ij->i", "...ij,...jk->...ik", "ij,jk,kl->il"])
  func einsumFormsWithoutAProductAreRefusedByName(equation: String) throws {
    let operands = equation.hasPrefix("ij,jk,kl") ? 3 : equation.contains(",") ? 2 : 1
    let names = ["a", "b", "c"].prefix(operands)
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "Einsum", inputs: Array(names), outputs: ["y"],
          attributes: [ONNXTestModels.stringAttribute("equation", equation)])
      ],
      inputs: names.map { ($0, [3, 3]) }, outputs: [("y", [3])])
    #expect(throws: ONNXImportError.self) { try ONNXGraphImporter.importGraph(model, path: "m.onnx") }
    do {
      _ = try ONNXGraphImporter.importGraph(model, path: "m.onnx")
    } catch {
      #expect("\(error)".contains("Einsum"), "\(error)")
    }
  }

  // MARK: ScatterND

  @Test func scatterNDOnConstantsFoldsAsOperatorsMdsExample() throws {
    // Operators.md, ScatterND example 1: data [1...8], indices [[4], [3], [1], [7]], updates [9, 10, 11, 12].
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("ScatterND", inputs: ["data", "indices", "updates"], outputs: ["scattered"]),
        ONNXProtos.node("Add", inputs: ["x", "scattered"], outputs: ["y"]),
      ],
      inputs: [("x", [8])], outputs: [("y", [8])],
      initializers: [
        ONNXTestModels.floats("data", [8], [1, 2, 3, 4, 5, 6, 7, 8]),
        ONNXTestModels.int64s("indices", [4, 1], [4, 3, 1, 7]), ONNXTestModels.floats("updates", [4], [9, 10, 11, 12]),
      ])
    try Self.expectRuns(model, [Tensor(zeros: [8])], [1, 11, 3, 10, 9, 6, 7, 12], terms: 1)
  }

  @Test func scatterNDWithAReductionCombinesSlices() throws {
    // reduction "mul" (opset 16): rows 0 and 2 of a [3, 2] matrix of 2s multiplied by the updates; index -1 is row 2.
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "ScatterND", inputs: ["data", "indices", "updates"], outputs: ["scattered"],
          attributes: [ONNXTestModels.stringAttribute("reduction", "mul")]),
        ONNXProtos.node("Add", inputs: ["x", "scattered"], outputs: ["y"]),
      ],
      inputs: [("x", [3, 2])], outputs: [("y", [3, 2])],
      initializers: [
        ONNXTestModels.floats("data", [3, 2], [2, 2, 2, 2, 2, 2]), ONNXTestModels.int64s("indices", [2, 1], [0, -1]),
        ONNXTestModels.floats("updates", [2, 2], [3, 4, 5, 6]),
      ])
    try Self.expectRuns(model, [Tensor(zeros: [3, 2])], [6, 8, 2, 2, 10, 12], terms: 1)
  }

  @Test func scatterNDOnComputedDataOrOutOfRangeIndicesIsRefused() throws {
    let computed = try ONNXTestModels.model(
      nodes: [ONNXProtos.node("ScatterND", inputs: ["x", "indices", "updates"], outputs: ["y"])], inputs: [("x", [8])],
      outputs: [("y", [8])],
      initializers: [ONNXTestModels.int64s("indices", [1, 1], [0]), ONNXTestModels.floats("updates", [1], [1])])
    #expect(throws: ONNXImportError.self) { try ONNXGraphImporter.importGraph(computed, path: "m.onnx") }
    let outside = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("ScatterND", inputs: ["data", "indices", "updates"], outputs: ["scattered"]),
        ONNXProtos.node("Add", inputs: ["x", "scattered"], outputs: ["y"]),
      ],
      inputs: [("x", [8])], outputs: [("y", [8])],
      initializers: [
        ONNXTestModels.floats("data", [8], Array(repeating: 0, count: 8)),
        ONNXTestModels.int64s("indices", [1, 1], [8]), ONNXTestModels.floats("updates", [1], [1]),
      ])
    #expect(throws: ONNXImportError.self) { try ONNXGraphImporter.importGraph(outside, path: "m.onnx") }
  }

  // MARK: Conversion

  /// Self-attention over a `[1, 4, 6]` sequence: scores `q kᵀ` from two computed tensors, softmax, then the
  /// weighted sum, once by MatMul and once by Einsum.
  static func attention() throws -> ONNXModel {
    let (wq, wk) = (Self.values(36, seed: 9).map { $0 / 4 }, Self.values(36, seed: 10).map { $0 / 4 })
    return try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("MatMul", inputs: ["x", "wq"], outputs: ["q"]),
        ONNXProtos.node("MatMul", inputs: ["x", "wk"], outputs: ["k"]),
        ONNXProtos.node(
          "Transpose", inputs: ["k"], outputs: ["kt"], attributes: [ONNXTestModels.intsAttribute("perm", [0, 2, 1])]),
        ONNXProtos.node("MatMul", inputs: ["q", "kt"], outputs: ["scores"]),
        ONNXProtos.node(
          "Softmax", inputs: ["scores"], outputs: ["p"], attributes: [ONNXTestModels.intAttribute("axis", -1)]),
        ONNXProtos.node("MatMul", inputs: ["p", "x"], outputs: ["o"]),
        ONNXProtos.node(
          "Einsum", inputs: ["p", "q"], outputs: ["e"],
          attributes: [ONNXTestModels.stringAttribute("equation", "bij,bjd->bid")]),
        ONNXProtos.node("Add", inputs: ["o", "e"], outputs: ["y"]),
      ],
      inputs: [("x", [1, 4, 6])], outputs: [("y", [1, 4, 6])],
      initializers: [ONNXTestModels.floats("wq", [6, 6], wq), ONNXTestModels.floats("wk", [6, 6], wk)])
  }

  @Test func attentionConvertsToAnMLProgramThatVerifies() throws {
    let output = try ONNXTestModels.convertAndVerify(try Self.attention(), format: .mlProgram)
    defer { try? FileManager.default.removeItem(at: output.deletingLastPathComponent()) }
    // The written program computes the products with MIL's matmul (read back from the file).
    let program = try String(
      contentsOf: output.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel"), encoding: .isoLatin1)
    #expect(program.contains("matmul"))
  }

  /// As a classic network the products are specification-4 `batchedMatMul` layers of two inputs, in a
  /// rank-N network (`EXACT_ARRAY_MAPPING`), read back and run as Apple documents them.
  @Test func attentionConvertsToARankNClassicNetworkThatVerifies() throws {
    let output = try ONNXTestModels.convertAndVerify(try Self.attention(), format: .neuralNetwork)
    defer { try? FileManager.default.removeItem(at: output.deletingLastPathComponent()) }
    let spec = try CoreMLSpecReader.read(contentsOf: output)
    #expect(spec.specificationVersion == 4 && spec.exactArrayMapping)
    let products = spec.layers.filter {
      if case .batchedMatmul = $0.parameters { return $0.inputs.count == 2 } else { return false }
    }
    #expect(products.count == 3, "\(spec.layers.map(\.kind))")
  }
}
