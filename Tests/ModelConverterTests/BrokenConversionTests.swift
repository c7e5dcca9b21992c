import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import TestSupport
import Testing

@testable import ModelIR

/// Deliberately broken conversions make `ParityVerifier` fail, each for the reason it should; the
/// correct conversion passes. The reference outputs and pixels come from real Keras (`Samples/Digits`).
@Suite struct BrokenConversionTests {
  static let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5")
  static let reference = Fixtures.digits.appendingPathComponent("digits_cnn.reference.h5")
  static let labels = ClassLabels.integers(Array(0...9))

  static func options(labels: ClassLabels = labels, grayBias: Float = 0) -> ConversionOptions {
    ConversionOptions(imageInputNames: ["input1"], classLabels: labels, imageScale: 1 / 255, grayBias: grayBias)
  }

  /// Writes `bytes` to a temporary `.mlmodel` and verifies it against the digits model and its reference.
  static func verify(_ bytes: [UInt8], samples: Int = 8) throws -> ParityReport {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("digits.mlmodel")
    try Data(bytes).write(to: url)
    return try ParityVerifier.verify(
      source: source, converted: url, options: VerificationOptions(samples: samples, reference: reference))
  }

  /// The converted graph with one node's operation changed, written again by our writer.
  static func tampered(_ change: (inout ModelIR.Operation) -> Bool) throws -> [UInt8] {
    let model = try KerasConverter.convert(modelAt: source, options: options())
    var graph = model.graph
    #expect(graph.nodes.indices.contains { change(&graph.nodes[$0].operation) }, "no node to tamper with")
    return try CoreMLWriter.serialize(graph, options: model.writerOptions)
  }

  @Test func correctConversionPasses() throws {
    let report = try Self.verify(KerasConverter.convert(modelAt: Self.source, options: Self.options()).bytes)
    #expect(report.passed)
    #expect(report.classifier?.labelsMatch == true)
    #expect(report.classifier?.top1Agreement == 1)
  }

  @Test func swappedLabelsFail() throws {
    let swapped = ClassLabels.integers([0, 1, 2, 5, 4, 3, 6, 7, 8, 9])
    let report = try Self.verify(
      KerasConverter.convert(modelAt: Self.source, options: Self.options(labels: swapped)).bytes)
    #expect(!report.passed)
    #expect(report.classifier?.labelsMatch == false)
    // The reference holds one image of each digit, so the 3 and the 5 come out with each other's label.
    #expect((report.classifier?.top1Agreement ?? 1) < 1)
  }

  @Test func transposedKernelFails() throws {
    let bytes = try Self.tampered { operation in
      guard case .convolution2D(var conv) = operation, conv.kernelHeight == conv.kernelWidth, conv.kernelHeight > 1
      else { return false }
      // Swap the kernel's height and width axes, as a converter mixing up HWIO and WHIO would.
      let (k, inner) = (conv.kernelHeight, conv.kernel.shape[2] * conv.kernel.shape[3])
      var values = conv.kernel.values
      for y in 0..<k {
        for x in 0..<k {
          for i in 0..<inner { values[(y * k + x) * inner + i] = conv.kernel.values[(x * k + y) * inner + i] }
        }
      }
      conv.kernel = Constant(shape: conv.kernel.shape, values: values)
      operation = .convolution2D(conv)
      return true
    }
    let report = try Self.verify(bytes)
    #expect(!report.passed)
    #expect(report.outputs.contains { !$0.passed && $0.maxAbsoluteError > 1e-3 })
  }

  @Test func wrongLayerBiasFails() throws {
    let bytes = try Self.tampered { operation in
      guard case .dense(var dense) = operation, var bias = dense.bias else { return false }
      bias.values[0] += 0.25
      dense.bias = bias
      operation = .dense(dense)
      return true
    }
    let report = try Self.verify(bytes)
    #expect(!report.passed)
  }

  @Test func wrongImageBiasFailsAgainstTheReferencePixels() throws {
    let bytes = try KerasConverter.convert(modelAt: Self.source, options: Self.options(grayBias: -0.5)).bytes
    let report = try Self.verify(bytes)
    #expect(!report.passed)
    // Random inputs get the converted model's own preprocessing on both sides, so only the reference
    // pixels, preprocessed by real Keras, can expose a wrong image bias.
    let randomPassed = report.outputs.filter { $0.inputs == "random" }.allSatisfy { $0.passed }
    #expect(randomPassed)
    #expect(report.outputs.contains { $0.inputs == "reference" && $0.comparedWith == .referenceOutputs && !$0.passed })
  }

  @Test func missingBGRFlagFailsAgainstTheReferencePixels() throws {
    // The RGB golden model was trained on BGR input; converting it without --bgr feeds it RGB.
    let golden = Fixtures.url("coremltools")
    let source = golden.appendingPathComponent("rgb_classifier.h5")
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    func verify(bgr: Bool) throws -> ParityReport {
      let url = directory.appendingPathComponent("rgb-\(bgr).mlmodel")
      let options = ConversionOptions(
        imageInputNames: ["input1"], classLabels: .strings(["cat", "dog", "bird", "fish", "frog"]),
        imageScale: 1 / 127.5,
        redBias: -1, greenBias: -1, blueBias: -1, isBGR: bgr)
      try KerasConverter.convert(modelAt: source, options: options).write(to: url)
      return try ParityVerifier.verify(
        source: source, converted: url,
        options: VerificationOptions(
          samples: 2, reference: golden.appendingPathComponent("rgb_classifier.reference.h5")))
    }
    let right = try verify(bgr: true)
    let wrong = try verify(bgr: false)
    #expect(right.passed)
    #expect(!wrong.passed)
  }
}
