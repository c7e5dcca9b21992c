/// The reduction a pooling window applies.
public enum PoolingKind: String, Sendable, Equatable {
  case max
  /// The mean over the window, excluding padding (TensorFlow's semantics).
  case average
}

/// A sliding-window pooling over a `[H, W, C]` tensor.
public struct Pooling2D: Sendable, Equatable {
  public var kind: PoolingKind
  public var poolHeight: Int
  public var poolWidth: Int
  public var strideHeight: Int
  public var strideWidth: Int
  public var padding: Padding

  public init(kind: PoolingKind, pool: [Int], strides: [Int], padding: Padding) {
    self.kind = kind
    self.poolHeight = pool[0]
    self.poolWidth = pool[1]
    self.strideHeight = strides[0]
    self.strideWidth = strides[1]
    self.padding = padding
  }
}
