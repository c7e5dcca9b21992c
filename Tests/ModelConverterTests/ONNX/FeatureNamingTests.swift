import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ONNXFormat
import ONNXTestSupport
import Testing

/// Feature names an ML Program cannot hold, as exporters write them (paddle2onnx's `sigmoid_0.tmp_0`,
/// PyTorch's `input.1` and `1`), are renamed as coremltools' sanitizer does (issue 35): characters outside
/// `[A-Za-z0-9_@]` become `_`, a leading digit gets `_`, a name taken gets `_1`; names that fit are kept;
/// a classic network, whose feature names are free, keeps every name.
@Suite struct FeatureNamingTests {
  static func model() throws -> ONNXModel {
    try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("Sigmoid", name: "s", inputs: ["input.1"], outputs: ["sigmoid_0.tmp_0"]),
        ONNXProtos.node("Relu", name: "r", inputs: ["input.1"], outputs: ["1"]),
        ONNXProtos.node("Neg", name: "n", inputs: ["input.1"], outputs: ["sigmoid_0_tmp_0"]),
      ],
      inputs: [("input.1", [1, 4])],
      outputs: [("sigmoid_0.tmp_0", [1, 4]), ("1", [1, 4]), ("sigmoid_0_tmp_0", [1, 4])])
  }

  @Test func namesAnMLProgramCannotHoldAreRenamed() throws {
    let source = try ONNXFrontend.source(try Self.model(), path: "names.onnx", options: SourceOptions())
    let converted = try Converter.convert(source, options: ConversionOptions(format: .mlProgram, precision: .float32))
    #expect(converted.summary.inputs.map(\.name) == ["input_1"])
    // The third output's own name fits and is kept; the first, sanitized alike, is numbered.
    #expect(converted.summary.outputs.map(\.name) == ["sigmoid_0_tmp_0_1", "_1", "sigmoid_0_tmp_0"])
    #expect(
      converted.summary.renamed == [
        FeatureRename(kind: "input", from: "input.1", to: "input_1"),
        FeatureRename(kind: "output", from: "sigmoid_0.tmp_0", to: "sigmoid_0_tmp_0_1"),
        FeatureRename(kind: "output", from: "1", to: "_1"),
      ])
    #expect(converted.summary.notes?.contains { $0.contains("'input.1'") && $0.contains("'input_1'") } == true)
    // The written program computes what the source does, output by output.
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("names-\(UUID().uuidString).mlpackage")
    defer { try? FileManager.default.removeItem(at: url) }
    try converted.write(to: url)
    let report = try ParityVerifier.verify(source: source, converted: url, options: VerificationOptions(samples: 2))
    #expect(report.passed, "\(report.violations)")
  }

  @Test func aClassicNetworkKeepsEveryName() throws {
    let source = try ONNXFrontend.source(try Self.model(), path: "names.onnx", options: SourceOptions())
    let converted = try Converter.convert(source, options: ConversionOptions(format: .neuralNetwork))
    #expect(converted.summary.inputs.map(\.name) == ["input.1"])
    #expect(converted.summary.outputs.map(\.name) == ["sigmoid_0.tmp_0", "1", "sigmoid_0_tmp_0"])
    #expect(converted.summary.renamed == nil)
  }

  @Test func namesGivenThatFitAreKept() throws {
    var options = SourceOptions()
    options.outputNames = ["probability", "mask", "negated"]
    let source = try ONNXFrontend.source(try Self.model(), path: "names.onnx", options: options)
    let converted = try Converter.convert(source, options: ConversionOptions(format: .mlProgram, precision: .float32))
    #expect(converted.summary.outputs.map(\.name) == ["probability", "mask", "negated"])
    #expect(converted.summary.renamed == [FeatureRename(kind: "input", from: "input.1", to: "input_1")])
  }
}
