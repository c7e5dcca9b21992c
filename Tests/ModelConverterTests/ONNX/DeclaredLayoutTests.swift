import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ONNXFormat
import ONNXTestSupport
import Testing

/// A feature keeps the layout its source declares (issue 35): a segmentation head ending in
/// `Transpose(0, 2, 3, 1)` declares its output `[1, H, W, C]`, and the classic network declares and fills
/// `[H, W, C]` in that order, not Core ML's own `[C, H, W]`; an NHWC input likewise. `verify` refuses a
/// converted model that declares another shape for a declared feature, whatever its values.
@Suite struct DeclaredLayoutTests {
  /// x [1, 3, 4, 5] -> Conv (2 filters, 3x3, padded) -> Transpose to [1, 4, 5, 2]; and an NHWC input
  /// [1, 4, 5, 3] read through Transpose(0, 3, 1, 2) for `nhwc`.
  static func model(nhwcInput: Bool) throws -> ONNXModel {
    let weights = (0..<54).map { Float(($0 * 7) % 11) / 10 - 0.5 }
    var nodes = [
      ONNXProtos.node(
        "Conv", name: "conv", inputs: [nhwcInput ? "x_nchw" : "x", "w"], outputs: ["c"],
        attributes: [ONNXTestModels.intsAttribute("pads", [1, 1, 1, 1])]),
      ONNXProtos.node(
        "Transpose", name: "to_nhwc", inputs: ["c"], outputs: ["y"],
        attributes: [ONNXTestModels.intsAttribute("perm", [0, 2, 3, 1])]),
    ]
    if nhwcInput {
      nodes.insert(
        ONNXProtos.node(
          "Transpose", name: "to_nchw", inputs: ["x"], outputs: ["x_nchw"],
          attributes: [ONNXTestModels.intsAttribute("perm", [0, 3, 1, 2])]), at: 0)
    }
    return try ONNXTestModels.model(
      nodes: nodes, inputs: [("x", nhwcInput ? [1, 4, 5, 3] : [1, 3, 4, 5])], outputs: [("y", [1, 4, 5, 2])],
      initializers: [ONNXTestModels.floats("w", [2, 3, 3, 3], weights)], opset: 13)
  }

  @Test(arguments: [false, true])
  func channelsLastFeaturesKeepTheirOrderInAClassicNetwork(nhwcInput: Bool) throws {
    let model = try Self.model(nhwcInput: nhwcInput)
    let source = try ONNXFrontend.source(model, path: "seg.onnx", options: SourceOptions())
    let converted = try Converter.convert(source, options: ConversionOptions(format: .neuralNetwork))
    #expect(converted.summary.outputs.map(\.type.shape) == [[4, 5, 2]])
    #expect(converted.summary.inputs.map(\.type.shape) == [nhwcInput ? [4, 5, 3] : [3, 4, 5]])
    // And the values, element for element in the declared order, as our runtime computes the source.
    try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
    try ONNXTestModels.convertAndVerify(model, format: .mlProgram)
  }

  /// A model declaring the output [C, H, W] (Core ML's own order) for a source declaring [1, H, W, C]
  /// computes the same numbers transposed: verify refuses it as another interface.
  @Test func verifyRefusesAnotherDeclaredShape() throws {
    let model = try Self.model(nhwcInput: false)
    let source = try ONNXFrontend.source(model, path: "seg.onnx", options: SourceOptions())
    var stripped = source
    stripped.declaredArrays = [:]
    let converted = try Converter.convert(stripped, options: ConversionOptions(format: .neuralNetwork))
    #expect(converted.summary.outputs.map(\.type.shape) == [[2, 4, 5]])
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("seg-\(UUID().uuidString).mlmodel")
    defer { try? FileManager.default.removeItem(at: url) }
    try converted.write(to: url)
    #expect(throws: VerificationError.self) {
      try ParityVerifier.verify(source: source, converted: url, options: VerificationOptions(samples: 1))
    }
  }

  /// tf2onnx writes a one-channel image's transpose to channels first as a Reshape [1, H, W, 1] ->
  /// [1, 1, H, W] (the same element order): the input is channels last all the same, declared [1, H, W, 1]
  /// (`[H, W, 1]` in a classic network), not read as an image of H channels.
  @Test func aOneChannelImageReshapedToChannelsFirstIsChannelsLast() throws {
    let weights = (0..<18).map { Float(($0 * 5) % 7) / 7 - 0.4 }
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("Reshape", name: "to_nchw", inputs: ["x", "shape"], outputs: ["x_nchw"]),
        ONNXProtos.node(
          "Conv", name: "conv", inputs: ["x_nchw", "w"], outputs: ["c"],
          attributes: [ONNXTestModels.intsAttribute("pads", [1, 1, 1, 1])]),
        ONNXProtos.node(
          "Transpose", name: "to_nhwc", inputs: ["c"], outputs: ["y"],
          attributes: [ONNXTestModels.intsAttribute("perm", [0, 2, 3, 1])]),
      ],
      inputs: [("x", [1, 4, 5, 1])], outputs: [("y", [1, 4, 5, 2])],
      initializers: [
        ONNXTestModels.int64s("shape", [4], [1, 1, 4, 5]), ONNXTestModels.floats("w", [2, 1, 3, 3], weights),
      ], opset: 13)
    let source = try ONNXFrontend.source(model, path: "gray.onnx", options: SourceOptions())
    #expect(source.graph.inputs.map { source.graph[$0].type.shape } == [[4, 5, 1]])
    let program = try Converter.convert(source, options: ConversionOptions(format: .mlProgram, precision: .float32))
    #expect(program.summary.inputs.map(\.type.shape) == [[1, 4, 5, 1]])
    let network = try Converter.convert(source, options: ConversionOptions(format: .neuralNetwork))
    #expect(network.summary.inputs.map(\.type.shape) == [[4, 5, 1]])
    try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
    try ONNXTestModels.convertAndVerify(model, format: .mlProgram)
  }
}
