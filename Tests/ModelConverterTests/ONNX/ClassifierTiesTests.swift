import Foundation
import ModelConverter
import ModelIR
import ONNXFormat
import ONNXTestSupport
import Testing

/// A classifier whose scores differ by less than the tolerance (0.5 + 10^-5 x, which a float16 program holds as
/// 0.5 for every class) has near ties at the top: the converted model's top label is one of the tied classes,
/// which agrees with the source's top-1 and top-K alike (a near tie may go either way), as BirdNET's location
/// model's sigmoid outputs near 1 do in float16.
@Suite struct ClassifierTiesTests {
  @Test func tiedTopClassesAgreeAtTopOneAndTopK() throws {
    let format = ModelFormat.mlProgram
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("Mul", name: "flatten", inputs: ["x", "k"], outputs: ["t"]),
        ONNXProtos.node("Add", name: "scores", inputs: ["t", "half"], outputs: ["y"]),
      ],
      inputs: [("x", [1, 8])], outputs: [("y", [1, 8])],
      initializers: [
        ONNXTestModels.floats("k", [8], [Float](repeating: 1e-5, count: 8)),
        ONNXTestModels.floats("half", [8], [Float](repeating: 0.5, count: 8)),
      ], opset: 13)
    let source = try ONNXFrontend.source(model, path: "m.onnx", options: SourceOptions(), constants: [:])
    var options = ConversionOptions(format: format, precision: .float16)
    options.classLabels = .strings((0..<8).map { "class\($0)" })
    let converted = try Converter.convert(source, options: options)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ties-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("m." + format.fileExtension)
    try converted.write(to: output)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 16))
    let classifier = try #require(report.classifier)
    #expect(classifier.samples == 16 && classifier.k < 8)
    #expect(classifier.top1Agreement == 1 && classifier.topKAgreement == 1, "\(classifier)")
    #expect(report.passed)
  }
}
