import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelFormats
import TestSupport
import Testing

/// Core ML files as a conversion source: models coremltools wrote from real Keras models, converted to
/// both formats and checked against the source (in our runtime) and against the outputs real Keras saved
/// for the same model (`<name>.reference.h5`).
@Suite struct CoreMLSourceTests {
  static let golden = Fixtures.url("coremltools")

  /// coremltools-written neural networks and ML Programs that the classic writer can express too.
  static let bothFormats = [
    "digits_cnn.mlmodel", "dense_classifier.mlmodel", "depthwise_separable.mlmodel", "sequential_plain.mlmodel",
    "conv2d_transpose.mlmodel", "digits_cnn_program.mlpackage", "rgb_classifier_program.mlpackage",
    "dense_classifier_program.mlpackage",
  ]
  /// ML Programs whose operations have no classic layer, or classic networks with layers only an ML Program has.
  static let programOnly = [
    "activations.mlmodel", "batchnorm.mlmodel", "layer_norm.mlmodel", "rgb_classifier.mlmodel",
    "unit_norm_program.mlpackage",
  ]

  static func convert(_ name: String, to format: ModelFormat, options: ConversionOptions = ConversionOptions()) throws
    -> (URL, URL)
  {
    let source = golden.appendingPathComponent(name)
    var options = options
    options.format = format
    if options.precision == nil { options.precision = .float32 }
    let model = try Converter.convert(modelAt: source, options: options)
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("converted." + format.fileExtension)
    try model.write(to: output)
    return (source, output)
  }

  @Test(arguments: bothFormats.flatMap { name in [ModelFormat.neuralNetwork, .mlProgram].map { (name, $0) } })
  func convertsAndMatchesSourceAndKeras(_ name: String, _ format: ModelFormat) throws {
    let (source, output) = try Self.convert(name, to: format)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(name) -> \(format): \(report.firstMismatch.map { "\($0)" } ?? "") \(report.outputs)")
    #expect(!report.layers.isEmpty)

    // The interface stays: inputs (image size and colour space), labels, predicted feature name.
    let (before, after) = (try CoreMLSpecReader.read(contentsOf: source), try CoreMLSpecReader.read(contentsOf: output))
    #expect(after.inputs.map(\.name) == before.inputs.map(\.name))
    for (a, b) in zip(before.inputs, after.inputs) {
      if case .image = a.kind { #expect(a.kind == b.kind) }
    }
    #expect(after.stringClassLabels == before.stringClassLabels && after.int64ClassLabels == before.int64ClassLabels)
    #expect(after.predictedFeatureName == before.predictedFeatureName)
    #expect(Set(after.outputs.map(\.name)) == Set(before.outputs.map(\.name)))
    #expect(after.userDefined["modelconv.source"] == "coreml")
    #expect(
      after.modelType
        == (format == .mlProgram
          ? "mlProgram"
          : before.stringClassLabels.isEmpty && before.int64ClassLabels.isEmpty
            ? "neuralNetwork" : "neuralNetworkClassifier"))
  }

  @Test(arguments: programOnly) func programOnlyModelsConvertToPrograms(_ name: String) throws {
    let (source, output) = try Self.convert(name, to: .mlProgram)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(name): \(report.firstMismatch.map { "\($0)" } ?? "")")
  }

  /// What the classic rank-5 layers cannot express is written as a rank-N network (specification 4) that
  /// verifies; for a target older than iOS 13 it is refused, every such layer named at once.
  @Test func classicWriterRefusesWhatItCannotExpress() throws {
    let source = Self.golden.appendingPathComponent("unit_norm_program.mlpackage")
    let converted = try Converter.convert(modelAt: source, options: ConversionOptions(format: .neuralNetwork))
    #expect(converted.encoded.specificationVersion == 4)
    let output = try Fixtures.temporaryDirectory().appendingPathComponent("norm.mlmodel")
    try converted.write(to: output)
    #expect(try CoreMLSpecReader.read(contentsOf: output).exactArrayMapping)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(report.firstMismatch.map { "\($0)" } ?? "")")
    #expect {
      _ = try Converter.convert(
        modelAt: source, options: ConversionOptions(format: .neuralNetwork, target: DeploymentTarget.parse("iOS12")))
    } throws: { error in
      // coremltools wrote UnitNormalization as reduce_sum, maximum with a constant and rsqrt: the sum
      // has no classic rank-5 layer here (the constant is a loadConstant, the maximum a max layer, rsqrt a unary layer).
      guard case CoreMLWriterError.unsupportedOperation(let layer, let detail) = error else { return false }
      return layer.contains("unit_norm") && layer.contains("Sum") && detail.contains("reduce.sum")
    }
  }

  /// A classic network to an ML Program in float16 and back to a float32 network: every step verifies
  /// against the one before, and the last against the first (float16 rounding within its bound).
  @Test func neuralNetworkToProgramAndBack() throws {
    let source = Self.golden.appendingPathComponent("digits_cnn.mlmodel")
    let directory = try Fixtures.temporaryDirectory()
    let program = directory.appendingPathComponent("Digits.mlpackage")
    try Converter.convert(modelAt: source, options: ConversionOptions(format: .mlProgram)).write(to: program)
    #expect(try CoreMLSpecReader.read(contentsOf: program).usesFloat16)
    let back = directory.appendingPathComponent("Digits.mlmodel")
    try Converter.convert(modelAt: program, options: ConversionOptions(format: .neuralNetwork)).write(to: back)
    // The last model holds the float16-rounded weights in float32: against the first, float16's bound
    // (64 unit roundoffs, 64 x 2^-11) applies as the element rule.
    let float16Bound: Float = 64.0 / 2048
    for (from, to, bound) in [(source, program, nil), (program, back, nil), (source, back, float16Bound)] {
      let options = VerificationOptions(samples: 8, absoluteTolerance: bound, relativeTolerance: bound)
      let report = try ParityVerifier.verify(source: from, converted: to, options: options)
      #expect(
        report.passed,
        "\(from.lastPathComponent) -> \(to.lastPathComponent): \(report.firstMismatch.map { "\($0)" } ?? "")")
    }
    #expect(try CoreMLSpecReader.read(contentsOf: back).modelType == "neuralNetworkClassifier")
  }

  /// coremltools converted the same Keras models to both formats: our ML Program made from its neural
  /// network computes what its own ML Program computes.
  @Test(arguments: ["digits_cnn", "dense_classifier", "depthwise_separable", "rgb_classifier"])
  func programMatchesCoremltoolsOwnProgram(_ name: String) throws {
    let (_, ours) = try Self.convert(name + ".mlmodel", to: .mlProgram)
    let theirs = Self.golden.appendingPathComponent(name + "_program.mlpackage")
    let report = try ParityVerifier.verify(source: theirs, converted: ours, options: VerificationOptions(samples: 8))
    #expect(report.outputs.allSatisfy { $0.passed }, "\(name): \(report.outputs)")
    #expect((report.classifier?.top1Agreement ?? 1) == 1)
  }

  /// New labels, preprocessing and description on a model someone else made.
  @Test func optionsReplaceWhatTheSourceDeclares() throws {
    let labels = (0..<10).map { "digit \($0)" }
    let (_, output) = try Self.convert(
      "digits_cnn.mlmodel", to: .neuralNetwork,
      options: ConversionOptions(classLabels: .strings(labels), predictedFeatureName: "digit", author: "someone else"))
    let spec = try CoreMLSpecReader.read(contentsOf: output)
    #expect(spec.stringClassLabels == labels)
    #expect(spec.predictedFeatureName == "digit")
    #expect(spec.author == "someone else")
    // The image scaler of the source stays (coremltools wrote scale 1/16 for the 0-16 digit pixels).
    let source = try CoreMLSpecReader.read(contentsOf: Self.golden.appendingPathComponent("digits_cnn.mlmodel"))
    #expect(spec.preprocessing.map(\.channelScale) == source.preprocessing.map(\.channelScale))

    // A different image scale is a different model: verify against the source says so.
    let (source2, rescaled) = try Self.convert(
      "digits_cnn.mlmodel", to: .neuralNetwork, options: ConversionOptions(imageInputNames: ["image"], imageScale: 0.5))
    let report = try ParityVerifier.verify(
      source: source2, converted: rescaled, options: VerificationOptions(samples: 2))
    #expect(!report.passed)
    #expect(report.preprocessing.contains { !$0.passed })
  }

  @Test func sourcesAreFoundByContent() throws {
    let directory = try Fixtures.temporaryDirectory()
    // A Core ML model under another name is still a Core ML model.
    let renamed = directory.appendingPathComponent("model.bin")
    try FileManager.default.copyItem(at: Self.golden.appendingPathComponent("digits_cnn.mlmodel"), to: renamed)
    #expect(try FormatSniffer.kind(ofPath: renamed.path) == .coreMLModel)
    #expect(try Frontends.frontend(for: renamed).name == "coreml")
    #expect(
      try FormatSniffer.kind(ofPath: Self.golden.appendingPathComponent("digits_cnn_program.mlpackage").path)
        == .coreMLPackage)
    #expect(try Frontends.frontend(for: Fixtures.url("keras_zip/functional.keras")).name == "keras")
    #expect(try Frontends.frontend(for: Self.golden.appendingPathComponent("conv1d_classifier.h5")).name == "keras")
    let onnx = directory.appendingPathComponent("model.bin")
    try Data([0x08, 0x07, 0x12, 0x07] + Array("pytorch".utf8)).write(to: onnx)
    #expect(try Frontends.frontend(for: onnx).name == "onnx")
    let page = directory.appendingPathComponent("model.onnx")
    try Data("<!DOCTYPE html><html><body>Not Found</body></html>".utf8).write(to: page)
    #expect(throws: SourceFormatError.self) { try Frontends.frontend(for: page) }
    #expect(throws: SourceFormatError.notFound(path: "/nonexistent/model")) {
      try Frontends.frontend(for: URL(fileURLWithPath: "/nonexistent/model"))
    }
  }

  @Test func commandLineConvertsCoreML() throws {
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("Digits.mlpackage").path
    let result = try Modelconv.run(
      ["convert", Self.golden.appendingPathComponent("digits_cnn.mlmodel").path, "-o", output, "--verify"],
      readTimeout: "60")
    #expect(result.status == 0, "\(result.stderr)")
    #expect(FileManager.default.fileExists(atPath: output + "/Manifest.json"))
    let verify = try Modelconv.run(
      ["verify", Self.golden.appendingPathComponent("digits_cnn.mlmodel").path, output], readTimeout: "60")
    #expect(verify.status == 0, "\(verify.stderr)")
    // The classic writer's refusal is a bad-input exit, and leaves nothing behind.
    let refused = directory.appendingPathComponent("norm.mlmodel").path
    let failure = try Modelconv.run(
      [
        "convert", Self.golden.appendingPathComponent("unit_norm_program.mlpackage").path, "--target", "iOS12", "-o",
        refused,
      ], readTimeout: "60")
    #expect(failure.status == 65, "\(failure.stderr)")
    #expect(!FileManager.default.fileExists(atPath: refused))
  }

  /// Options that only mean something for Keras files are refused for a Core ML source, naming the file: a
  /// shape for an input of one size (a flexible input takes the sizes it declares).
  @Test func kerasOnlyOptionsAreRefused() throws {
    let source = Self.golden.appendingPathComponent("digits_cnn.mlmodel")
    var options = ConversionOptions(inputShapes: ["image": [1, 8, 8, 1]])
    #expect(
      throws: ConversionError.notApplicable(
        path: source.path, option: "a shape for input 'image'",
        format: "a Core ML model input of one size (a model declares its own; only a flexible input takes another)")
    ) {
      try Converter.convert(modelAt: source, options: options)
    }
    options = ConversionOptions()
    options.architecture = URL(fileURLWithPath: "model.json")
    #expect(throws: ConversionError.self) { try Converter.convert(modelAt: source, options: options) }
  }
}
