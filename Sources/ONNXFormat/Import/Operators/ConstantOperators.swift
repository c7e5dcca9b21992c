import Foundation
import ModelIR

extension ONNXOperatorRegistry {
  /// Operators exporters use on shapes and indices, computed at import when their inputs are constants
  /// (`Mod`, `Range`, `ScatterND`, `ReduceProd`, as tf2onnx's Tensordot counts elements): a computed input
  /// is refused by name. `Not` also takes computed booleans.
  static let constantOperators: [String: [ONNXOperatorEntry]] =
    entries(["Mod": [10, 13]]) { try $0.modulo() }
    .merging(entries(["Not": [1]]) { try $0.logicalNot() }) { $0 + $1 }
    .merging(entries(["Range": [11]]) { try $0.range() }) { $0 + $1 }
    .merging(entries(["ScatterND": [11, 13, 16, 18]]) { try $0.scatterND() }) { $0 + $1 }
    .merging(entries(["ReduceProd": [1, 11, 13, 18]]) { try $0.reduceProduct() }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// An input this operator only computes at import time.
  func foldedInput(_ index: Int) throws -> ONNXConstant {
    guard let c = try constant(index) else {
      throw invalid("input \(index) is computed; \(opType) is only supported on constants (shape computations)")
    }
    return c
  }

  /// Integer `a mod b` with the divisor's sign (Python's `%`, `fmod` 0), or C's `fmod` (`fmod` 1).
  mutating func modulo() throws {
    let (a, b) = (try foldedInput(0), try foldedInput(1))
    let fmod = try int("fmod", 0) == 1
    guard let shape = Broadcasting.shape([a.shape, b.shape]), let count = GraphLimits.elementCount(shape),
      count <= ONNXConstant.maxFoldedCount
    else {
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
      define(
        ONNXConstant(
          shape: shape, floats: (0..<count).map { Foundation.fmod(a.floats[element(a, $0)], b.floats[element(b, $0)]) })
      )
    }
  }

  /// The product over `axes` (all when none are given; axes an input from opset 18), of integers exactly
  /// (overflow refused) or of floats.
  mutating func reduceProduct() throws {
    let x = try foldedInput(0)
    let keepDims = try int("keepdims", 1) == 1
    var raw: [Int]?
    if opset >= 18 {
      if hasInput(1) { raw = try requiredInts(1, "axes") }
    } else {
      raw = try ints("axes")
    }
    if raw?.isEmpty ?? true, try int("noop_with_empty_axes", 0) == 1 {
      define(x)
      return
    }
    let axes = Set(
      try (raw?.isEmpty ?? true ? Array(x.shape.indices) : raw!).map { try axis($0, rank: x.shape.count, "axes") })
    let kept = x.shape.enumerated().map { axes.contains($0.offset) ? 1 : $0.element }
    let shape = keepDims ? kept : x.shape.enumerated().filter { !axes.contains($0.offset) }.map(\.element)
    let count = kept.reduce(1, *)
    if let values = x.ints {
      var result = [Int](repeating: 1, count: count)
      for (flat, value) in values.enumerated() {
        let target = Self.broadcastIndex(flat, of: x.shape, into: kept)
        let (product, overflow) = result[target].multipliedReportingOverflow(by: value)
        guard !overflow else { throw invalid("the product overflows 64-bit integers") }
        result[target] = product
      }
      define(ONNXConstant(shape: shape, ints: result))
    } else {
      var result = [Float](repeating: 1, count: count)
      for (flat, value) in x.floats.enumerated() { result[Self.broadcastIndex(flat, of: x.shape, into: kept)] *= value }
      define(ONNXConstant(shape: shape, floats: result))
    }
  }

  /// Logical not: folded on a constant; on a computed boolean (held as 0 and 1) `1 - x`, exact.
  mutating func logicalNot() throws {
    guard let x = try constant(0) else {
      define(try add(.activation(.linear(scale: -1, offset: 1)), [try tensor(0)]))
      return
    }
    guard let values = x.ints else { throw invalid("Not needs a boolean tensor") }
    define(ONNXConstant(shape: x.shape, ints: values.map { $0 == 0 ? 1 : 0 }))
  }

  /// `start, start + delta, ...` below `limit` (above it for a negative delta).
  mutating func range() throws {
    let (start, limit, delta) = (try foldedInput(0), try foldedInput(1), try foldedInput(2))
    guard start.count == 1, limit.count == 1, delta.count == 1 else {
      throw invalid("start, limit and delta must be scalars")
    }
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

  /// `data` with the slices that `indices` address replaced by (or, with `reduction`, combined with)
  /// `updates`, in index order: `indices` `[..., q]` addresses slices `data[i0, ..., iq-1]`.
  mutating func scatterND() throws {
    let (data, indices, updates) = (try foldedInput(0), try foldedInput(1), try foldedInput(2))
    guard let index = indices.ints, let q = indices.shape.last, q >= 1, q <= data.shape.count else {
      throw invalid(
        "indices of shape \(indices.shape) must be integers [..., q] with q from 1 to the rank of data \(data.shape)")
    }
    let sliceShape = Array(data.shape.dropFirst(q))
    let sliceSize = sliceShape.reduce(1, *)
    let expected = Array(indices.shape.dropLast()) + sliceShape
    guard updates.shape == expected else { throw invalid("updates of shape \(updates.shape), expected \(expected)") }
    let reduction = try string("reduction", "none")
    let combine: (Float, Float) -> Float
    switch reduction {
    case "none": combine = { $1 }
    case "add": combine = { $0 + $1 }
    case "mul": combine = { $0 * $1 }
    case "max": combine = { Swift.max($0, $1) }
    case "min": combine = { Swift.min($0, $1) }
    default: throw invalid("reduction '\(reduction)' (none, add, mul, max or min)")
    }
    let strides = data.shape.indices.map { data.shape.suffix(from: $0 + 1).reduce(1, *) }
    var floats = data.floats
    var ints = data.ints
    let integer = data.ints != nil && updates.ints != nil
    for slice in 0..<(index.count / q) {
      var offset = 0
      for axis in 0..<q {
        var i = index[slice * q + axis]
        if i < 0 { i += data.shape[axis] }
        guard i >= 0, i < data.shape[axis] else {
          throw invalid("index \(index[slice * q + axis]) is outside axis \(axis) of data \(data.shape)")
        }
        offset += i * strides[axis]
      }
      for k in 0..<sliceSize {
        floats[offset + k] = combine(floats[offset + k], updates.floats[slice * sliceSize + k])
        if integer, let u = updates.ints {
          let (a, b) = (ints![offset + k], u[slice * sliceSize + k])
          switch reduction {
          case "add": ints![offset + k] = a &+ b
          case "mul": ints![offset + k] = a &* b
          case "max": ints![offset + k] = Swift.max(a, b)
          case "min": ints![offset + k] = Swift.min(a, b)
          default: ints![offset + k] = b
          }
        }
      }
    }
    define(ONNXConstant(shape: data.shape, floats: floats, ints: integer ? ints : nil))
  }
}
