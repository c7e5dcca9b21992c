import CoreMLFormat
import CoreMLTestSupport
import Foundation
import TestSupport
import Testing

@testable import ModelConverter

/// The interface check of `verify` (issue 35, part 6): a converted model must present the inputs and
/// outputs its source declares, by name, in order, of the same kinds, equally optional. The expected
/// interfaces here are what Core ML's model description documents (FeatureTypes.proto: image, array,
/// dictionary features, `isOptional`), and renames are coremltools' identifier rule for ML Programs.
@Suite struct InterfaceParityTests {
  static let image = InterfaceFeature(name: "image", kind: .image, shape: [28, 28], detail: "GRAYSCALE")
  static let state = InterfaceFeature(name: "h_in", kind: .array, shape: [100], detail: "double", isOptional: true)
  static let probabilities = InterfaceFeature(name: "probs", kind: .dictionary, detail: "string")
  static let label = InterfaceFeature(name: "classLabel", kind: .string)
  static let coreML = SourceInterface(inputs: [image, state], outputs: [probabilities, label], declaresKinds: true)

  static func check(
    _ source: SourceInterface, inputs: [InterfaceFeature], outputs: [InterfaceFeature],
    format: ModelFormat = .neuralNetwork, label: String = "classLabel"
  ) -> InterfaceParity {
    InterfaceParity.check(source: source, inputs: inputs, outputs: outputs, format: format, predictedFeatureName: label)
  }

  @Test func theSameInterfacePasses() {
    let result = Self.check(Self.coreML, inputs: [Self.image, Self.state], outputs: [Self.probabilities, Self.label])
    #expect(result.passed, "\(result.differences)")
    #expect(result.kindsChecked)
  }

  @Test func aDroppedOptionalInputFails() {
    let result = Self.check(Self.coreML, inputs: [Self.image], outputs: [Self.probabilities, Self.label])
    #expect(!result.passed)
    #expect(result.differences == ["input 'h_in' (array double [100] (optional)) is missing"])
  }

  @Test func anInputNoLongerOptionalFails() {
    var required = Self.state
    required.isOptional = false
    let result = Self.check(Self.coreML, inputs: [Self.image, required], outputs: [Self.probabilities, Self.label])
    #expect(result.differences == ["input 'h_in' is optional in the source, required in the model"])
  }

  @Test func anImageThatBecameAnArrayFails() {
    let array = InterfaceFeature(name: "image", kind: .array, shape: [1, 28, 28, 1], detail: "float32")
    let result = Self.check(Self.coreML, inputs: [array, Self.state], outputs: [Self.probabilities, Self.label])
    #expect(result.differences.count == 1)
    #expect(
      result.differences.first?.contains(
        "is an image 28x28 GRAYSCALE in the source, an array float32 [1, 28, 28, 1] in the model") == true)
  }

  @Test func anotherColourSpaceOrSizeFails() {
    var rgb = Self.image
    rgb.detail = "RGB"
    #expect(!Self.check(Self.coreML, inputs: [rgb, Self.state], outputs: [Self.probabilities, Self.label]).passed)
    var larger = Self.image
    larger.shape = [32, 28]
    #expect(!Self.check(Self.coreML, inputs: [larger, Self.state], outputs: [Self.probabilities, Self.label]).passed)
  }

  @Test func swappedOutputsFail() {
    let result = Self.check(Self.coreML, inputs: [Self.image, Self.state], outputs: [Self.label, Self.probabilities])
    #expect(
      result.differences == [
        "the outputs are in another order: probs, classLabel in the source, classLabel, probs in the model"
      ])
  }

  @Test func anotherArrayElementTypeIsANoteNotAFailure() {
    var float = Self.state
    float.detail = "float32"
    let result = Self.check(Self.coreML, inputs: [Self.image, float], outputs: [Self.probabilities, Self.label])
    #expect(result.passed)
    #expect(result.notes.count == 1)
  }

  /// ML Program feature names must be identifiers: `sigmoid_0.tmp_0` is expected as `sigmoid_0_tmp_0`
  /// (coremltools' sanitizer), and only so.
  @Test func namesAreExpectedAsAnMLProgramRenamesThem() {
    let source = SourceInterface(
      inputs: [InterfaceFeature(name: "x", kind: .array, shape: [1, 4])],
      outputs: [InterfaceFeature(name: "sigmoid_0.tmp_0", kind: .array, shape: [1, 4])], declaresKinds: false)
    let renamed = [InterfaceFeature(name: "sigmoid_0_tmp_0", kind: .array, shape: [1, 4], detail: "float32")]
    let x = [InterfaceFeature(name: "x", kind: .array, shape: [1, 4], detail: "float32")]
    #expect(Self.check(source, inputs: x, outputs: renamed, format: .mlProgram, label: "").passed)
    // A classic network keeps every name: the renamed output is another interface there.
    let classic = Self.check(source, inputs: x, outputs: renamed, format: .neuralNetwork, label: "")
    #expect(!classic.passed)
    #expect(classic.differences.contains("output 'sigmoid_0.tmp_0' (declared by the source) is missing"))
  }

  /// A source that declares no kinds (Keras, ONNX): image inputs and a classifier's label output come
  /// from the conversion's options, names and order from the source.
  @Test func aSourceWithoutKindsChecksNamesAndOrder() {
    let source = SourceInterface(
      inputs: [InterfaceFeature(name: "input1", kind: .array, shape: [28, 28, 1])],
      outputs: [InterfaceFeature(name: "output1", kind: .array, shape: [10])], declaresKinds: false)
    let image = InterfaceFeature(name: "input1", kind: .image, shape: [28, 28], detail: "GRAYSCALE")
    let probabilities = InterfaceFeature(name: "output1", kind: .dictionary, detail: "string")
    let passed = Self.check(source, inputs: [image], outputs: [probabilities, Self.label])
    #expect(passed.passed, "\(passed.differences)")
    #expect(!passed.kindsChecked)
    let renamed = Self.check(
      source, inputs: [InterfaceFeature(name: "image", kind: .image, shape: [28, 28], detail: "GRAYSCALE")],
      outputs: [probabilities, Self.label])
    #expect(
      renamed.differences == [
        "input 'input1' (declared by the source) is missing",
        "the model has input 'image' (image 28x28 GRAYSCALE), which the source does not declare",
      ])
  }

  /// End to end: a Keras model converted with new names passes `verify` only when verify is told them.
  @Test func verifyChecksTheNamesConvertGave() throws {
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("Digits.mlmodel")
    let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5")
    var options = ConversionOptions(format: .neuralNetwork)
    (options.inputNames, options.outputNames) = (["pixels"], ["scores"])
    try Converter.convert(modelAt: source, options: options).write(to: output)
    let unnamed = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 1))
    #expect(!unnamed.passed)
    #expect(unnamed.interface?.differences.contains("input 'input1' (declared by the source) is missing") == true)
    var named = VerificationOptions(samples: 1)
    (named.inputNames, named.outputNames) = (["pixels"], ["scores"])
    let report = try ParityVerifier.verify(source: source, converted: output, options: named)
    #expect(report.passed)
    #expect(report.interface?.passed == true)
  }
}
