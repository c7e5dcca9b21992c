/// How a multiarray feature is declared in a written model, when not as the writer would choose
/// (`[1] + S` in an ML Program): a source's own interface kept (a classic network's `(C, H, W)` and
/// `(D)` arrays, an ONNX model's `[N, C, H, W]`), so an app that fed the source feeds the conversion.
public struct DeclaredArray: Sendable, Equatable {
  /// The declared shape; it holds the graph value's elements.
  public var shape: [Int]
  /// Whether the declared array is channels first: an IR `[H, W, C]` value's last axis moved to the
  /// front (then any unit axes), else the IR value's elements in their own order.
  public var channelsFirst: Bool

  public init(shape: [Int], channelsFirst: Bool) {
    self.shape = shape
    self.channelsFirst = channelsFirst
  }

  /// Whether this declaration can carry an IR value of `irShape`: the same element count, and a
  /// channels-first declaration only for `[H, W, C]` values whose declared shape is `[C, H, W]` after
  /// dropping unit axes in front.
  public func fits(_ irShape: [Int]) -> Bool {
    guard shape.allSatisfy({ $0 >= 1 }), shape.reduce(1, *) == irShape.reduce(1, *) else { return false }
    guard channelsFirst else { return true }
    guard irShape.count == 3, shape.count >= 3, shape.dropLast(3).allSatisfy({ $0 == 1 }) else { return false }
    return Array(shape.suffix(3)) == [irShape[2], irShape[0], irShape[1]]
  }
}
