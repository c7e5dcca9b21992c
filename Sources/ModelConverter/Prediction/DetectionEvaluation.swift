import Dispatch
import Foundation
import ImageFormat
import ReferenceRuntime

/// How `DetectionEvaluation.run` scores a detector.
public struct DetectionEvaluationOptions: Sendable, Equatable {
  /// The suppression's thresholds for the evaluation (nil: Ultralytics' validation settings, IoU 0.7
  /// and confidence 0.001, so the precision-recall curve is read to low confidences).
  public var iouThreshold: Double?
  public var confidenceThreshold: Double?
  public var method: AveragePrecisionMethod
  /// Photos run at once; 0 means every core.
  public var threads: Int

  /// Ultralytics' `val` defaults.
  public static let validationIoUThreshold = 0.7
  public static let validationConfidenceThreshold = 0.001

  public init(
    iouThreshold: Double? = nil, confidenceThreshold: Double? = nil, method: AveragePrecisionMethod = .coco,
    threads: Int = 0
  ) {
    self.iouThreshold = iouThreshold
    self.confidenceThreshold = confidenceThreshold
    self.method = method
    self.threads = threads
  }
}

/// mAP of a detector on a labelled dataset, and optionally its agreement with a second detector.
public struct DetectionEvaluationReport: Sendable, Equatable, Codable {
  public struct ClassRow: Sendable, Equatable, Codable {
    public var label: String
    public var classIndex: Int
    public var instances: Int
    public var detections: Int
    public var precision: Double?
    public var recall: Double?
    public var ap50: Double
    public var ap50to95: Double
  }

  public struct ModelResult: Sendable, Equatable, Codable {
    public var path: String
    public var kind: String
    public var map50: Double
    public var map50to95: Double
    /// Classes with labelled objects or detections.
    public var classes: [ClassRow]
  }

  /// Detections of the two models paired per photo (same class, IoU >= `Agreement.minimumIoU`).
  public struct Agreement: Sendable, Equatable, Codable {
    public static let minimumIoU = 0.98
    public var paired: Int
    /// Detections of the second model (`against`) the first lacks, and of the first the second lacks.
    public var missing: Int
    public var extra: Int
    public var worstIoU: Double
    public var largestConfidenceDifference: Double
    /// Photos whose detections do not all pair.
    public var photosDiffering: [String]
  }

  public var folder: String
  public var method: AveragePrecisionMethod
  public var iouThreshold: Double
  public var confidenceThreshold: Double
  /// Photos run (readable ones) and the labelled objects on them.
  public var evaluated: Int
  public var instances: Int
  public var model: ModelResult
  public var other: ModelResult?
  public var agreement: Agreement?
  public var unreadable: [String: String]
  public var skippedFiles: [String]
  public var duplicateLabelLines: Int
  public var imagesPerSecond: Double
  public var threads: Int
}

/// Runs detectors over a labelled dataset.
public enum DetectionEvaluation {
  public static func run(
    _ detector: ObjectDetector, on dataset: DetectionDataset, against other: ObjectDetector? = nil,
    options: DetectionEvaluationOptions = DetectionEvaluationOptions(), progress: Evaluation.Progress? = nil
  ) throws -> DetectionEvaluationReport {
    let iou = options.iouThreshold ?? DetectionEvaluationOptions.validationIoUThreshold
    let confidence = options.confidenceThreshold ?? DetectionEvaluationOptions.validationConfidenceThreshold
    let threads = max(
      1, min(options.threads > 0 ? options.threads : ProcessInfo.processInfo.activeProcessorCount, dataset.items.count))
    let urls = dataset.items.map { dataset.images.appendingPathComponent($0.path) }
    let results = SlotBox<Result<([DetectedObject], [DetectedObject]?), Error>>(count: urls.count)
    let start = ContinuousClock.now
    DispatchQueue.concurrentPerform(iterations: threads) { worker in
      var index = worker
      while index < urls.count {
        let result = Result<([DetectedObject], [DetectedObject]?), Error> {
          let photo = try ImageFile.read(contentsOf: urls[index])
          let mine = try detector.detect(photo, iouThreshold: iou, confidenceThreshold: confidence)
          let theirs = try other?.detect(photo, iouThreshold: iou, confidenceThreshold: confidence)
          return (mine, theirs)
        }
        let done = results.set(index, result)
        progress?(done, urls.count)
        index += threads
      }
    }
    let seconds = max((ContinuousClock.now - start).seconds, 1e-9)
    var unreadable: [String: String] = [:]
    var mine: [(objects: [LabelledObject], detections: [Detection])] = []
    var theirs: [(objects: [LabelledObject], detections: [Detection])] = []
    var pairing = (paired: 0, missing: 0, extra: 0, worst: 1.0, confidence: 0.0)
    var differing: [String] = []
    for (item, result) in zip(dataset.items, results.values) {
      switch result {
      case .some(.failure(let error)):
        unreadable[item.path] = "\(error)"
      case .some(.success(let (found, otherFound))):
        let detections = found.map(Detection.init)
        mine.append((item.objects, detections))
        if let otherFound {
          let expected = otherFound.map(Detection.init)
          theirs.append((item.objects, expected))
          let agreement = DetectionAgreement(
            expected: expected, actual: detections, minimumIoU: DetectionEvaluationReport.Agreement.minimumIoU)
          pairing.paired += agreement.paired
          pairing.missing += agreement.missing
          pairing.extra += agreement.extra
          pairing.worst = min(pairing.worst, agreement.worstIoU)
          pairing.confidence = max(pairing.confidence, agreement.largestConfidenceDifference)
          if agreement.mismatches > 0 { differing.append(item.path) }
        }
      case .none:
        unreadable[item.path] = "not run"
      }
    }
    func result(_ detector: ObjectDetector, _ images: [(objects: [LabelledObject], detections: [Detection])])
      -> DetectionEvaluationReport.ModelResult
    {
      let metrics = MeanAveragePrecision(images: images, method: options.method)
      return .init(
        path: detector.path, kind: detector.kind, map50: metrics.map50, map50to95: metrics.map50to95,
        classes: metrics.classes.map {
          .init(
            label: $0.classIndex < detector.labels.count ? detector.labels[$0.classIndex] : String($0.classIndex),
            classIndex: $0.classIndex, instances: $0.instances, detections: $0.detections, precision: $0.precision,
            recall: $0.recall, ap50: $0.ap50, ap50to95: $0.ap50to95)
        })
    }
    return DetectionEvaluationReport(
      folder: dataset.images.deletingLastPathComponent().path, method: options.method, iouThreshold: iou,
      confidenceThreshold: confidence, evaluated: mine.count, instances: mine.reduce(0) { $0 + $1.objects.count },
      model: result(detector, mine), other: other.map { result($0, theirs) },
      agreement: other == nil
        ? nil
        : .init(
          paired: pairing.paired, missing: pairing.missing, extra: pairing.extra, worstIoU: pairing.worst,
          largestConfidenceDifference: pairing.confidence, photosDiffering: differing),
      unreadable: unreadable, skippedFiles: dataset.skipped, duplicateLabelLines: dataset.duplicateLines,
      imagesPerSecond: Double(urls.count) / seconds, threads: threads)
  }
}

extension Detection {
  /// A detection found in a photo, in the photo's normalized coordinates.
  init(_ object: DetectedObject) {
    self.init(
      classIndex: object.classIndex, confidence: object.confidence,
      box: .init(x: object.box[0], y: object.box[1], width: object.box[2], height: object.box[3]))
  }
}
