import Foundation
import ModelConverter
import ReferenceRuntime
import TestSupport
import Testing

/// `evaluate` on a detector: mAP as pycocotools and Ultralytics' validator compute it, on the labelled
/// fixture folder (`Samples/make_map_references.py`: Ultralytics' suppression of onnxruntime's outputs, and
/// the mAP that pycocotools' COCOeval and Ultralytics 8.4.190's `match_predictions` + `ap_per_class` give for
/// exactly those detections).
@Suite struct DetectionEvaluationTests {
  struct References: Decodable {
    struct Scores: Decodable {
      struct PerClass: Decodable {
        var ap50: Double
        var ap5095: Double
        enum CodingKeys: String, CodingKey {
          case ap50 = "AP50"
          case ap5095 = "AP50-95"
        }
      }
      var map50: Double
      var map5095: Double
      var perClass: [String: PerClass]
      enum CodingKeys: String, CodingKey {
        case map50 = "mAP50"
        case map5095 = "mAP50-95"
        case perClass = "per_class"
      }
    }
    struct Run: Decodable {
      struct Image: Decodable {
        struct Found: Decodable {
          var `class`: Int
          var confidence: Double
          var cxcywhNormalized: [Double]
          enum CodingKeys: String, CodingKey {
            case `class`, confidence
            case cxcywhNormalized = "cxcywh_normalized"
          }
        }
        var image: String
        var detections: [Found]
      }
      var name: String
      var ultralytics: Scores
      var coco: Scores
      var images: [Image]
    }
    var names: [String]
    var runs: [Run]
  }

  static let folder = Fixtures.url("onnx/detectors/shapes_val")

  static func references() throws -> References {
    try JSONDecoder().decode(
      References.self, from: Data(contentsOf: folder.appendingPathComponent("map_references.json")))
  }

  static func check(
    _ metrics: MeanAveragePrecision, against scores: References.Scores, names: [String], tolerance: Double,
    _ context: String
  ) {
    #expect(abs(metrics.map50 - scores.map50) <= tolerance, "\(context): mAP50 \(metrics.map50) vs \(scores.map50)")
    #expect(
      abs(metrics.map50to95 - scores.map5095) <= tolerance,
      "\(context): mAP50-95 \(metrics.map50to95) vs \(scores.map5095)")
    for row in metrics.classes {
      guard let expected = scores.perClass[names[row.classIndex]] else {
        Issue.record("\(context): class \(row.classIndex) has no reference")
        continue
      }
      #expect(abs(row.ap50 - expected.ap50) <= tolerance, "\(context) \(names[row.classIndex]) AP50")
      #expect(abs(row.ap50to95 - expected.ap5095) <= tolerance, "\(context) \(names[row.classIndex]) AP50-95")
    }
  }

  /// The same detections and labels give the references' numbers (float32 boxes: IoUs within 1e-7 of
  /// theirs, no match at a threshold's edge here).
  @Test func computesTheReferencesMapFromTheirDetections() throws {
    let references = try Self.references()
    let dataset = try DetectionDataset(url: Self.folder, classes: 3)
    #expect(dataset.items.count == 8)
    #expect(dataset.items.reduce(0) { $0 + $1.objects.count } == 16)
    for run in references.runs {
      let images = try dataset.items.map { item -> (objects: [LabelledObject], detections: [Detection]) in
        let listed = try #require(run.images.first { $0.image == "images/" + item.path })
        return (
          item.objects,
          listed.detections.map {
            Detection(
              classIndex: $0.class, confidence: $0.confidence,
              box: .init(
                x: $0.cxcywhNormalized[0], y: $0.cxcywhNormalized[1], width: $0.cxcywhNormalized[2],
                height: $0.cxcywhNormalized[3]))
          }
        )
      }
      #expect(images.contains { $0.detections.count > 1 })
      Self.check(
        MeanAveragePrecision(images: images, method: .coco), against: run.coco, names: references.names,
        tolerance: 1e-6, "\(run.name) coco")
      Self.check(
        MeanAveragePrecision(images: images, method: .ultralytics), against: run.ultralytics,
        names: references.names, tolerance: 1e-6, "\(run.name) ultralytics")
    }
  }

  /// A converted pipeline evaluated end to end (photos read, network, suppression at the validator's
  /// thresholds, mAP) gives Ultralytics' single-label numbers, and agrees with its source network.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func aConvertedPipelineScoresAsUltralytics(format: ModelFormat) throws {
    let references = try Self.references()
    let run = try #require(references.runs.first { $0.name == "single_label" })
    var options = ConversionOptions(imageInputNames: ["images"], imageScale: 1 / 255, format: format)
    options.precision = .float32
    options.detector = DetectorOptions()
    let source = Fixtures.url("onnx/detectors/yolov8_shapes.onnx")
    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Shapes." + format.fileExtension)
    try Converter.convert(modelAt: source, options: options).write(to: url)
    let detector = try ObjectDetector.load(contentsOf: url)
    let network = try ObjectDetector.load(
      contentsOf: source,
      options: ObjectDetectorOptions(detector: DetectorOptions(), preprocessing: ImagePreprocessing(scale: 1 / 255)))
    let dataset = try DetectionDataset(url: Self.folder, classes: detector.labels.count)
    for method in AveragePrecisionMethod.allCases {
      let report = try DetectionEvaluation.run(
        detector, on: dataset, against: network, options: DetectionEvaluationOptions(method: method, threads: 2))
      #expect(report.iouThreshold == 0.7 && report.confidenceThreshold == 0.001)
      #expect(report.evaluated == 8 && report.instances == 16)
      let expected = method == .coco ? run.coco : run.ultralytics
      // Confidences within 1.1e-5 of onnxruntime's (UltralyticsDetectionTests): no ranking changes here.
      #expect(abs(report.model.map50 - expected.map50) <= 1e-6, "\(format) \(method)")
      #expect(abs(report.model.map50to95 - expected.map5095) <= 1e-6, "\(format) \(method)")
      for row in report.model.classes {
        let reference = try #require(expected.perClass[row.label])
        #expect(abs(row.ap50to95 - reference.ap5095) <= 1e-6, "\(format) \(method) \(row.label)")
      }
      let agreement = try #require(report.agreement)
      #expect(agreement.missing == 0 && agreement.extra == 0 && agreement.paired > 16)
      #expect(agreement.largestConfidenceDifference < 1e-4)
      #expect(report.other?.map50to95 == report.model.map50to95)
    }
  }
}
