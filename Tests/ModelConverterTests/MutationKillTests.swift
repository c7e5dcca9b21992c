import CoreMLCommon
import CoreMLFormat
import CoreMLMutations
import CoreMLTestSupport
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
    /// The share of killed mutations whose own layer verify names; the others it names at the next layer it
    /// compares. 1 for Keras sources; an ONNX source's values that the passes move to the other layout (an
    /// activation or pad between two convolutions computed channels last) are compared at the next
    /// convolution, pooling or normalization, so a broken one is named there.
    var namedShare: Double = 1
    /// With compressed weights: mutations whose effect (the largest change at the mutated blob, relative
    /// to its largest value) is below this may survive, being within what the bit width's rounding moves a
    /// tensor (at 8 bits, 16 steps: a relative RMS error of 0.031).
    var survivingEffect: Float = 0
    var description: String { path }
  }

  static let digits = Fixtures.packageRoot.appendingPathComponent("Samples/Digits").path
  static let cases: [Case] = [
    Case(
      path: digits + "/digits_cnn.h5",
      options: ConversionOptions(imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    ),
    // MobileNet-style, trained (Samples/DigitsMobile): BatchNormalization, ReLU6, padding, depthwise and
    // separable convolutions, a residual Add, global pooling.
    Case(
      path: Fixtures.packageRoot.appendingPathComponent("Samples/DigitsMobile/digits_mobile.h5").path,
      options: ConversionOptions(
        imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 127.5, redBias: -1,
        greenBias: -1, blueBias: -1)),
    // Compressed weights (8-bit lookup tables, every kernel of 16 elements or more): verify compares each
    // layer from the source's values before it, under the written bit width's bound, so a broken layer is
    // still named at its own tensor however much the rounding of the layers before it adds up.
    Case(
      path: Fixtures.packageRoot.appendingPathComponent("Samples/DigitsMobile/digits_mobile.h5").path,
      options: compressed(.palettize(bits: 8)), survivingEffect: 0.1),
    // A BGR image classifier (made for coremltools' golden files): the colour order is a mutation too.
    Case(
      path: Fixtures.url("coremltools/rgb_classifier.h5").path,
      options: ConversionOptions(
        imageInputNames: ["input1"], classLabels: .strings(["cat", "dog", "bird", "fish", "frog"]),
        imageScale: 1 / 127.5,
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
    // ONNX sources: PyTorch's channels-first exports and a tf2onnx export (layers compared by ONNX value names).
    Case(path: Fixtures.url("onnx/tiny_cnn.onnx").path, options: ConversionOptions(), namedShare: 0.85),
    Case(path: Fixtures.url("onnx/convnext_block.onnx").path, options: ConversionOptions(), namedShare: 0.45),
    Case(path: Fixtures.url("onnx/tf2onnx/depthwise_separable.onnx").path, options: ConversionOptions()),
    // A transformer, written as a rank-N network (weighted batchedMatMul layers, layer norms, attention):
    // every mutation is killed; the projections inside the attention blocks feed values verify does not
    // pair (reshaped and transposed per head), so most are named at the next compared tensor.
    Case(path: Fixtures.url("onnx/tiny_vit.onnx").path, options: ConversionOptions(), namedShare: 0.25),
  ]

  static func compressed(_ method: WeightCompression.Method) -> ConversionOptions {
    var options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 127.5, redBias: -1,
      greenBias: -1, blueBias: -1)
    options.compression = WeightCompression(method: method, minimumElements: 16)
    return options
  }

  /// Kinds each case produced, to check that together they exercise every kind.
  static func outcomes(_ c: Case) throws -> [MutationCampaign.Outcome] {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    return try MutationCampaign.run(source: URL(fileURLWithPath: c.path), conversion: c.options, directory: directory)
  }

  @Test(arguments: cases)
  func everyMutationIsKilledAndTheBrokenLayerNamed(_ c: Case) throws {
    let outcomes = try Self.outcomes(c)
    print(
      "mutation \(MutationCampaign.summary(outcomes)): \(c.path.split(separator: "/").suffix(2).joined(separator: "/"))"
    )
    #expect(outcomes.contains { $0.verdict == .killed })
    let allowed: Set<MutationCampaign.Verdict> =
      c.namedShare < 1 ? [.killed, .killedElsewhere, .equivalent] : [.killed, .equivalent]
    for outcome in outcomes
    where !allowed.contains(outcome.verdict) && !(outcome.verdict == .survived && outcome.effect < c.survivingEffect) {
      Issue.record("\(c): \(outcome.mutation) (effect \(outcome.effect)) \(outcome.verdict.rawValue) \(outcome.named)")
    }
    let killed = outcomes.filter { $0.verdict == .killed || $0.verdict == .killedElsewhere }
    let named = Double(outcomes.filter { $0.verdict == .killed }.count) / Double(max(1, killed.count))
    #expect(named >= c.namedShare, "\(c): the broken layer named for \(named) of the killed mutations")
  }

  @Test func theCasesExerciseEveryKindOfMutation() throws {
    var kinds = Set<CoreMLMutation.Kind>()
    for c in Self.cases {
      let bytes = try Converter.convert(modelAt: URL(fileURLWithPath: c.path), options: c.options).bytes
      kinds.formUnion(try CoreMLMutator.mutations(of: bytes).map(\.kind))
    }
    #expect(
      kinds == Set(CoreMLMutation.Kind.allCases), "missing: \(Set(CoreMLMutation.Kind.allCases).subtracting(kinds))")
  }
}
