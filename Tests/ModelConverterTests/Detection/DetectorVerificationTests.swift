import CoreMLFormat
import Foundation
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// `verify` of a detector pipeline: the network stage layer by layer, the pipeline's interface and
/// settings, then the final detections against the source's raw outputs decoded and suppressed.
@Suite struct DetectorVerificationTests {
  static let fixture = "onnx/exporters/ultralytics/yolov8_tiny_det_dynamic"
  /// The random head's confidences stay below 0.011: a threshold of 0.001 leaves boxes to compare.
  static let settings = DetectorOptions(confidenceThreshold: 0.001)

  static func converted(_ settings: DetectorOptions = settings, labels: ClassLabels? = nil) throws -> URL {
    var options = ConversionOptions(imageInputNames: ["images"], imageScale: 1 / 255, format: .neuralNetwork)
    options.detector = settings
    options.classLabels = labels
    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Detector.mlmodel")
    try Converter.convert(modelAt: Fixtures.url(fixture + ".onnx"), options: options).write(to: url)
    return url
  }

  static func verify(_ url: URL, settings: DetectorOptions? = settings, labels: [String]? = nil) throws -> ParityReport
  {
    var options = VerificationOptions(samples: 4, expectedLabels: labels)
    options.detector = settings
    options.reference = Fixtures.url(fixture + ".reference.h5")
    return try ParityVerifier.verify(source: Fixtures.url(fixture + ".onnx"), converted: url, options: options)
  }

  @Test func aConvertedDetectorVerifies() throws {
    let report = try Self.verify(try Self.converted())
    let detector = try #require(report.detector)
    #expect(report.passed, "\(report.interface?.differences ?? []) \(detector)")
    // 4 random samples and the reference file's 3.
    #expect(detector.samples == 7 && detector.expectedDetections > 20)
    #expect(detector.paired == detector.expectedDetections && detector.convertedDetections == detector.paired)
    #expect(detector.worstIoU >= 0.98 && detector.largestConfidenceDifference <= 1e-3)
    #expect(detector.classes == 3 && detector.columns == 3 && detector.settingsChecked)
    #expect(report.outputs.map(\.name) == ["raw_confidence", "raw_coordinates"])
    #expect(report.violations.isEmpty)
  }

  /// Settings other than those convert was given, and other labels, are interface differences.
  @Test func otherSettingsAndLabelsFail() throws {
    let url = try Self.converted()
    var other = Self.settings
    other.iouThreshold = 0.7
    other.agnostic = true
    let report = try Self.verify(url, settings: other)
    #expect(!report.passed)
    let differences = report.interface?.differences ?? []
    #expect(differences.contains("IoU threshold 0.45, expected 0.7"))
    #expect(differences.contains("suppression per class, expected across classes"))
    let labelled = try Self.verify(url, labels: ["cat", "dog", "bird"])
    #expect(
      !labelled.passed
        && (labelled.interface?.differences ?? []).contains { $0.hasPrefix("labels [\"0\", \"1\", \"2\"]") })
  }

  /// A pipeline whose suppression keeps other boxes than the settings say (here: at most 2 per image
  /// while the source's are not limited) is caught by the detections as well as by the settings.
  @Test func aSuppressionThatDropsBoxesFails() throws {
    var limited = Self.settings
    limited.maximumDetections = 2
    let report = try Self.verify(try Self.converted(limited))
    let detector = try #require(report.detector)
    #expect(!report.passed && !detector.passed && detector.missing > 0)
  }

  /// Without detector settings the file's own are used on both sides and reported as not checked.
  @Test func withoutSettingsTheFilesOwnAreUsed() throws {
    let report = try Self.verify(try Self.converted(), settings: nil)
    #expect(report.passed && report.detector?.settingsChecked == false)
  }
}
