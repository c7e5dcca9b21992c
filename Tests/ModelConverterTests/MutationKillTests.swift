import CoreMLFormat
import CoreMLMutations
import Foundation
import ModelConverter
import TestSupport
import Testing

/// Correct conversions of the samples and of fixtures covering every layer family, broken in the written
/// file in every way `CoreMLMutator` knows; `verify` (default options, the expected labels and image
/// preprocessing) must fail each mutation that changes what its layer computes, and name the broken layer.
/// The kill rate of each model is printed in the test output.
@Suite(.serialized) struct MutationKillTests {
  struct Case: Sendable, CustomStringConvertible {
    var path: String
    var options: ConversionOptions
    var description: String { path }
  }

  static let digits = Fixtures.packageRoot.appendingPathComponent("Samples/Digits").path
  static let cases: [Case] = [
    Case(
      path: digits + "/digits_cnn.h5",
      options: ConversionOptions(imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)),
    // MobileNet-style, trained (Samples/DigitsMobile): BatchNormalization, ReLU6, padding, depthwise and
    // separable convolutions, a residual Add, global pooling.
    Case(
      path: Fixtures.packageRoot.appendingPathComponent("Samples/DigitsMobile/digits_mobile.h5").path,
      options: ConversionOptions(
        imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 127.5, redBias: -1, greenBias: -1, blueBias: -1)),
    // A BGR image classifier (made for coremltools' golden files): the colour order is a mutation too.
    Case(
      path: Fixtures.url("coremltools/rgb_classifier.h5").path,
      options: ConversionOptions(
        imageInputNames: ["input1"], classLabels: .strings(["cat", "dog", "bird", "fish", "frog"]), imageScale: 1 / 127.5,
        redBias: -1, greenBias: -1, blueBias: -1, isBGR: true)),
    Case(path: Fixtures.url("tfkeras215/activations.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("tfkeras215/batchnorm.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("tfkeras215/conv_variants.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("tfkeras215/depthwise_separable.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("tfkeras215/pooling.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("tfkeras215/merge.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("tfkeras215/reshape_ops.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("layers/tfkeras215/lstm_variants.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("layers/tfkeras215/gru_reset_before.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("layers/tfkeras215/text_bilstm.h5").path, options: ConversionOptions()),
    Case(path: Fixtures.url("layers/tfkeras215/conv2d_transpose.h5").path, options: ConversionOptions()),
  ]

  /// Kinds each case produced, to check that together they exercise every kind.
  static func outcomes(_ c: Case) throws -> [MutationCampaign.Outcome] {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    return try MutationCampaign.run(source: URL(fileURLWithPath: c.path), conversion: c.options, directory: directory)
  }

  @Test(arguments: cases)
  func everyMutationIsKilledAndTheBrokenLayerNamed(_ c: Case) throws {
    let outcomes = try Self.outcomes(c)
    print("mutation \(MutationCampaign.summary(outcomes)): \(c.path.split(separator: "/").suffix(2).joined(separator: "/"))")
    #expect(outcomes.contains { $0.verdict == .killed })
    for outcome in outcomes where outcome.verdict != .killed && outcome.verdict != .equivalent {
      Issue.record("\(c): \(outcome.mutation) (effect \(outcome.effect)) \(outcome.verdict.rawValue) \(outcome.named)")
    }
  }

  @Test func theCasesExerciseEveryKindOfMutation() throws {
    var kinds = Set<CoreMLMutation.Kind>()
    for c in Self.cases {
      let bytes = try KerasConverter.convert(modelAt: URL(fileURLWithPath: c.path), options: c.options).bytes
      kinds.formUnion(try CoreMLMutator.mutations(of: bytes).map(\.kind))
    }
    #expect(kinds == Set(CoreMLMutation.Kind.allCases), "missing: \(Set(CoreMLMutation.Kind.allCases).subtracting(kinds))")
  }
}
