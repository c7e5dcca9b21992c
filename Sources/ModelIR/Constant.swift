/// A constant tensor held by an operation: weights, biases, normalization statistics.
public struct Constant: Sendable, Equatable {
  /// The shape, in the layout documented by the operation that holds it.
  public var shape: [Int]
  /// Row-major values; `values.count` equals the product of `shape`.
  public var values: [Float]

  public init(shape: [Int], values: [Float]) {
    precondition(shape.reduce(1, *) == values.count, "constant shape \(shape) does not match \(values.count) values")
    self.shape = shape
    self.values = values
  }

  /// A constant filled with one value.
  public static func filled(_ value: Float, shape: [Int]) -> Constant {
    Constant(shape: shape, values: [Float](repeating: value, count: shape.reduce(1, *)))
  }

  /// The number of elements.
  public var count: Int { values.count }
}

#if canImport(Glibc)
  import Glibc
#endif

extension Constant {
  /// A new array of `count` values that `initialize` must fill completely (weights read from a file, a
  /// kernel in another layout). A large one is backed by transparent huge pages where the kernel offers
  /// them on request (`madvise`): filling 100 MB of weights then takes ~50 page faults instead of
  /// ~25,000, a third of the time of reading them. The values are the same either way.
  public static func newValues(count: Int, _ initialize: (UnsafeMutableBufferPointer<Float>) -> Void) -> [Float] {
    [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
      #if os(Linux)
        let hugePage = 2 << 20
        if count * MemoryLayout<Float>.stride >= 2 * hugePage, let base = buffer.baseAddress {
          let start = (Int(bitPattern: base) + hugePage - 1) & ~(hugePage - 1)
          let end = (Int(bitPattern: base + count)) & ~(hugePage - 1)
          if end > start {
            _ = madvise(UnsafeMutableRawPointer(bitPattern: start), end - start, 14)  // MADV_HUGEPAGE
          }
        }
      #endif
      initialize(buffer)
      initialized = count
    }
  }
}

extension Constant {
  /// The constant with its axes reordered: the result's axis `i` is this constant's axis `order[i]`.
  public func permuted(_ order: [Int]) -> Constant {
    Constant(
      shape: order.map { shape[$0] }, values: Self.permutedIndices(shape: shape, order: order).map { values[$0] })
  }

  /// For each element of a tensor of `shape` transposed by `order` (axis `i` is axis `order[i]`), in
  /// row-major order, the index of the element it comes from.
  public static func permutedIndices(shape: [Int], order: [Int]) -> [Int] {
    precondition(order.sorted() == Array(shape.indices), "permutation \(order) of shape \(shape)")
    let newShape = order.map { shape[$0] }
    var strides = [Int](repeating: 1, count: shape.count)
    for axis in shape.indices.dropLast().reversed() { strides[axis] = strides[axis + 1] * shape[axis + 1] }
    let count = shape.reduce(1, *)
    var result = [Int]()
    result.reserveCapacity(count)
    var coordinate = [Int](repeating: 0, count: newShape.count)
    for _ in 0..<count {
      var source = 0
      for (axis, position) in zip(order, coordinate) { source += strides[axis] * position }
      result.append(source)
      var axis = newShape.count - 1
      while axis >= 0 {
        coordinate[axis] += 1
        if coordinate[axis] < newShape[axis] { break }
        coordinate[axis] = 0
        axis -= 1
      }
    }
    return result
  }
}
