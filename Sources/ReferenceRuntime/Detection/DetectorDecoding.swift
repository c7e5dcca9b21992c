/// How a detector network's raw output becomes what Core ML's non-maximum suppression and Vision take:
/// `confidence` (N x classes, class probabilities) and `coordinates` (N x 4: centre x, centre y, width,
/// height, normalized to the input image, as Vision's bounding boxes are).
///
/// The layouts are those Ultralytics' exports document for their heads:
/// - `anchorsLast` (YOLOv8, YOLO11): `[4 + classes, anchors]`, rows `cx, cy, w, h` in input pixels, then
///   one probability per class (the sigmoid already applied in the exported graph);
/// - `objectness` (YOLOv5): `[anchors, 5 + classes]`, columns `cx, cy, w, h` in input pixels, an
///   objectness probability, then class probabilities conditional on an object: a class's confidence is
///   objectness times its probability.
public enum DetectorDecoding: Sendable, Equatable {
  case anchorsLast
  case objectness

  public struct Decoded: Sendable, Equatable {
    /// Anchors x classes, row-major.
    public var confidence: [Double]
    /// Anchors x 4, row-major: cx, cy, w, h divided by the input's width and height.
    public var coordinates: [Double]
    public var anchors: Int
    public var classes: Int
  }

  public enum Failure: Error, Equatable, CustomStringConvertible {
    case shape(String)

    public var description: String {
      switch self {
      case .shape(let detail): return "detector output: \(detail)"
      }
    }
  }

  /// The classes a raw output of `shape` (batch axis dropped or 1) holds in this layout.
  public func classes(inOutputOf shape: [Int]) throws -> Int {
    let dims = shape.count == 3 && shape[0] == 1 ? Array(shape.dropFirst()) : shape
    guard dims.count == 2 else { throw Failure.shape("expected [1, rows, columns], got \(shape)") }
    let per = self == .anchorsLast ? dims[0] : dims[1]
    let fixed = self == .anchorsLast ? 4 : 5
    guard per > fixed else {
      throw Failure.shape("\(shape) has no class \(self == .anchorsLast ? "rows" : "columns") after \(fixed)")
    }
    return per - fixed
  }

  /// Decodes `values` (row-major, of `shape`) for an input image of `width` x `height` pixels.
  public func decode(_ values: [Float], shape: [Int], width: Int, height: Int) throws -> Decoded {
    let classes = try classes(inOutputOf: shape)
    let dims = shape.count == 3 ? Array(shape.dropFirst()) : shape
    guard values.count == dims[0] * dims[1] else { throw Failure.shape("\(values.count) values for \(shape)") }
    guard width > 0, height > 0 else { throw Failure.shape("an input of \(width) x \(height) pixels") }
    let anchors = self == .anchorsLast ? dims[1] : dims[0]
    // Element (anchor, field) of the output, whichever axis holds anchors.
    func at(_ anchor: Int, _ field: Int) -> Double {
      Double(self == .anchorsLast ? values[field * anchors + anchor] : values[anchor * dims[1] + field])
    }
    var decoded = Decoded(confidence: [], coordinates: [], anchors: anchors, classes: classes)
    decoded.confidence.reserveCapacity(anchors * classes)
    decoded.coordinates.reserveCapacity(anchors * 4)
    let scale = [Double(width), Double(height), Double(width), Double(height)]
    for anchor in 0..<anchors {
      for field in 0..<4 { decoded.coordinates.append(at(anchor, field) / scale[field]) }
      switch self {
      case .anchorsLast:
        for c in 0..<classes { decoded.confidence.append(at(anchor, 4 + c)) }
      case .objectness:
        let object = at(anchor, 4)
        for c in 0..<classes { decoded.confidence.append(object * at(anchor, 5 + c)) }
      }
    }
    return decoded
  }
}
