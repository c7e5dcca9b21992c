/// A reduction over some axes of a tensor.
public struct Reduction: Sendable, Equatable {
  public var kind: ReductionKind
  /// Non-negative, sorted, distinct axes.
  public var axes: [Int]
  /// Keep the reduced axes with length 1 instead of dropping them.
  public var keepDims: Bool

  public init(kind: ReductionKind, axes: [Int], keepDims: Bool) {
    self.kind = kind
    self.axes = axes
    self.keepDims = keepDims
  }
}
