import CoreMLCommon
import CoreMLProgramWriter
import CoreMLReader
import Foundation
import ModelIR
import Testing

/// The ML Program writer on its own, read back by the Core ML reader (Apple's documented format):
/// a graph becomes a program of the operations that compute it, with its inputs and outputs by name.
@Suite struct MLProgramWriterAloneTests {
  static func denseRelu() throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4]))
    let kernel = Constant(shape: [4, 2], values: [1, 0, 0, 1, -1, 0, 0, -1])
    let y = try builder.add(
      .dense(Dense(kernel: kernel, bias: Constant(shape: [2], values: [0.5, -0.5]))), name: "fc", inputs: [x])
    let z = try builder.add(.activation(.relu), name: "relu", inputs: [y])
    return builder.build(outputs: [z])
  }

  /// Written as a package (the weights live beside the model file) and read back.
  static func writtenAndRead(_ options: CoreMLWriterOptions) throws -> CoreMLModelSpec {
    let encoded = try MLProgramWriter().encode(try denseRelu(), options: options)
    #expect(encoded.format == .mlProgram)
    let url = FileManager.default.temporaryDirectory.appendingPathComponent(
      "program-writer-\(UUID().uuidString).mlpackage")
    defer { try? FileManager.default.removeItem(at: url) }
    try encoded.write(to: url)
    return try CoreMLSpecReader.read(contentsOf: url)
  }

  @Test func aDenseLayerAndReLUBecomeLinearAndRelu() throws {
    let spec = try Self.writtenAndRead(CoreMLWriterOptions())
    let program = try #require(spec.program)
    // ML Programs exist from specification 6 (iOS 15), whose opset is CoreML5.
    #expect(spec.specificationVersion >= 6 && program.opset.hasPrefix("CoreML"))
    let types = program.operations.map(\.type)
    #expect(types.contains("linear") && types.contains("relu"), "\(types)")
    let graph = try Self.denseRelu()
    #expect(spec.inputs.map(\.name) == ["x"] && spec.outputs.map(\.name) == [graph[graph.outputs[0]].name])
  }

  /// float16 weights are stored as float16 (`WeightPrecision`), and the spec says so.
  @Test func float16PrecisionStoresHalfWeights() throws {
    var options = CoreMLWriterOptions()
    options.precision = .float16
    let spec = try Self.writtenAndRead(options)
    #expect(spec.usesFloat16)
  }
}
