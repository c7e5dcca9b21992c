import CoreMLCommon
import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelFormats
import ONNXFormat
import ONNXTestSupport
import Testing

/// Values beyond float16's range are found when converting, not left for `verify` to find in the written
/// ML Program (issue 34): such a program computes in float32 by default, and a float16 program asked for
/// is written with a note naming the layer. Expected numbers come from the float32 arithmetic itself:
/// x in [-1, 1] times 1000 twice reaches 10^6, far beyond 65 504. (An ONNX layer is named by its output.)
@Suite struct Float16AtConvertTimeTests {
  static func source(_ nodes: [[UInt8]], initializers: [[UInt8]]) throws -> ImportedSource {
    let model = try ONNXTestModels.model(
      nodes: nodes, inputs: [("x", [1, 4])], outputs: [("y", [1, 4])], initializers: initializers, opset: 13)
    return try ONNXFrontend.source(model, path: "m.onnx", options: SourceOptions(), constants: [:])
  }

  static func convertAndVerify(_ source: ImportedSource, precision: WeightPrecision?) throws -> (
    ConvertedModel, ParityReport
  ) {
    var options = ConversionOptions(format: .mlProgram)
    options.precision = precision
    let converted = try Converter.convert(source, options: options)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("f16-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("m.mlpackage")
    try converted.write(to: output)
    return (
      converted, try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 3))
    )
  }

  @Test func valuesBeyondFloat16MakeTheProgramFloat32() throws {
    let source = try Self.source(
      [
        ONNXProtos.node("Mul", name: "grow", inputs: ["x", "k"], outputs: ["t"]),
        ONNXProtos.node("Mul", name: "more", inputs: ["t", "k"], outputs: ["y"]),
      ],
      initializers: [ONNXTestModels.floats("k", [4], [1000, 1000, 1000, 1000])])
    let (byDefault, report) = try Self.convertAndVerify(source, precision: nil)
    #expect(byDefault.writerOptions.precision == .float32)
    #expect(
      byDefault.precisionNotes.contains { $0.contains("'y'") && $0.contains("computes in float32") },
      "\(byDefault.precisionNotes)")
    #expect(byDefault.precisionNotes.count == 1, "one note for the one layer: \(byDefault.precisionNotes)")
    #expect(
      !byDefault.precisionNotes.contains { $0.contains("'t'") },
      "1000 x [-1, 1] stays within float16: \(byDefault.precisionNotes)")
    #expect(report.passed)
    // Asked for, float16 is kept, with a warning.
    let (forced, _) = try Self.convertAndVerify(source, precision: .float16)
    #expect(forced.writerOptions.precision == .float16)
    #expect(
      forced.precisionNotes.contains { $0.contains("'y'") && $0.contains("may overflow") }, "\(forced.precisionNotes)")
  }

  @Test func aWeightBeyondFloat16MakesTheProgramFloat32() throws {
    let source = try Self.source(
      [ONNXProtos.node("Add", name: "shift", inputs: ["x", "b"], outputs: ["y"])],
      initializers: [ONNXTestModels.floats("b", [4], [1.05e7, 0, 0, 0])])
    let (converted, report) = try Self.convertAndVerify(source, precision: nil)
    #expect(converted.writerOptions.precision == .float32)
    #expect(converted.precisionNotes.contains { $0.contains("holds a weight of") }, "\(converted.precisionNotes)")
    #expect(report.passed)
  }

  /// A folded BatchNorm scale of 1.05e7 on a channel that is always 0 (Relu(x - 2) for x in [-1, 1]), as
  /// in a real exported model: the weight float16 cannot store, every value within it. The default ML
  /// Program stays float16 with only that multiply in float32; float16 asked for refuses, naming the
  /// layer; a classic network stored in float16 keeps that layer's weights in float32. Expected values are
  /// the float32 arithmetic of the source, through verify.
  @Test func aWeightBeyondFloat16OnlyKeepsItsOperationInFloat32() throws {
    let source = try Self.source(
      [
        ONNXProtos.node("Sub", name: "shift", inputs: ["x", "b"], outputs: ["t"]),
        ONNXProtos.node("Relu", name: "dead", inputs: ["t"], outputs: ["r"]),
        ONNXProtos.node("Mul", name: "folded_bn", inputs: ["r", "k"], outputs: ["y"]),
      ],
      initializers: [
        ONNXTestModels.floats("b", [4], [2, 0, 0, 0]), ONNXTestModels.floats("k", [4], [1.05e7, 0.5, 2, 3]),
      ])
    let (mixed, report) = try Self.convertAndVerify(source, precision: nil)
    #expect(mixed.writerOptions.precision == .float16)
    #expect(
      mixed.precisionNotes.count == 1 && mixed.precisionNotes[0].contains("within the float16 program"),
      "\(mixed.precisionNotes)")
    #expect(mixed.graph.nodes.contains { if case .cast(.float32) = $0.operation { return true } else { return false } })
    #expect(report.passed, "\(report.outputs)")
    // Asked for, float16 is strict: the writer names the layer and its value.
    #expect(throws: CoreMLWriterError.self) { _ = try Self.convertAndVerify(source, precision: .float16) }
    // A classic network with float16 storage keeps the layer's weights in float32.
    var classic = ConversionOptions(format: .neuralNetwork)
    classic.precision = .float16
    let network = try Converter.convert(source, options: classic)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("f16nn-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("m.mlmodel")
    try network.write(to: output)
    let networkReport = try ParityVerifier.verify(
      source: source, converted: output, options: VerificationOptions(samples: 3))
    #expect(networkReport.passed, "\(networkReport.outputs)")
  }

  /// Values within float16's range that its rounding moves too far ((x + 1000) - 1000 for x in [-1, 1]: float16
  /// holds 1000 + x only to 0.5, so x comes back on a grid of 0.5, a relative RMS error near 0.25, where verify
  /// allows a float16 program 64 x 2^-11): the default program computes in float32 and says which layer, and
  /// verifies; float16 asked for is kept, and verify fails it (the check at conversion predicted that).
  @Test func valuesFloat16RoundsTooFarMakeTheProgramFloat32() throws {
    let source = try Self.source(
      [
        ONNXProtos.node("Add", name: "lift", inputs: ["x", "k"], outputs: ["t"]),
        ONNXProtos.node("Sub", name: "drop", inputs: ["t", "k"], outputs: ["y"]),
      ],
      initializers: [ONNXTestModels.floats("k", [4], [1000, 1000, 1000, 1000])])
    let (byDefault, report) = try Self.convertAndVerify(source, precision: nil)
    #expect(byDefault.writerOptions.precision == .float32)
    #expect(
      byDefault.precisionNotes.contains { $0.contains("'y'") && $0.contains("relative RMS") },
      "\(byDefault.precisionNotes)")
    #expect(report.passed)
    let (forced, forcedReport) = try Self.convertAndVerify(source, precision: .float16)
    #expect(forced.writerOptions.precision == .float16)
    #expect(!forcedReport.passed, "\(forcedReport.outputs)")
  }

  /// Values that overflow float32 itself (x in [-1, 1] times 3e38 twice; 9e76 is no float32) are named as
  /// such: no precision holds them, so the note says so instead of promising float32 fixes it.
  @Test func valuesBeyondFloat32AreNamed() throws {
    let source = try Self.source(
      [
        ONNXProtos.node("Mul", name: "grow", inputs: ["x", "k"], outputs: ["t"]),
        ONNXProtos.node("Mul", name: "more", inputs: ["t", "k"], outputs: ["y"]),
      ],
      initializers: [ONNXTestModels.floats("k", [4], [3e38, 3e38, 3e38, 3e38])])
    var options = ConversionOptions(format: .mlProgram)
    options.allowNonFinite = true
    let converted = try Converter.convert(source, options: options)
    #expect(
      converted.precisionNotes.contains { $0.contains("'y'") && $0.contains("infinite values") },
      "\(converted.precisionNotes)")
    // Not let through, such a source is refused in both formats: a weight of 2^112 or more makes products
    // at float32's limit, where what a device computes depends on its order of summation (the hostile
    // corpus's weights of 9e37 and 3.4e38 made files that verify then refused).
    for format in [ModelFormat.mlProgram, .neuralNetwork] {
      do {
        _ = try Converter.convert(source, options: ConversionOptions(format: format))
        Issue.record("\(format): values at float32's limit converted")
      } catch let error as ConversionError {
        #expect(error.kind == .badModel && "\(error)".contains("'t'"), "\(error)")
      }
    }
  }

  /// Options a library caller builds by hand are checked like the command line's: compression the writers
  /// cannot make and normalization counts that fit no image are usage errors, not traps.
  @Test func impossibleOptionsAreUsageErrors() throws {
    let source = try Self.source(
      [ONNXProtos.node("Mul", name: "grow", inputs: ["x", "k"], outputs: ["y"])],
      initializers: [ONNXTestModels.floats("k", [4], [1, 2, 3, 4])])
    for method in [
      WeightCompression.Method.quantize(bits: 3, mode: .symmetric), .palettize(bits: 5), .prune(fraction: 1.5),
    ] {
      var options = ConversionOptions(format: .mlProgram)
      options.compression = WeightCompression(method: method)
      #expect(throws: ConversionError.self) { try Converter.convert(source, options: options) }
      do {
        _ = try Converter.convert(source, options: options)
      } catch let error as ConversionError {
        #expect(error.kind == .usage, "\(error)")
      }
    }
  }

  @Test func modelsWithinFloat16StayFloat16() throws {
    let source = try Self.source(
      [ONNXProtos.node("Mul", name: "grow", inputs: ["x", "k"], outputs: ["y"])],
      initializers: [ONNXTestModels.floats("k", [4], [1000, 2, 3, 4])])
    let (converted, report) = try Self.convertAndVerify(source, precision: nil)
    #expect(converted.writerOptions.precision == .float16)
    #expect(converted.precisionNotes.isEmpty)
    #expect(report.passed)
  }
}
