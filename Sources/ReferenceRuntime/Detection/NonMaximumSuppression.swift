/// Core ML's `NonMaximumSuppression` model, with the semantics `NonMaximumSuppression.proto` documents
/// (Apple's specification, as vendored in coremltools), for running a detector pipeline's last stage.
///
/// Inputs: `confidence`, `N x C` (each row the confidences of the C classes at one box, non-negative),
/// and `coordinates`, `N x 4` (centre x, centre y, width, height). The algorithm (PickTop):
/// 1. boxes whose confidence is below the confidence threshold are discarded;
/// 2. the rest are taken in descending order of confidence; each is kept unless it is within the IoU
///    radius of a box already kept (with `perClass`, only a kept box of the same label counts);
/// 3. the kept boxes are output in that order, their rows unchanged, truncated to the output's maximum
///    and padded with zero rows to its minimum (a fixed output shape is both).
///
/// Where the documentation leaves a choice, this takes the reading consistent with the rest of it:
/// - a box's confidence is its highest class confidence and its label the argmax (the first class on a
///   tie), as `perClass` defines the label;
/// - "below the threshold" is strictly below: a box exactly at the confidence threshold is kept;
/// - a box is suppressed when its IoU with a kept box is above the IoU threshold (strictly): the
///   documentation says a threshold of 1.0 means no suppression, which only a strict test gives for
///   identical boxes (its sentence "within the radius ... if their IOU score is less than this value"
///   contradicts that and every detector's use, and is not followed);
/// - boxes of equal confidence keep their input order;
/// - two boxes whose union has no area (degenerate boxes) have IoU 0.
public struct NonMaximumSuppression: Sendable, Equatable {
  public var iouThreshold: Double
  public var confidenceThreshold: Double
  /// Suppress only among boxes of the same label (`PickTop.perClass`); otherwise across all classes.
  public var perClass: Bool
  /// The fewest rows of the outputs (padding with zero rows) and the most (nil: no limit).
  public var minimumBoxes: Int
  public var maximumBoxes: Int?

  public init(
    iouThreshold: Double, confidenceThreshold: Double, perClass: Bool, minimumBoxes: Int = 0, maximumBoxes: Int? = nil
  ) {
    self.iouThreshold = iouThreshold
    self.confidenceThreshold = confidenceThreshold
    self.perClass = perClass
    self.minimumBoxes = minimumBoxes
    self.maximumBoxes = maximumBoxes
  }

  /// An axis-aligned box by its centre and size, as the coordinates input holds it.
  public struct Box: Sendable, Equatable {
    public var x: Double
    public var y: Double
    public var width: Double
    public var height: Double

    public init(x: Double, y: Double, width: Double, height: Double) {
      self.x = x
      self.y = y
      self.width = width
      self.height = height
    }

    var area: Double { max(width, 0) * max(height, 0) }
  }

  /// The suppression's outputs: the kept rows (confidence and coordinates) in output order, padded,
  /// and which input box each row is (nil for padding).
  public struct Result: Sendable, Equatable {
    public var confidence: [[Double]]
    public var coordinates: [[Double]]
    public var indices: [Int?]
  }

  public enum Failure: Error, Equatable, CustomStringConvertible {
    /// The inputs do not have N x C and N x 4 values, or a confidence is negative or not a number.
    case invalidInput(String)

    public var description: String {
      switch self {
      case .invalidInput(let detail): return "non-maximum suppression: \(detail)"
      }
    }
  }

  /// A box's label: the class of its highest confidence, the first such class on a tie.
  public static func label(of row: [Double]) -> Int {
    var best = 0
    for (offset, value) in row.enumerated() where value > row[best] { best = offset }
    return best
  }

  /// Intersection over union of two boxes (0 when the union has no area).
  public static func iou(_ a: Box, _ b: Box) -> Double {
    let width = min(a.x + a.width / 2, b.x + b.width / 2) - max(a.x - a.width / 2, b.x - b.width / 2)
    let height = min(a.y + a.height / 2, b.y + b.height / 2) - max(a.y - a.height / 2, b.y - b.height / 2)
    let intersection = max(width, 0) * max(height, 0)
    let union = a.area + b.area - intersection
    return union > 0 ? intersection / union : 0
  }

  /// Runs the suppression on `confidence` (N x C) and `coordinates` (N x 4), each row-major; the
  /// threshold inputs of the model, when given, replace the stored thresholds.
  public func run(
    confidence: [Double], coordinates: [Double], classes: Int, iouThreshold given: Double? = nil,
    confidenceThreshold givenConfidence: Double? = nil
  ) throws -> Result {
    guard classes > 0, confidence.count % classes == 0 else {
      throw Failure.invalidInput("\(confidence.count) confidences are not rows of \(classes) classes")
    }
    let count = confidence.count / classes
    guard coordinates.count == count * 4 else {
      throw Failure.invalidInput("\(coordinates.count) coordinates for \(count) boxes (4 each)")
    }
    if let bad = confidence.first(where: { !($0 >= 0) }) {
      throw Failure.invalidInput("confidence \(bad): confidences must be non-negative numbers")
    }
    let iouLimit = given ?? iouThreshold
    let floor = givenConfidence ?? confidenceThreshold
    func row(_ i: Int) -> ArraySlice<Double> { confidence[(i * classes)..<((i + 1) * classes)] }
    func box(_ i: Int) -> Box {
      Box(
        x: coordinates[4 * i], y: coordinates[4 * i + 1], width: coordinates[4 * i + 2], height: coordinates[4 * i + 3])
    }
    // The score and label of each box: the highest confidence, the first class that has it.
    let labels = (0..<count).map { Self.label(of: Array(row($0))) }
    let scores = (0..<count).map { confidence[$0 * classes + labels[$0]] }
    let candidates = (0..<count).filter { scores[$0] >= floor }.sorted {
      scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1)
    }
    var kept: [Int] = []
    for i in candidates {
      if let maximumBoxes, kept.count >= maximumBoxes { break }
      let suppressed = kept.contains { k in (!perClass || labels[k] == labels[i]) && Self.iou(box(k), box(i)) > iouLimit
      }
      if !suppressed { kept.append(i) }
    }
    var result = Result(
      confidence: kept.map { Array(row($0)) }, coordinates: kept.map { i in (0..<4).map { coordinates[4 * i + $0] } },
      indices: kept)
    while result.indices.count < minimumBoxes {
      result.confidence.append([Double](repeating: 0, count: classes))
      result.coordinates.append([0, 0, 0, 0])
      result.indices.append(nil)
    }
    return result
  }
}
