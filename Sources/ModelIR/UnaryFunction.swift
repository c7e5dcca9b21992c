/// Core ML's unary function family, `f(scale * x + shift)`.
public struct UnaryFunction: Sendable, Equatable {
  public enum Kind: String, Sendable, Equatable {
    /// `sqrt(v)`.
    case sqrt
    /// `1 / sqrt(v + epsilon)`.
    case rsqrt
    /// `1 / (v + epsilon)`.
    case inverse
    /// `v ^ alpha`.
    case power
    case exp
    /// `log(v + epsilon)`.
    case log
    case abs
    /// `max(v, alpha)`.
    case threshold
  }

  public var kind: Kind
  public var alpha: Float
  public var epsilon: Float
  public var scale: Float
  public var shift: Float

  public init(kind: Kind, alpha: Float = 0, epsilon: Float = 0, scale: Float = 1, shift: Float = 0) {
    self.kind = kind
    self.alpha = alpha
    self.epsilon = epsilon
    self.scale = scale
    self.shift = shift
  }
}
