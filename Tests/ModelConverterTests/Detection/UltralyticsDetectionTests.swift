import Foundation
import ImageFormat
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// Converted detectors find what Ultralytics' own postprocessing finds (`Samples/make_detector_fixtures.py`:
/// `non_max_suppression` as its predictor calls it, on onnxruntime's outputs) on the fixture images: the
/// same boxes (IoU >= 0.98), classes and confidences.
@Suite struct UltralyticsDetectionTests {
  struct Reference: Decodable {
    struct Run: Decodable {
      var name: String
      var confThres: Double
      var iouThres: Double
      var agnostic: Bool
      var multiLabel: Bool
    }
    struct Image: Decodable {
      struct Result: Decodable {
        struct Found: Decodable {
          var `class`: Int
          var confidence: Double
          var cxcywhNormalized: [Double]
        }
        var run: String
        var detections: [Found]
      }
      var image: String
      var runs: [Result]
    }
    var names: [String]
    var runs: [Run]
    var images: [Image]
  }

  static let folder = "onnx/detectors/"

  static func reference(_ model: String) throws -> Reference {
    let decoder = JSONDecoder()
    decoder.keyDecodingStrategy = .convertFromSnakeCase
    return try decoder.decode(
      Reference.self, from: Data(contentsOf: Fixtures.url(folder + model + ".detections.json")))
  }

  /// Each model with the runs checked, the format and precision.
  static let cases: [(model: String, format: ModelFormat, precision: WeightPrecision)] = [
    ("yolov8_shapes", .neuralNetwork, .float32), ("yolov8_shapes", .mlProgram, .float32),
    ("yolov8_shapes", .mlProgram, .float16),
    ("yolov8_tiny_80", .neuralNetwork, .float32), ("yolo11_tiny_3", .mlProgram, .float32),
  ]

  @Test(arguments: 0..<5)
  func detectionsEqualUltralytics(index: Int) throws {
    let (model, format, precision) = Self.cases[index]
    let reference = try Self.reference(model)
    // float16: the runs at Ultralytics' default threshold (boxes of confidence 0.001 move by up to 2% IoU,
    // the limit itself, measured on this trained detector).
    for run in reference.runs where !run.multiLabel && (precision == .float32 || run.confThres >= 0.25) {
      var options = ConversionOptions(imageInputNames: ["images"], imageScale: 1 / 255, format: format)
      options.precision = precision
      options.detector = DetectorOptions(
        iouThreshold: run.iouThres, confidenceThreshold: run.confThres, agnostic: run.agnostic)
      let url = try Fixtures.temporaryDirectory().appendingPathComponent("D." + format.fileExtension)
      try Converter.convert(modelAt: Fixtures.url(Self.folder + model + ".onnx"), options: options).write(to: url)
      let detector = try ObjectDetector.load(contentsOf: url)
      #expect(Array(detector.labels.prefix(reference.names.count)) == reference.names)
      // float32: confidences as onnxruntime's within 1e-4 (its vectorized sigmoid and float32 roundoff
      // through the network: up to 1.1e-5 measured); float16: the program's tolerance, 64 x 2^-11 (3.3e-4
      // measured).
      let tolerance = precision == .float16 ? 64.0 / 2048 : 1e-4
      for image in reference.images {
        let photo = try ImageFile.read(contentsOf: Fixtures.url(Self.folder + image.image))
        let found = try detector.detect(photo)
        let expected = try #require(image.runs.first { $0.run == run.name }).detections.map {
          Detection(
            classIndex: $0.class, confidence: $0.confidence,
            box: .init(
              x: $0.cxcywhNormalized[0], y: $0.cxcywhNormalized[1], width: $0.cxcywhNormalized[2],
              height: $0.cxcywhNormalized[3]))
        }
        let actual = found.map {
          Detection(
            classIndex: $0.classIndex, confidence: $0.confidence,
            box: .init(x: $0.box[0], y: $0.box[1], width: $0.box[2], height: $0.box[3]))
        }
        let agreement = DetectionAgreement(
          expected: expected, actual: actual, minimumIoU: 0.98,
          borderline: precision == .float16 ? run.confThres + tolerance : 0)
        #expect(
          agreement.agrees(confidenceTolerance: tolerance),
          "\(model) \(format) \(precision) \(run.name) \(image.image): \(agreement)")
        #expect(expected.count > 0)
      }
    }
  }
}
