import CoreMLFormat

/// The pass rule for every compared tensor, and where its numbers come from.
///
/// An element passes when `|converted - expected| <= absolute * scale + relative * |expected|`, where
/// `scale = max(1, RMS of the expected tensor)`: rounding errors grow with the magnitude of the terms a
/// layer sums, so the absolute term follows the tensor's own size (for probabilities and other tensors
/// of RMS at most 1 it is the plain absolute tolerance).
public struct VerificationTolerance: Sendable, Equatable, Codable {
  public var absolute: Float
  public var relative: Float
  /// Why these values: `float32 weights`, `float16 weights (32 x 2^-11)`, or `given`.
  public var basis: String

  public init(absolute: Float, relative: Float, basis: String) {
    self.absolute = absolute
    self.relative = relative
    self.basis = basis
  }

  /// Float32 weights: both models compute in float32 from the same numbers; what differs is summation
  /// order and folding (about 1e-7 relative per operation), far inside these bounds.
  public static let float32 = VerificationTolerance(absolute: 1e-5, relative: 1e-3, basis: "float32 weights")

  /// How many unit roundoffs of the stored weights a layer's output may move: a dot product of weights
  /// each off by at most `u` relative is off by at most `u * sum|w x|`, which exceeds the output's RMS by
  /// the cancellation in the sum; 32 covers that and the growth over a deep network (measured on the
  /// samples and the shared models, see the README), while a wrong layout moves values by their own size.
  public static let roundoffMultiple: Float = 32

  /// The default for a model's weight storage: float32, float16 (u = 2^-11), or n-bit quantized
  /// (u = half a quantization step relative to the weight range, 1 / (2 (2^n - 1))).
  public static func defaults(for spec: CoreMLModelSpec) -> VerificationTolerance {
    let bits = spec.layers.map(\.quantizationBits).filter { $0 > 0 }.min()
    if let bits {
      let u = 1 / (2 * Float((1 << bits) - 1))
      return VerificationTolerance(absolute: roundoffMultiple * u, relative: roundoffMultiple * u, basis: "\(bits)-bit quantized weights (\(Int(roundoffMultiple)) x 1/(2 (2^\(bits) - 1)))")
    }
    if spec.layers.contains(where: \.usesFloat16) {
      let u: Float = 1.0 / 2048
      return VerificationTolerance(absolute: roundoffMultiple * u, relative: roundoffMultiple * u, basis: "float16 weights (\(Int(roundoffMultiple)) x 2^-11)")
    }
    return .float32
  }

  /// Whether one element passes, given its tensor's scale (`max(1, RMS)` of the expected values).
  func allows(actual: Float, expected: Float, scale: Float) -> Bool {
    abs(actual - expected) <= absolute * scale + relative * abs(expected)
  }

  /// `max(1, RMS)` of a tensor.
  static func scale(of values: [Float]) -> Float {
    guard !values.isEmpty else { return 1 }
    let meanSquare = values.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(values.count)
    return max(1, Float(meanSquare.squareRoot()))
  }
}
