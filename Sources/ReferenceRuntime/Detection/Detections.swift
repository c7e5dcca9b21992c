/// One object a detector found: its class (the argmax of its confidences), that confidence and its box
/// (centre and size, normalized to the input image, as Vision reports bounding boxes).
public struct Detection: Sendable, Equatable {
  public var classIndex: Int
  public var confidence: Double
  public var box: NonMaximumSuppression.Box

  public init(classIndex: Int, confidence: Double, box: NonMaximumSuppression.Box) {
    self.classIndex = classIndex
    self.confidence = confidence
    self.box = box
  }

  /// A raw detector output decoded (`DetectorDecoding`) and suppressed (`NonMaximumSuppression`).
  public static func detections(
    output: [Float], shape: [Int], decoding: DetectorDecoding, width: Int, height: Int,
    suppression: NonMaximumSuppression
  ) throws -> [Detection] {
    let decoded = try decoding.decode(output, shape: shape, width: width, height: height)
    return try detections(
      confidence: decoded.confidence, coordinates: decoded.coordinates, classes: decoded.classes,
      suppression: suppression)
  }

  /// Decoded confidences (boxes x `classes`) and coordinates (boxes x 4) suppressed; the threshold
  /// inputs, when given, replace the suppression's thresholds.
  public static func detections(
    confidence: [Double], coordinates: [Double], classes: Int, suppression: NonMaximumSuppression,
    iouThreshold: Double? = nil, confidenceThreshold: Double? = nil
  ) throws -> [Detection] {
    let kept = try suppression.run(
      confidence: confidence, coordinates: coordinates, classes: classes, iouThreshold: iouThreshold,
      confidenceThreshold: confidenceThreshold)
    // Padding rows (no input box) are no detections.
    return kept.indices.indices.compactMap { row in
      guard kept.indices[row] != nil else { return nil }
      let (confidence, box) = (kept.confidence[row], kept.coordinates[row])
      let best = NonMaximumSuppression.label(of: confidence)
      return Detection(
        classIndex: best, confidence: confidence[best], box: .init(x: box[0], y: box[1], width: box[2], height: box[3]))
    }
  }
}

/// How two lists of detections of the same image agree. Each expected detection, most confident first,
/// is paired with the unpaired actual detection of the same class that overlaps it most, when that
/// overlap reaches `minimumIoU`; an expected detection left without one is missing, an actual one left
/// over is extra. A missing or extra detection whose confidence is below `borderline` (the confidence
/// threshold plus the precision's tolerance: a box the rounding of a lower precision may push across the
/// threshold, or whose suppression by a neighbour it may flip) is counted apart, not as a mismatch.
public struct DetectionAgreement: Sendable, Equatable {
  public var expectedCount: Int
  public var actualCount: Int
  public var paired: Int
  /// Missing and extra detections at or above the borderline.
  public var missing: Int
  public var extra: Int
  /// Missing and extra detections below it.
  public var borderline: Int
  /// The lowest IoU of a pair (1 when there are none).
  public var worstIoU: Double
  /// The largest confidence difference of a pair.
  public var largestConfidenceDifference: Double

  public var mismatches: Int { missing + extra }

  public init(expected: [Detection], actual: [Detection], minimumIoU: Double, borderline limit: Double = 0) {
    expectedCount = expected.count
    actualCount = actual.count
    (paired, missing, extra, self.borderline) = (0, 0, 0, 0)
    worstIoU = 1
    largestConfidenceDifference = 0
    var unpaired = Set(actual.indices)
    for detection in expected.sorted(by: { $0.confidence > $1.confidence }) {
      let candidates = unpaired.filter { actual[$0].classIndex == detection.classIndex }
      let best = candidates.max {
        let (a, b) = (
          NonMaximumSuppression.iou(detection.box, actual[$0].box),
          NonMaximumSuppression.iou(detection.box, actual[$1].box)
        )
        return a < b || (a == b && $0 > $1)
      }
      guard let best, NonMaximumSuppression.iou(detection.box, actual[best].box) >= minimumIoU else {
        if detection.confidence < limit { self.borderline += 1 } else { missing += 1 }
        continue
      }
      unpaired.remove(best)
      paired += 1
      worstIoU = min(worstIoU, NonMaximumSuppression.iou(detection.box, actual[best].box))
      largestConfidenceDifference = max(
        largestConfidenceDifference, abs(detection.confidence - actual[best].confidence))
    }
    for index in unpaired {
      if actual[index].confidence < limit { self.borderline += 1 } else { extra += 1 }
    }
  }

  /// No mismatch (every detection at or above the borderline paired, by `minimumIoU`, with the same
  /// class), and the pairs' confidences within `confidenceTolerance`.
  public func agrees(confidenceTolerance: Double) -> Bool {
    mismatches == 0 && largestConfidenceDifference <= confidenceTolerance
  }
}
