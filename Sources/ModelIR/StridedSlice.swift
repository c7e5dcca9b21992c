/// A strided slice of every axis: elements `begin, begin + stride, ...` below `end`.
public struct StridedSlice: Sendable, Equatable {
  /// Resolved, in-range start indices, one per axis.
  public var begin: [Int]
  /// Resolved exclusive end indices, one per axis.
  public var end: [Int]
  /// Positive steps, one per axis.
  public var strides: [Int]

  public init(begin: [Int], end: [Int], strides: [Int]) {
    self.begin = begin
    self.end = end
    self.strides = strides
  }

  /// The number of elements the slice keeps along `axis`.
  public func length(axis: Int) -> Int { max(0, (end[axis] - begin[axis] + strides[axis] - 1) / strides[axis]) }
}
