import Foundation
import ModelIR

extension ONNXOperatorRegistry {
  /// Operators exporters use on shapes and indices, computed at import when their inputs are constants
  /// (`Mod`, `Not`, `Range`): a computed input is refused by name.
  static let constantOperators: [String: [ONNXOperatorEntry]] =
    entries(["Mod": [10, 13]]) { try $0.modulo() }
    .merging(entries(["Not": [1]]) { try $0.logicalNot() }) { $0 + $1 }
    .merging(entries(["Range": [11]]) { try $0.range() }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// An input this operator only computes at import time.
  func foldedInput(_ index: Int) throws -> ONNXConstant {
    guard let c = try constant(index) else { throw invalid("input \(index) is computed; \(opType) is only supported on constants (shape computations)") }
    return c
  }

  /// Integer `a mod b` with the divisor's sign (Python's `%`, `fmod` 0), or C's `fmod` (`fmod` 1).
  mutating func modulo() throws {
    let (a, b) = (try foldedInput(0), try foldedInput(1))
    let fmod = try int("fmod", 0) == 1
    guard let shape = Broadcasting.shape([a.shape, b.shape]), let count = GraphLimits.elementCount(shape), count <= 1 << 16 else {
      throw invalid("shapes \(a.shape) and \(b.shape) do not broadcast")
    }
    func element(_ c: ONNXConstant, _ flat: Int) -> Int { Self.broadcastIndex(flat, of: shape, into: c.shape) }
    if let ai = a.ints, let bi = b.ints {
      var result: [Int] = []
      for flat in 0..<count {
        let (x, y) = (ai[element(a, flat)], bi[element(b, flat)])
        guard y != 0 else { throw invalid("a modulo by zero") }
        let r = x % y
        result.append(fmod || r == 0 || (r < 0) == (y < 0) ? r : r + y)
      }
      define(ONNXConstant(shape: shape, ints: result))
    } else {
      guard fmod else { throw invalid("a floating-point Mod needs fmod 1") }
      define(ONNXConstant(shape: shape, floats: (0..<count).map { Foundation.fmod(a.floats[element(a, $0)], b.floats[element(b, $0)]) }))
    }
  }

  mutating func logicalNot() throws {
    let x = try foldedInput(0)
    guard let values = x.ints else { throw invalid("Not needs a boolean tensor") }
    define(ONNXConstant(shape: x.shape, ints: values.map { $0 == 0 ? 1 : 0 }))
  }

  /// `start, start + delta, ...` below `limit` (above it for a negative delta).
  mutating func range() throws {
    let (start, limit, delta) = (try foldedInput(0), try foldedInput(1), try foldedInput(2))
    guard start.count == 1, limit.count == 1, delta.count == 1 else { throw invalid("start, limit and delta must be scalars") }
    if let s = start.ints?.first, let l = limit.ints?.first, let d = delta.ints?.first {
      guard d != 0 else { throw invalid("a delta of 0") }
      let count = max(0, (l - s + d + (d > 0 ? -1 : 1)) / d)
      guard count <= GraphLimits.maxElementCount else { throw invalid("a range of \(count) values") }
      define(ONNXConstant(shape: [count], ints: (0..<count).map { s + $0 * d }))
    } else {
      let (s, l, d) = (start.floats[0], limit.floats[0], delta.floats[0])
      guard d != 0, s.isFinite, l.isFinite, d.isFinite else { throw invalid("a delta of 0 or a non-finite bound") }
      let count = max(0, Int(((l - s) / d).rounded(.up)))
      guard count <= GraphLimits.maxElementCount else { throw invalid("a range of \(count) values") }
      define(ONNXConstant(shape: [count], floats: (0..<count).map { s + Float($0) * d }))
    }
  }
}
