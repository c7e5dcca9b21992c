import ReferenceRuntime
import Testing

/// Core ML's non-maximum suppression on cases worked by hand from NonMaximumSuppression.proto's
/// description (PickTop: threshold, sort, keep the top, suppress what overlaps it, repeat; pad to the
/// output's size).
@Suite struct NonMaximumSuppressionTests {
  typealias NMS = NonMaximumSuppression

  /// Boxes as (cx, cy, w, h) rows and their confidences as rows of classes.
  static func run(_ nms: NMS, _ boxes: [[Double]], _ confidence: [[Double]], iou: Double? = nil, floor: Double? = nil)
    throws -> NMS.Result
  {
    try nms.run(
      confidence: confidence.flatMap { $0 }, coordinates: boxes.flatMap { $0 }, classes: confidence.first?.count ?? 1,
      iouThreshold: iou,
      confidenceThreshold: floor)
  }

  /// A = [0, 3] x [0, 1] and B = [1, 4] x [0, 1]: intersection 2, union 3 + 3 - 2 = 4, IoU exactly 0.5.
  static let a: [Double] = [1.5, 0.5, 3, 1], b: [Double] = [2.5, 0.5, 3, 1]
  /// C = [10, 11] x [10, 11]: apart from both.
  static let c: [Double] = [10.5, 10.5, 1, 1]

  @Test func intersectionOverUnion() {
    #expect(NMS.iou(.init(x: 1.5, y: 0.5, width: 3, height: 1), .init(x: 2.5, y: 0.5, width: 3, height: 1)) == 0.5)
    #expect(NMS.iou(.init(x: 1.5, y: 0.5, width: 3, height: 1), .init(x: 10.5, y: 10.5, width: 1, height: 1)) == 0)
    // A 9 x 5 box and a 7 x 6 box overlapping in 4 x 3 = 12: union 45 + 42 - 12 = 75.
    #expect(
      NMS.iou(.init(x: 4.5, y: 2.5, width: 9, height: 5), .init(x: 8.5, y: 5, width: 7, height: 6)) == 12.0 / 75.0)
    // Degenerate boxes have no union: IoU 0.
    #expect(NMS.iou(.init(x: 1, y: 1, width: 0, height: 0), .init(x: 1, y: 1, width: 0, height: 0)) == 0)
  }

  /// The lower of two overlapping boxes goes when their IoU (0.5) is above the threshold, stays when it
  /// is not: a box exactly on the IoU threshold is kept.
  @Test func overlapAboveTheThresholdIsSuppressed() throws {
    let nms = NMS(iouThreshold: 0.45, confidenceThreshold: 0.25, perClass: false)
    #expect(try Self.run(nms, [Self.a, Self.b], [[0.9], [0.8]]).indices == [0])
    #expect(try Self.run(nms, [Self.a, Self.b], [[0.8], [0.9]]).indices == [1])
    #expect(
      try Self.run(nms, [Self.a, Self.b], [[0.9], [0.8]], iou: 0.5).indices == [0, 1], "on the threshold: kept")
    #expect(try Self.run(nms, [Self.a, Self.b], [[0.9], [0.8]], iou: 0.49).indices == [0])
  }

  /// Identical boxes have IoU 1: suppressed at any threshold below 1, all kept at 1.0 (no suppression,
  /// as the proto says of the threshold input).
  @Test func identicalBoxes() throws {
    let nms = NMS(iouThreshold: 0.45, confidenceThreshold: 0, perClass: false)
    #expect(try Self.run(nms, [Self.a, Self.a, Self.a], [[0.5], [0.7], [0.6]]).indices == [1])
    #expect(try Self.run(nms, [Self.a, Self.a, Self.a], [[0.5], [0.7], [0.6]], iou: 1).indices == [1, 2, 0])
  }

  /// Per class, boxes of different labels (argmax) never suppress each other; across classes they do.
  @Test func perClassAndAgnostic() throws {
    let boxes = [Self.a, Self.b]
    let confidence: [[Double]] = [[0.9, 0.05], [0.1, 0.8]]
    #expect(
      try Self.run(NMS(iouThreshold: 0.3, confidenceThreshold: 0.25, perClass: true), boxes, confidence).indices == [
        0, 1,
      ])
    #expect(
      try Self.run(NMS(iouThreshold: 0.3, confidenceThreshold: 0.25, perClass: false), boxes, confidence).indices == [0]
    )
    // The rows are output unchanged: every class's confidence.
    let kept = try Self.run(NMS(iouThreshold: 0.3, confidenceThreshold: 0.25, perClass: true), boxes, confidence)
    #expect(kept.confidence == confidence && kept.coordinates == boxes)
  }

  /// Confidence below the threshold is discarded before suppression (so it suppresses nothing); exactly
  /// at the threshold it stays.
  @Test func confidenceThreshold() throws {
    let nms = NMS(iouThreshold: 0.3, confidenceThreshold: 0.5, perClass: false)
    #expect(try Self.run(nms, [Self.a, Self.b, Self.c], [[0.49], [0.5], [0.2]]).indices == [1])
    #expect(try Self.run(nms, [Self.a, Self.b, Self.c], [[0.49], [0.5], [0.2]], floor: 0.1).indices == [1, 2])
  }

  /// Equal confidences keep the input order.
  @Test func tiesKeepTheInputOrder() throws {
    let nms = NMS(iouThreshold: 0.45, confidenceThreshold: 0, perClass: false)
    #expect(try Self.run(nms, [Self.c, Self.a, Self.b], [[0.6], [0.6], [0.6]]).indices == [0, 1])
  }

  /// No box over the threshold: a fixed output of 3 rows is all zeros; an unbounded one is empty.
  @Test func zeroBoxesArePadding() throws {
    let fixed = try Self.run(
      NMS(iouThreshold: 0.5, confidenceThreshold: 0.9, perClass: true, minimumBoxes: 3, maximumBoxes: 3),
      [Self.a, Self.c], [[0.1, 0.2], [0.3, 0.1]])
    #expect(
      fixed.indices == [nil, nil, nil] && fixed.confidence == [[0, 0], [0, 0], [0, 0]]
        && fixed.coordinates == [[0, 0, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0]])
    #expect(
      try Self.run(NMS(iouThreshold: 0.5, confidenceThreshold: 0.9, perClass: true), [Self.a], [[0.1, 0.2]]).indices
        .isEmpty)
  }

  /// More boxes kept than the output holds: the most confident ones, in order.
  @Test func moreBoxesThanTheMaximum() throws {
    let boxes = (0..<4).map { [Double($0) * 10 + 0.5, 0.5, 1, 1] }
    let nms = NMS(iouThreshold: 0.5, confidenceThreshold: 0, perClass: false, minimumBoxes: 0, maximumBoxes: 2)
    #expect(try Self.run(nms, boxes, [[0.3], [0.9], [0.5], [0.7]]).indices == [1, 3])
  }

  @Test func badInputsAreRefused() {
    let nms = NMS(iouThreshold: 0.5, confidenceThreshold: 0, perClass: false)
    #expect(throws: NMS.Failure.self) { try nms.run(confidence: [0.5, 0.5], coordinates: [0, 0, 1], classes: 1) }
    #expect(throws: NMS.Failure.self) { try nms.run(confidence: [-0.5], coordinates: [0, 0, 1, 1], classes: 1) }
    #expect(throws: NMS.Failure.self) { try nms.run(confidence: [.nan], coordinates: [0, 0, 1, 1], classes: 1) }
  }
}
