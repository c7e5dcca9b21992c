import Foundation
import ReferenceRuntime

/// How average precision is computed from a class's ranked detections.
public enum AveragePrecisionMethod: String, Sendable, Equatable, Codable, CaseIterable {
  /// As the COCO evaluation (pycocotools' `COCOeval`, bounding boxes): per image and class the
  /// detections, most confident first, each take the unmatched ground-truth box they overlap most at
  /// IoU >= the threshold; per class the precision envelope read at the 101 recalls 0, 0.01, ..., 1
  /// (0 past the highest recall reached) and averaged. At most `cocoMaximumDetections` per image and
  /// class are counted.
  case coco
  /// As Ultralytics' (8.4) `DetectionValidator` and `ap_per_class`: per image the detections, in the
  /// order suppression returns them, each take the unclaimed box of their class they overlap most, at
  /// IoU >= the threshold (every detection counted); per class the precision envelope interpolated
  /// linearly at 101 recalls and integrated by the trapezoid rule (so a perfect detector scores 0.995
  /// at IoU 0.5, as Ultralytics reports).
  case ultralytics
}

/// One labelled object of an image: its class and box (centre, size, normalized to the image).
public struct LabelledObject: Sendable, Equatable {
  public var classIndex: Int
  public var box: NonMaximumSuppression.Box

  public init(classIndex: Int, box: NonMaximumSuppression.Box) {
    self.classIndex = classIndex
    self.box = box
  }
}

/// Average precision per class at the IoU thresholds 0.50, 0.55, ..., 0.95, and their means, as
/// object detection benchmarks report it: mAP@0.5 is the mean over classes at IoU 0.5, mAP@0.5:0.95
/// the mean over classes and the ten thresholds. Classes without a labelled object in any image are
/// left out of the means (both methods).
public struct MeanAveragePrecision: Sendable, Equatable, Codable {
  public struct ClassResult: Sendable, Equatable, Codable {
    public var classIndex: Int
    /// Labelled objects of the class.
    public var instances: Int
    /// Detections of the class.
    public var detections: Int
    /// AP at each of `iouThresholds`.
    public var averagePrecisions: [Double]
    /// Matched detections over detections, and matched objects over objects, at IoU 0.5 (every
    /// detection counted, at whatever confidence it was returned).
    public var precision: Double?
    public var recall: Double?

    public var ap50: Double { averagePrecisions.first ?? 0 }
    public var ap50to95: Double { averagePrecisions.isEmpty ? 0 : averagePrecisions.reduce(0, +) / 10 }
  }

  public static let iouThresholds = (0..<10).map { 0.5 + 0.05 * Double($0) }
  /// pycocotools' `maxDets` for the reported AP.
  public static let cocoMaximumDetections = 100

  public var method: AveragePrecisionMethod
  /// Every class with objects or detections, by index.
  public var classes: [ClassResult]
  /// Means over the classes that have labelled objects (0 when none has).
  public var map50: Double
  public var map50to95: Double

  /// The metrics of `images`, each its labelled objects and the detector's detections.
  public init(
    images: [(objects: [LabelledObject], detections: [Detection])], method: AveragePrecisionMethod
  ) {
    self.method = method
    let thresholds = Self.iouThresholds
    // Per detection: its class, confidence and, per threshold, whether it matched.
    var scored: [Int: [(confidence: Double, matched: [Bool], order: Int)]] = [:]
    var instances: [Int: Int] = [:]
    var order = 0
    for image in images {
      for object in image.objects { instances[object.classIndex, default: 0] += 1 }
      let matches: [[Bool]]
      let kept: [Detection]
      switch method {
      case .coco:
        kept = Self.cocoKept(image.detections)
        matches = Self.cocoMatches(objects: image.objects, detections: kept, thresholds: thresholds)
      case .ultralytics:
        kept = image.detections
        matches = Self.ultralyticsMatches(objects: image.objects, detections: kept, thresholds: thresholds)
      }
      for (detection, matched) in zip(kept, matches) {
        scored[detection.classIndex, default: []].append((detection.confidence, matched, order))
        order += 1
      }
    }
    var results: [ClassResult] = []
    for classIndex in Set(scored.keys).union(instances.keys).sorted() {
      let count = instances[classIndex] ?? 0
      // Most confident first; ties keep the order detections were listed (a stable sort, as
      // pycocotools' mergesort).
      let ranked = (scored[classIndex] ?? []).sorted {
        $0.confidence > $1.confidence || ($0.confidence == $1.confidence && $0.order < $1.order)
      }
      var precisions: [Double] = []
      for t in thresholds.indices {
        let hits = ranked.map { $0.matched[t] }
        precisions.append(
          count == 0 || ranked.isEmpty
            ? 0
            : method == .coco
              ? Self.cocoAveragePrecision(hits: hits, objects: count)
              : Self.ultralyticsAveragePrecision(hits: hits, objects: count))
      }
      let hits50 = ranked.filter { $0.matched[0] }.count
      results.append(
        ClassResult(
          classIndex: classIndex, instances: count, detections: ranked.count, averagePrecisions: precisions,
          precision: ranked.isEmpty ? nil : Double(hits50) / Double(ranked.count),
          recall: count == 0 ? nil : Double(hits50) / Double(count)))
    }
    classes = results
    let labelled = results.filter { $0.instances > 0 }
    let n = Double(max(labelled.count, 1))
    map50 = labelled.map(\.ap50).reduce(0, +) / n
    map50to95 = labelled.map(\.ap50to95).reduce(0, +) / n
  }

  /// numpy's `linspace(0, 1, 101)`, which both evaluations read the curve at: `i * 0.01`, the last exactly 1.
  static let recallLevels = (0...100).map { $0 == 100 ? 1 : Double($0) * 0.01 }

  // MARK: COCO

  /// The detections pycocotools counts: per class, the most confident `cocoMaximumDetections`.
  static func cocoKept(_ detections: [Detection]) -> [Detection] {
    let byClass = Dictionary(grouping: detections.indices, by: { detections[$0].classIndex })
    var kept: [Int] = []
    for (_, indices) in byClass {
      let ranked = indices.sorted {
        detections[$0].confidence > detections[$1].confidence
          || (detections[$0].confidence == detections[$1].confidence && $0 < $1)
      }
      kept += ranked.prefix(cocoMaximumDetections)
    }
    return kept.sorted().map { detections[$0] }
  }

  /// pycocotools' `evaluateImg`: per class, detections most confident first each take the still
  /// unmatched object they overlap most, among those at IoU >= the threshold.
  static func cocoMatches(objects: [LabelledObject], detections: [Detection], thresholds: [Double]) -> [[Bool]] {
    var matched = [[Bool]](repeating: [Bool](repeating: false, count: thresholds.count), count: detections.count)
    let order = detections.indices.sorted {
      detections[$0].confidence > detections[$1].confidence
        || (detections[$0].confidence == detections[$1].confidence && $0 < $1)
    }
    for (t, threshold) in thresholds.enumerated() {
      var taken = [Bool](repeating: false, count: objects.count)
      for d in order {
        var best = -1
        var bestIoU = min(threshold, 1 - 1e-10)
        for (g, object) in objects.enumerated() where !taken[g] && object.classIndex == detections[d].classIndex {
          let iou = NonMaximumSuppression.iou(detections[d].box, object.box)
          if iou >= bestIoU {
            bestIoU = iou
            best = g
          }
        }
        if best >= 0 {
          taken[best] = true
          matched[d][t] = true
        }
      }
    }
    return matched
  }

  /// pycocotools' `accumulate`: the precision envelope at recalls 0, 0.01, ..., 1, averaged.
  static func cocoAveragePrecision(hits: [Bool], objects: Int) -> Double {
    var tp = 0
    var recall: [Double] = []
    var precision: [Double] = []
    for (i, hit) in hits.enumerated() {
      if hit { tp += 1 }
      recall.append(Double(tp) / Double(objects))
      // pycocotools adds numpy's spacing(1) to the denominator.
      precision.append(Double(tp) / (Double(i + 1) + 0x1p-52))
    }
    for i in stride(from: precision.count - 1, to: 0, by: -1) { precision[i - 1] = max(precision[i - 1], precision[i]) }
    var sum = 0.0
    for level in recallLevels {
      // The first rank whose recall reaches the level (searchsorted, side left).
      var low = 0
      var high = recall.count
      while low < high {
        let middle = (low + high) / 2
        if recall[middle] < level { low = middle + 1 } else { high = middle }
      }
      if low < precision.count { sum += precision[low] }
    }
    return sum / 101
  }

  // MARK: Ultralytics

  /// `DetectionValidator.match_predictions` (Ultralytics 8.4): detections in the order listed (most
  /// confident first, as suppression returns them) each take, per threshold, the unclaimed object of
  /// their class they overlap most (the first of equals), when that overlap reaches the threshold.
  static func ultralyticsMatches(objects: [LabelledObject], detections: [Detection], thresholds: [Double])
    -> [[Bool]]
  {
    var matched = [[Bool]](repeating: [Bool](repeating: false, count: thresholds.count), count: detections.count)
    guard !objects.isEmpty else { return matched }
    var claimed = [[Bool]](repeating: [Bool](repeating: false, count: objects.count), count: thresholds.count)
    for (d, detection) in detections.enumerated() {
      let ious = objects.map {
        $0.classIndex == detection.classIndex ? NonMaximumSuppression.iou(detection.box, $0.box) : 0
      }
      for (t, threshold) in thresholds.enumerated() {
        var best = 0
        var bestIoU = -1.0
        for g in objects.indices {
          let available = claimed[t][g] ? 0 : ious[g]
          if available > bestIoU {
            best = g
            bestIoU = available
          }
        }
        if bestIoU >= threshold {
          claimed[t][best] = true
          matched[d][t] = true
        }
      }
    }
    return matched
  }

  /// `ap_per_class` and `compute_ap` (Ultralytics 8.4): recall and precision per rank, the envelope
  /// from the right, interpolated at 101 recalls and integrated by the trapezoid rule.
  static func ultralyticsAveragePrecision(hits: [Bool], objects: Int) -> Double {
    var recall: [Double] = [0]
    var precision: [Double] = [1]
    var tp = 0.0
    for (i, hit) in hits.enumerated() {
      if hit { tp += 1 }
      recall.append(tp / (Double(objects) + 1e-16))
      precision.append(tp / Double(i + 1))
    }
    // Ultralytics 8.4's sentinels: the curve drops to 0 at the last recall reached, then runs to recall 1.
    recall += [recall[recall.count - 1], 1]
    precision += [0, 0]
    for i in stride(from: precision.count - 1, to: 0, by: -1) { precision[i - 1] = max(precision[i - 1], precision[i]) }
    let points = recallLevels
    let values = points.map { interpolate($0, recall, precision) }
    var area = 0.0
    for i in 0..<(points.count - 1) { area += (points[i + 1] - points[i]) * (values[i] + values[i + 1]) / 2 }
    return area
  }

  /// numpy's `interp`: linear between the last point at or left of `x` and the next, the end values
  /// outside (`xs` nondecreasing).
  static func interpolate(_ x: Double, _ xs: [Double], _ ys: [Double]) -> Double {
    guard let first = xs.first, x >= first else { return ys.first ?? 0 }
    var low = 0
    var high = xs.count
    // The first index with xs > x.
    while low < high {
      let middle = (low + high) / 2
      if xs[middle] <= x { low = middle + 1 } else { high = middle }
    }
    let j = low - 1
    guard j < xs.count - 1 else { return ys[xs.count - 1] }
    return ys[j] + (x - xs[j]) * (ys[j + 1] - ys[j]) / (xs[j + 1] - xs[j])
  }
}
