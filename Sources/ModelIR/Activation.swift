/// An elementwise activation function.
public enum Activation: Sendable, Equatable {
  /// `scale * x + offset`; identity is `(1, 0)`.
  case linear(scale: Float, offset: Float)
  /// `max(x, 0)`.
  case relu
  /// Keras' general `ReLU` layer: `min(x, maxValue)` for `x >= threshold`, else `negativeSlope * (x - threshold)`.
  case clippedReLU(maxValue: Float?, negativeSlope: Float, threshold: Float)
  /// `x` for `x >= 0`, else `alpha * x`.
  case leakyReLU(alpha: Float)
  /// Leaky ReLU with learned slopes, `[C]` (shared over the spatial axes) or the full input shape.
  case parametricReLU(alpha: Constant)
  /// `x` for `x > 0`, else `alpha * (exp(x) - 1)`.
  case elu(alpha: Float)
  /// Scaled ELU with Keras' fixed constants.
  case selu
  /// `x` for `x > theta`, else 0.
  case thresholdedReLU(theta: Float)
  case sigmoid
  /// `clip(slope * x + offset, 0, 1)`: Keras 2 uses (0.2, 0.5), Keras 3 (1/6, 0.5).
  case hardSigmoid(slope: Float, offset: Float)
  case tanh
  /// `log(1 + exp(x))`.
  case softplus
  /// `x / (1 + |x|)`.
  case softsign
  /// `x * sigmoid(x)`.
  case swish
  /// `x * clip(x / 6 + 1/2, 0, 1)`, that is `x * relu6(x + 3) / 6`: Keras 3's `hard_silu` (`hard_swish`),
  /// ONNX's `HardSwish`.
  case hardSwish
  /// Gaussian error linear unit, exact (erf) or with the tanh approximation.
  case gelu(approximate: Bool)
  /// `exp(x)`.
  case exponential
  /// The error function `erf(x)` (what exporters write GELU with before ONNX's opset 20).
  case erf
  /// `min(max(x, min), max)`.
  case clip(min: Float, max: Float)
  /// `sin(x)`, `x` in radians.
  case sin
  /// `cos(x)`, `x` in radians.
  case cos
  /// The largest integer not above `x`.
  case floor
  /// The smallest integer not below `x`.
  case ceil
  /// One of Core ML's unary functions.
  case unary(UnaryFunction)

  /// The identity function.
  public static let identity = Activation.linear(scale: 1, offset: 0)

  /// Keras' SELU constants.
  public static let seluAlpha: Float = 1.6732632423543772
  public static let seluScale: Float = 1.0507009873554805
}
