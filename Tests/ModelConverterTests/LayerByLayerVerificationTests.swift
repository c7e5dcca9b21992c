import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import TestSupport
import Testing

@testable import ModelIR

/// `verify` compares every tensor both models compute, names the first layer where they part, checks the
/// image preprocessing it is given and derives its tolerances from the weight precision. The digits sample
/// and its reference outputs come from real Keras (`Samples/Digits`).
@Suite struct LayerByLayerVerificationTests {
  static let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5")
  static let trained = ImagePreprocessing(scale: 1 / 255)

  static func options(grayBias: Float = 0, scale: Float = 1 / 255, precision: WeightPrecision = .float32)
    -> ConversionOptions
  {
    var options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: scale, grayBias: grayBias)
    options.precision = precision
    return options
  }

  static func verify(_ bytes: [UInt8], options: VerificationOptions = VerificationOptions(samples: 4)) throws
    -> ParityReport
  {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("digits.mlmodel")
    try Data(bytes).write(to: url)
    return try ParityVerifier.verify(source: source, converted: url, options: options)
  }

  /// The converted graph with the first node that `change` accepts changed, written again.
  static func tampered(precision: WeightPrecision = .float32, _ change: (inout Node) -> Bool) throws -> [UInt8] {
    let model = try KerasConverter.convert(modelAt: source, options: options(precision: precision))
    var graph = model.graph
    _ = try #require(graph.nodes.indices.first { change(&graph.nodes[$0]) }, "no node to tamper with")
    return try CoreMLWriter.serialize(graph, options: model.writerOptions)
  }

  /// Swaps a convolution kernel's height and width axes, as a converter mixing up HWIO and WHIO would.
  static func transposeKernel(_ node: inout Node, named name: String) -> Bool {
    guard node.name == name, case .convolution2D(var conv) = node.operation else { return false }
    let (k, inner) = (conv.kernelHeight, conv.kernel.shape[2] * conv.kernel.shape[3])
    var values = conv.kernel.values
    for y in 0..<k {
      for x in 0..<k {
        for i in 0..<inner { values[(y * k + x) * inner + i] = conv.kernel.values[(x * k + y) * inner + i] }
      }
    }
    conv.kernel = Constant(shape: conv.kernel.shape, values: values)
    node.operation = .convolution2D(conv)
    return true
  }

  @Test func correctConversionComparesEveryLayerIncludingTheLogits() throws {
    let report = try Self.verify(KerasConverter.convert(modelAt: Self.source, options: Self.options()).bytes)
    #expect(report.passed)
    #expect(report.firstMismatch == nil)
    let layers = Set(report.layers.map(\.sourceLayer))
    #expect(layers.isSuperset(of: ["input1", "conv1", "pool1", "conv2", "flatten", "dense", "probabilities"]))
    // The Dense's own output (the logits) and the softmax after it are both compared.
    let probabilities = report.layers.filter { $0.sourceLayer == "probabilities" }
    #expect(probabilities.count == 2)
    #expect(probabilities.contains { $0.convertedType == "innerProduct" })
    #expect(probabilities.contains { $0.convertedType.contains("softmax") })
    #expect(report.layers.first?.sourceType == "input")
  }

  @Test func transposedKernelIsNamedAsTheFirstMismatch() throws {
    let bytes = try Self.tampered { Self.transposeKernel(&$0, named: "conv2") }
    let report = try Self.verify(bytes)
    #expect(!report.passed)
    let first = try #require(report.firstMismatch)
    #expect(first.sourceLayer == "conv2")
    #expect(first.sourceType == "Conv2D")
    #expect(first.convertedType == "convolution")
    // Everything before it still agrees.
    let index = try #require(report.layers.firstIndex(of: first))
    #expect(report.layers[..<index].allSatisfy { $0.passed })
    #expect(report.layers[..<index].contains { $0.sourceLayer == "conv1" })
  }

  @Test func changedLogitsFailEvenWhenTheSoftmaxHidesThem() throws {
    // Adding the same amount to every logit leaves the softmax unchanged: the probabilities agree, the
    // logits do not, and a converter that shifted them would still be wrong about the layer.
    let bytes = try Self.tampered { node in
      guard node.name == "probabilities", case .dense(var dense) = node.operation, var bias = dense.bias else {
        return false
      }
      bias.values = bias.values.map { $0 + 3 }
      dense.bias = bias
      node.operation = .dense(dense)
      return true
    }
    let report = try Self.verify(bytes)
    #expect(report.outputs.allSatisfy { $0.passed })
    #expect(!report.passed)
    #expect(report.firstMismatch?.sourceLayer == "probabilities")
    #expect(report.firstMismatch?.convertedType == "innerProduct")
  }

  @Test func wrongImageBiasFailsWhenTheTrainedPreprocessingIsGiven() throws {
    let bytes = try KerasConverter.convert(modelAt: Self.source, options: Self.options(grayBias: -0.25)).bytes
    let unchecked = try Self.verify(bytes)
    #expect(unchecked.passed)
    #expect(unchecked.preprocessing.first?.checked == false)
    #expect(unchecked.preprocessing.first?.summary == "network input = 0.00392157 x pixel + -0.25, GRAYSCALE")

    let checked = try Self.verify(bytes, options: VerificationOptions(samples: 4, expectedPreprocessing: Self.trained))
    #expect(!checked.passed)
    #expect(checked.preprocessing.first?.passed == false)
    #expect(checked.preprocessing.first?.expectedSummary == "network input = 0.00392157 x pixel + 0, GRAYSCALE")
    #expect(checked.firstMismatch?.sourceType == "input")
    #expect(checked.firstMismatch?.convertedType == "imageScaler")
  }

  @Test(arguments: [Float(1), 2 / 255, 255])
  func wrongImageScaleFailsWhenTheTrainedPreprocessingIsGiven(_ scale: Float) throws {
    let bytes = try KerasConverter.convert(modelAt: Self.source, options: Self.options(scale: scale)).bytes
    let report = try Self.verify(bytes, options: VerificationOptions(samples: 2, expectedPreprocessing: Self.trained))
    #expect(!report.passed)
    #expect(report.preprocessing.first?.passed == false)
    let right = try KerasConverter.convert(modelAt: Self.source, options: Self.options()).bytes
    #expect(
      try Self.verify(right, options: VerificationOptions(samples: 2, expectedPreprocessing: Self.trained)).passed)
  }

  @Test func missingOrInvertedScaleIsWarnedAboutWhenUnchecked() throws {
    let none = try Self.verify(
      KerasConverter.convert(modelAt: Self.source, options: Self.options(scale: 1)).bytes,
      options: VerificationOptions(samples: 1))
    #expect(none.preprocessing.first?.warnings.contains { $0.contains("no image scale") } == true)
    let inverted = try Self.verify(
      KerasConverter.convert(modelAt: Self.source, options: Self.options(scale: 255)).bytes,
      options: VerificationOptions(samples: 1))
    #expect(inverted.preprocessing.first?.warnings.contains { $0.contains("beyond the pixel range") } == true)
    let right = try Self.verify(
      KerasConverter.convert(modelAt: Self.source, options: Self.options()).bytes,
      options: VerificationOptions(samples: 1))
    #expect(right.preprocessing.first?.warnings == [])
  }

  @Test func swappedColorOrderFailsWhenTheTrainedOrderIsGiven() throws {
    let golden = Fixtures.url("coremltools")
    let source = golden.appendingPathComponent("rgb_classifier.h5")
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let trained = ImagePreprocessing(scale: 1 / 127.5, redBias: -1, greenBias: -1, blueBias: -1, isBGR: true)
    func verify(bgr: Bool) throws -> ParityReport {
      let url = directory.appendingPathComponent("rgb-\(bgr).mlmodel")
      var options = ConversionOptions(
        imageInputNames: ["input1"], classLabels: .strings(["cat", "dog", "bird", "fish", "frog"]))
      options.imageScale = trained.scale
      (options.redBias, options.greenBias, options.blueBias, options.isBGR) = (-1, -1, -1, bgr)
      try KerasConverter.convert(modelAt: source, options: options).write(to: url)
      return try ParityVerifier.verify(
        source: source, converted: url, options: VerificationOptions(samples: 2, expectedPreprocessing: trained))
    }
    #expect(try verify(bgr: true).passed)
    let wrong = try verify(bgr: false)
    #expect(!wrong.passed)
    #expect(wrong.preprocessing.first?.colorSpace == "RGB")
    #expect(wrong.preprocessing.first?.expectedSummary?.hasSuffix("BGR") == true)
  }

  @Test func float16WeightsPassWithTheirOwnToleranceAndStillCatchABrokenKernel() throws {
    let right = try Self.verify(
      KerasConverter.convert(modelAt: Self.source, options: Self.options(precision: .float16)).bytes)
    #expect(right.passed)
    #expect(right.toleranceBasis == .float16Weights)
    #expect(right.maximumRelativeRMSError == Float(64) / 2048)
    // The float32 element rule is too strict for rounded weights: the defaults are what make it pass.
    let strict = try Self.verify(
      KerasConverter.convert(modelAt: Self.source, options: Self.options(precision: .float16)).bytes,
      options: VerificationOptions(samples: 4, absoluteTolerance: 1e-5, relativeTolerance: 1e-3))
    #expect(!strict.passed)
    let broken = try Self.verify(try Self.tampered(precision: .float16) { Self.transposeKernel(&$0, named: "conv1") })
    #expect(!broken.passed)
    #expect(broken.firstMismatch?.sourceLayer == "conv1")
  }

  /// The trained MobileNet-style sample: its first BatchNormalization's moving statistics say what it saw
  /// in training, so a missing scale shows as activations two orders of magnitude too spread.
  @Test func batchNormalizationStatisticsExposeAMissingScale() throws {
    let folder = Fixtures.packageRoot.appendingPathComponent("Samples/DigitsMobile")
    let source = folder.appendingPathComponent("digits_mobile.h5")
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    func verify(scale: Float, bias: Float) throws -> ParityReport {
      let url = directory.appendingPathComponent("mobile-\(scale)-\(bias).mlmodel")
      let options = ConversionOptions(
        imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: scale, redBias: bias,
        greenBias: bias, blueBias: bias)
      let model = try KerasConverter.convert(modelAt: source, options: options)
      try model.write(to: url)
      return try ParityVerifier.verify(
        source: source, converted: url,
        options: VerificationOptions(samples: 1, reference: folder.appendingPathComponent("digits_mobile.reference.h5"))
      )
    }
    let right = try verify(scale: 1 / 127.5, bias: -1)
    #expect(right.passed)
    #expect(right.preprocessing.first?.warnings == [])
    // Without a scale the Keras model itself sees other inputs than real Keras did, so the reference fails too.
    let none = try verify(scale: 1, bias: 0)
    #expect(!none.passed)
    let warnings = none.preprocessing.first?.warnings ?? []
    #expect(warnings.contains { $0.contains("first BatchNormalization ('conv1_bn')") && $0.contains("spread") })
  }
}
