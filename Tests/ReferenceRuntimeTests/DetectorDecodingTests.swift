import ReferenceRuntime
import Testing

/// Detector outputs decoded by hand: Ultralytics' documented head layouts into Vision's normalized boxes.
@Suite struct DetectorDecodingTests {
  /// YOLOv8 layout, 2 classes, 3 anchors, an input of 640 x 320: rows cx, cy, w, h, p0, p1.
  @Test func anchorsLast() throws {
    let rows: [[Float]] = [
      [320, 64, 0],  // cx
      [160, 32, 320],  // cy
      [64, 640, 0],  // w
      [32, 320, 0],  // h
      [0.9, 0.1, 0],  // class 0
      [0.2, 0.7, 0],  // class 1
    ]
    let decoded = try DetectorDecoding.anchorsLast.decode(
      rows.flatMap { $0 }, shape: [1, 6, 3], width: 640, height: 320)
    #expect(decoded.anchors == 3 && decoded.classes == 2)
    #expect(decoded.coordinates == [0.5, 0.5, 0.1, 0.1, 0.1, 0.1, 1, 1, 0, 1, 0, 0])
    #expect(decoded.confidence.map { Float($0) } == [0.9, 0.2, 0.1, 0.7, 0, 0])
  }

  /// YOLOv5 layout: a class's confidence is objectness times its conditional probability
  /// (0.5 x 0.8 = 0.4, 0.5 x 0.2 = 0.1).
  @Test func objectness() throws {
    let anchors: [[Float]] = [[100, 50, 20, 10, 0.5, 0.8, 0.2], [0, 0, 0, 0, 0, 0.3, 0.7]]
    let decoded = try DetectorDecoding.objectness.decode(
      anchors.flatMap { $0 }, shape: [1, 2, 7], width: 200, height: 100)
    #expect(decoded.classes == 2 && decoded.anchors == 2)
    #expect(decoded.coordinates == [0.5, 0.5, 0.1, 0.1, 0, 0, 0, 0])
    #expect(decoded.confidence.map { Float($0) } == [0.4, 0.1, 0, 0])
  }

  @Test func shapesThatHoldNoClassesAreRefused() throws {
    #expect(throws: DetectorDecoding.Failure.self) {
      try DetectorDecoding.anchorsLast.classes(inOutputOf: [1, 4, 100])
    }
    #expect(throws: DetectorDecoding.Failure.self) { try DetectorDecoding.objectness.classes(inOutputOf: [1, 100, 5]) }
    #expect(throws: DetectorDecoding.Failure.self) {
      try DetectorDecoding.anchorsLast.decode([1, 2], shape: [1, 6, 3], width: 1, height: 1)
    }
    #expect(try DetectorDecoding.anchorsLast.classes(inOutputOf: [1, 84, 8400]) == 80)
  }
}
