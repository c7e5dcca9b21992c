/// Local response normalization across the last (channel) axis, as ONNX's LRN defines it:
/// `y_c = x_c / (bias + alpha / size * sum(x_i^2))^beta` over channels
/// `max(0, c - floor((size - 1) / 2)) <= i <= min(C - 1, c + ceil((size - 1) / 2))`.
public struct LocalResponseNormalization: Sendable, Equatable {
  /// The number of channels in the window, 1 or more.
  public var size: Int
  public var alpha: Float
  public var beta: Float
  public var bias: Float

  public init(size: Int, alpha: Float, beta: Float, bias: Float) {
    self.size = size
    self.alpha = alpha
    self.beta = beta
    self.bias = bias
  }

  /// The window of channel `c`: `c - before ... c + after`, clipped to the channels.
  public var before: Int { (size - 1) / 2 }
  public var after: Int { size / 2 }
}
