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
    let kept = try suppression.run(
      confidence: decoded.confidence, coordinates: decoded.coordinates, classes: decoded.classes)
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

/// How two lists of detections of the same image agree: each of `expected` paired with the unpaired
/// detection of `actual` that overlaps it most, in `expected`'s order.
public struct DetectionAgreement: Sendable, Equatable {
  public var expectedCount: Int
  public var actualCount: Int
  /// Pairs whose boxes overlap with IoU below `minimumIoU`, or whose classes differ.
  public var mismatches: Int
  /// The lowest IoU of a pair (1 when there are none).
  public var worstIoU: Double
  /// The largest confidence difference of a pair.
  public var largestConfidenceDifference: Double

  /// Pairs the two lists greedily (each expected detection, most confident first, takes the unpaired
  /// actual one of highest IoU).
  public init(expected: [Detection], actual: [Detection], minimumIoU: Double) {
    expectedCount = expected.count
    actualCount = actual.count
    mismatches = 0
    worstIoU = 1
    largestConfidenceDifference = 0
    var unpaired = Set(actual.indices)
    for detection in expected.sorted(by: { $0.confidence > $1.confidence }) {
      let best = unpaired.max {
        NonMaximumSuppression.iou(detection.box, actual[$0].box)
          < NonMaximumSuppression.iou(detection.box, actual[$1].box)
      }
      guard let best else { break }
      unpaired.remove(best)
      let iou = NonMaximumSuppression.iou(detection.box, actual[best].box)
      worstIoU = min(worstIoU, iou)
      largestConfidenceDifference = max(
        largestConfidenceDifference, abs(detection.confidence - actual[best].confidence))
      if iou < minimumIoU || detection.classIndex != actual[best].classIndex { mismatches += 1 }
    }
  }

  /// The same number of detections, every pair overlapping by `minimumIoU` with the same class, and
  /// confidences within `confidenceTolerance`.
  public func agrees(confidenceTolerance: Double) -> Bool {
    expectedCount == actualCount && mismatches == 0 && largestConfidenceDifference <= confidenceTolerance
  }
}
