import ModelIR
import ReferenceRuntime

/// How a detector network becomes a Core ML object detector: the network and its decoding, then Core ML's
/// non-maximum suppression (`ConversionOptions.detector`), as Vision's `VNRecognizedObjectObservation`s need.
public struct DetectorOptions: Sendable, Equatable {
  /// The raw output's layout; nil: told by its shape (`DetectorHead.decoding(forOutputShape:)`).
  public var decoding: DetectorDecoding?
  /// Boxes overlapping a kept box by more than this IoU are suppressed (the pipeline's `iouThreshold`
  /// input replaces it per prediction).
  public var iouThreshold: Double
  /// Boxes whose best class confidence is below this are dropped (`confidenceThreshold` input).
  public var confidenceThreshold: Double
  /// Suppression across classes (a box suppresses overlapping boxes of any class) instead of per class.
  public var agnostic: Bool
  /// The most detections returned; nil for no limit (Ultralytics' pipelines set none).
  public var maximumDetections: Int?
  /// Pads an ML Program detector's classes to a multiple of 80 (zero confidences, labels `unused_N`
  /// never reported), as Ultralytics does since 8.3.207: Core ML's suppression after an ML Program is
  /// reported to find nothing for other class counts (Ultralytics #22309, coremltools #2158). The
  /// classic format is not affected and never padded.
  public var padsProgramClasses: Bool

  public init(
    decoding: DetectorDecoding? = nil, iouThreshold: Double = 0.45, confidenceThreshold: Double = 0.25,
    agnostic: Bool = false, maximumDetections: Int? = nil, padsProgramClasses: Bool = true
  ) {
    self.decoding = decoding
    self.iouThreshold = iouThreshold
    self.confidenceThreshold = confidenceThreshold
    self.agnostic = agnostic
    self.maximumDetections = maximumDetections
    self.padsProgramClasses = padsProgramClasses
  }

  /// The class count padding rounds up to in an ML Program.
  public static let programClassMultiple = 80

  /// The classes written for a network of `classes` classes in `format`.
  public func writtenClasses(_ classes: Int, format: ModelFormat) -> Int {
    guard padsProgramClasses, format == .mlProgram else { return classes }
    let multiple = Self.programClassMultiple
    return (classes + multiple - 1) / multiple * multiple
  }

  /// What is wrong with these settings, or nil.
  public var problem: String? {
    guard (0...1).contains(iouThreshold) else { return "the IoU threshold must be within 0 and 1, got \(iouThreshold)" }
    guard confidenceThreshold.isFinite, confidenceThreshold >= 0 else {
      return "the confidence threshold must be a finite number of at least 0, got \(confidenceThreshold)"
    }
    if let maximum = maximumDetections, maximum < 1 { return "the most detections must be at least 1, got \(maximum)" }
    return nil
  }
}

/// Class names an exporter stored in a model's metadata: Ultralytics writes `names` as a Python dictionary
/// literal, `{0: 'person', 1: 'bicycle', ...}`.
public enum DetectorClassNames {
  /// The names in index order, or nil when `text` is not such a dictionary of indexes 0, 1, ... (in any
  /// order) to quoted strings.
  public static func parse(_ text: String) -> [String]? {
    var scalars = Array(text.unicodeScalars)[...]
    func skipSpaces() {
      while let c = scalars.first, c == " " || c == "\n" || c == "\t" || c == "\r" { scalars.removeFirst() }
    }
    func take(_ c: Unicode.Scalar) -> Bool {
      skipSpaces()
      guard scalars.first == c else { return false }
      scalars.removeFirst()
      return true
    }
    guard take("{") else { return nil }
    var names: [Int: String] = [:]
    if take("}") { return nil }
    repeat {
      skipSpaces()
      var digits = ""
      while let c = scalars.first, ("0"..."9").contains(c), digits.count < 9 {
        digits.unicodeScalars.append(c)
        scalars.removeFirst()
      }
      guard let key = Int(digits), take(":") else { return nil }
      skipSpaces()
      guard let quote = scalars.first, quote == "'" || quote == "\"" else { return nil }
      scalars.removeFirst()
      var name = String.UnicodeScalarView()
      var closed = false
      while let c = scalars.popFirst() {
        if c == quote {
          closed = true
          break
        }
        if c == "\\", let escaped = scalars.popFirst() {
          name.append(escaped == "n" ? "\n" : escaped == "t" ? "\t" : escaped)
        } else {
          name.append(c)
        }
      }
      guard closed, names.updateValue(String(name), forKey: key) == nil else { return nil }
    } while take(",")
    guard take("}") else { return nil }
    skipSpaces()
    guard scalars.isEmpty, Set(names.keys) == Set(0..<names.count) else { return nil }
    return (0..<names.count).map { names[$0] ?? "" }
  }
}
