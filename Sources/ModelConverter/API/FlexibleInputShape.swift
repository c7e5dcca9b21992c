import Foundation

/// The shapes a flexible input allows, in the source's layout (coremltools' `RangeDim` and
/// `EnumeratedShapes`): either a range per dimension, or a list of whole shapes, the first of which is
/// the default.
public struct FlexibleInputShape: Sendable, Equatable, CustomStringConvertible {
  /// One dimension's sizes: `lower...upper`, `upper` nil for unbounded; a fixed size has `lower == upper`.
  public struct DimensionRange: Sendable, Equatable {
    public var lower: Int
    public var upper: Int?
    public init(lower: Int, upper: Int?) {
      self.lower = lower
      self.upper = upper
    }
    public var isFixed: Bool { upper == lower }
  }

  public enum Kind: Sendable, Equatable {
    case ranges([DimensionRange])
    case enumerated([[Int]])
  }

  public var kind: Kind
  /// The shape the model is converted at and Core ML uses when the app gives no other.
  public var defaultShape: [Int]

  /// A range per dimension; `defaultShape` nil takes each lower bound.
  public init(ranges: [DimensionRange], defaultShape: [Int]? = nil) {
    self.kind = .ranges(ranges)
    self.defaultShape = defaultShape ?? ranges.map(\.lower)
  }

  /// Enumerated shapes; the first is the default.
  public init(enumerated shapes: [[Int]]) {
    self.kind = .enumerated(shapes)
    self.defaultShape = shapes.first ?? []
  }

  /// Whether any dimension can take another size than the default.
  public var isFlexible: Bool {
    switch kind {
    case .ranges(let ranges): return ranges.contains { !$0.isFixed }
    case .enumerated(let shapes): return Set(shapes).count > 1
    }
  }

  /// `1,3,8:64,8:64` (default when not the lower bound: `8:64:16`) or `1,3,32,32 | 1,3,64,48`.
  public var description: String {
    switch kind {
    case .ranges(let ranges):
      return zip(ranges, defaultShape).map { range, size in
        if range.isFixed { return "\(range.lower)" }
        let upper = range.upper.map(String.init) ?? "*"
        return size == range.lower ? "\(range.lower):\(upper)" : "\(range.lower):\(upper):\(size)"
      }.joined(separator: ",")
    case .enumerated(let shapes):
      return shapes.map { $0.map(String.init).joined(separator: ",") }.joined(separator: " | ")
    }
  }

  /// Reads one shape as `--input-shape` spells it: sizes separated by commas, each `N`, `LO:HI` or
  /// `LO:HI:DEFAULT` (`HI` may be `*`, unbounded). Nil when the text is not of that form.
  public static func parse(_ text: some StringProtocol) -> FlexibleInputShape? {
    var ranges: [DimensionRange] = []
    var defaults: [Int] = []
    for part in text.split(separator: ",", omittingEmptySubsequences: false) {
      let bounds = part.split(separator: ":", omittingEmptySubsequences: false).map {
        $0.trimmingCharacters(in: .whitespaces)
      }
      guard (1...3).contains(bounds.count), let lower = Int(bounds[0]) else { return nil }
      if bounds.count == 1 {
        ranges.append(DimensionRange(lower: lower, upper: lower))
        defaults.append(lower)
        continue
      }
      let upper: Int?
      if bounds[1] == "*" {
        upper = nil
      } else if let value = Int(bounds[1]) {
        upper = value
      } else {
        return nil
      }
      let size: Int
      if bounds.count == 3 {
        guard let value = Int(bounds[2]) else { return nil }
        size = value
      } else {
        size = lower
      }
      ranges.append(DimensionRange(lower: lower, upper: upper))
      defaults.append(size)
    }
    return ranges.isEmpty ? nil : FlexibleInputShape(ranges: ranges, defaultShape: defaults)
  }

  /// Combines every shape given for one input (`--input-shape` repeated): one shape as it is, several
  /// fixed shapes as an enumeration. Nil when a range is repeated (an input is a range or an
  /// enumeration, as Core ML's `ShapeFlexibility` is one or the other).
  public static func combining(_ shapes: [FlexibleInputShape]) -> FlexibleInputShape? {
    guard shapes.count > 1 else { return shapes.first }
    guard shapes.allSatisfy({ !$0.isFlexible }) else { return nil }
    return FlexibleInputShape(enumerated: shapes.map(\.defaultShape))
  }

  /// What Core ML cannot load, as a sentence naming the rule; nil when the shapes are fine. The rules of
  /// Core ML's interface validator (`InterfaceValidators.cpp`): sizes of at least 1, a lower bound not
  /// above its upper bound, the default within the range or among the enumerated shapes.
  public var problem: String? {
    switch kind {
    case .ranges(let ranges):
      for (index, (range, size)) in zip(ranges, defaultShape).enumerated() {
        guard range.lower >= 1 else { return "dimension \(index): sizes start at 1, got \(range.lower)" }
        if let upper = range.upper, upper < range.lower {
          return
            "dimension \(index): the range \(range.lower):\(upper) ends below its start (Core ML refuses such a size range)"
        }
        guard size >= range.lower, range.upper.map({ size <= $0 }) ?? true else {
          return
            "dimension \(index): the default \(size) is outside \(range.lower):\(range.upper.map(String.init) ?? "*")"
        }
      }
      return nil
    case .enumerated(let shapes):
      guard let first = shapes.first else { return "no shapes" }
      if let bad = shapes.first(where: { $0.count != first.count }) {
        return
          "the enumerated shapes \(first) and \(bad) have different ranks (every enumerated shape has the default's rank)"
      }
      if let bad = shapes.first(where: { $0.contains { $0 < 1 } }) { return "the shape \(bad) has a size below 1" }
      var seen = Set<[Int]>()
      if let twice = shapes.first(where: { !seen.insert($0).inserted }) {
        return "the shape \(twice) is given twice"
      }
      return nil
    }
  }

  /// The shapes a conversion is checked at besides the default, and `verify` runs at: for a range the
  /// lower bounds, the upper bounds (an unbounded dimension at `unboundedCheck` times its default, at
  /// least its lower bound + 2) and an odd size between each flexible dimension's bounds; every
  /// enumerated shape. The default comes first; no shape twice.
  public var checkedShapes: [[Int]] {
    var shapes: [[Int]] = [defaultShape]
    func add(_ shape: [Int]) { if !shapes.contains(shape) { shapes.append(shape) } }
    switch kind {
    case .enumerated(let list): list.forEach(add)
    case .ranges(let ranges):
      add(ranges.map(\.lower))
      let uppers = zip(ranges, defaultShape).map { range, size in
        range.upper ?? Self.unboundedCheck(lower: range.lower, default: size)
      }
      add(uppers)
      add(
        zip(ranges, uppers).map { range, upper in
          if range.isFixed { return range.lower }
          var middle = range.lower + (upper - range.lower) / 2
          if middle % 2 == 0 { middle += middle + 1 <= upper ? 1 : -1 }
          return max(range.lower, min(upper, middle))
        })
    }
    return shapes
  }

  /// The checks of several flexible inputs together, by input name: the i-th check takes each input's
  /// i-th checked shape (an input with fewer starts again from its default), the defaults first.
  public static func combinedChecks(_ inputs: [String: FlexibleInputShape]) -> [[String: [Int]]] {
    let names = inputs.keys.sorted()
    let perInput = names.map { inputs[$0]!.checkedShapes }
    let count = perInput.map(\.count).max() ?? 1
    return (0..<count).map { index in
      Dictionary(uniqueKeysWithValues: zip(names, perInput).map { ($0, $1[index % $1.count]) })
    }
  }

  /// The dimensions that can take more than one size.
  public var flexibleDimensions: [Int] {
    switch kind {
    case .ranges(let ranges): return ranges.indices.filter { !ranges[$0].isFixed }
    case .enumerated(let shapes):
      guard let first = shapes.first else { return [] }
      return first.indices.filter { index in shapes.contains { $0.count == first.count && $0[index] != first[index] } }
    }
  }

  /// The size an unbounded dimension is checked at: twice its default, at least its lower bound + 2
  /// (and at most 4096 more than the lower bound, so a check stays affordable).
  public static func unboundedCheck(lower: Int, default size: Int) -> Int {
    let doubled = size > Int.max / 2 ? Int.max : size * 2
    return max(lower + 2, min(doubled, lower + 4096))
  }

  /// Whether `shape` is one this input allows.
  public func allows(_ shape: [Int]) -> Bool {
    switch kind {
    case .enumerated(let list): return list.contains(shape)
    case .ranges(let ranges):
      return shape.count == ranges.count
        && zip(ranges, shape).allSatisfy { range, size in
          size >= range.lower && (range.upper.map { size <= $0 } ?? true)
        }
    }
  }
}
