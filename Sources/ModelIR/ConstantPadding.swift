/// Padding of every axis with a constant value.
public struct ConstantPadding: Sendable, Equatable {
  /// Elements added before each axis' start, one per axis.
  public var before: [Int]
  /// Elements added after each axis' end, one per axis.
  public var after: [Int]
  public var value: Float

  public init(before: [Int], after: [Int], value: Float) {
    self.before = before
    self.after = after
    self.value = value
  }
}
