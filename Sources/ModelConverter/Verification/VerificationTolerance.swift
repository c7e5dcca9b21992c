import ModelIR

/// The pass rule for every compared tensor, and where its numbers come from.
///
/// An element passes when `|converted - expected| <= absolute * scale + relative * |expected|`, where
/// `scale = max(1, RMS of the expected tensor)`: rounding errors grow with the magnitude of the terms a
/// layer sums, so the absolute term follows the tensor's own size (for probabilities and other tensors
/// of RMS at most 1 it is the plain absolute tolerance).
public struct VerificationTolerance: Sendable, Equatable, Codable {
  /// Where the values come from.
  public enum Basis: String, Sendable, Equatable, Codable, CustomStringConvertible {
    /// Float32 weights: `float32`.
    case float32Weights
    /// Float16 weights or computation: relative RMS error at most 64 x 2^-11.
    case float16Weights
    /// n-bit quantized or palettized weights: relative RMS error at most min(16 / (2 (2^n - 1)), 0.25),
    /// each layer tensor computed from the source's values before it.
    case quantizedWeights
    /// A full-integer source (int8 activations, a TFLite model): its own runtime rounds every operator's
    /// output to its quantization step, which the converted float32 model does not; relative RMS error at
    /// most min(operators / 256, 0.25): each rounding moves a value by at most half a step of 256.
    case quantizedActivations
    /// Given by the caller (`--atol`, `--rtol`).
    case given

    public var description: String {
      switch self {
      case .float32Weights: return "float32 weights"
      case .float16Weights: return "float16 weights (relative RMS error <= 64 x 2^-11)"
      case .quantizedWeights:
        return
          "quantized weights (relative RMS error <= min(16 / (2 (2^bits - 1)), 0.25), layer by layer from the source's values)"
      case .quantizedActivations:
        return
          "integer activations in the source (relative RMS error <= min(operators / 256, 0.25): one rounding to 256 levels per operator)"
      case .given: return "given"
      }
    }
  }

  public var absolute: Float
  public var relative: Float
  public var basis: Basis
  /// For reduced-precision weights: a tensor passes when `||converted - expected|| <= this * ||expected||`
  /// over all its elements and samples (its signal-to-noise ratio is at least `-20 log10(this)` dB), since
  /// rounded weights move every element a little and the largest single error says little. Nil: every
  /// element must pass the element rule.
  public var maximumRelativeRMS: Float?

  public init(absolute: Float, relative: Float, basis: Basis, maximumRelativeRMS: Float? = nil) {
    self.absolute = absolute
    self.relative = relative
    self.basis = basis
    self.maximumRelativeRMS = maximumRelativeRMS
  }

  /// Float32 weights: both models compute in float32 from the same numbers; what differs is summation
  /// order and folding (about 1e-7 relative per operation), far inside these bounds.
  public static let float32 = VerificationTolerance(absolute: 1e-5, relative: 1e-3, basis: .float32Weights)

  /// How many unit roundoffs of the stored weights a tensor may move, relative to its RMS: a dot
  /// product of weights each off by at most `u` relative is off by at most `u * sum|w x|`, which exceeds
  /// the output's RMS by the cancellation in the sum, and the errors of successive layers add up. 64
  /// covers the 53-layer MobileNetV2 of the shared Teachable Machine model in float16 (relative RMS error
  /// at most 0.011, i.e. 22 u, at its worst layer), while a wrong layout, channel order or bias moves a
  /// tensor by a large part of its own size.
  public static let roundoffMultiple: Float = 64

  /// For compressed weights, how many n-bit steps `u` a layer tensor may move, relative to its RMS:
  /// verify computes each layer tensor from the source's values of the compared tensors before it
  /// (`ParityReport.layersFromSourceValues`), so only the few layers since then round their weights, and
  /// the depth of the network does not add up. Measured at the worst compared tensor with 8-bit weights
  /// (u = 1/510; the three shared real models, both formats, palettized and linear, every tensor of 256
  /// elements or more compressed): 5.2 u (39.9 dB, the Teachable Machine MobileNetV2's small depthwise
  /// kernels, linear per channel); digits and emotion 2-3 u. 16 u (0.031, 30 dB, at 8 bits) keeps a 3x
  /// margin over that; at 4 bits and below the cap decides.
  public static let compressedStepMultiple: Float = 16

  /// Below this SNR (a relative RMS error of 0.25) a tensor is wrong whatever the weight precision:
  /// the cap for compressed weights of 5 bits or fewer, where 16 u exceeds it.
  public static let loosestRelativeRMS: Float = 0.25

  /// The default for a model's weight storage: float32, float16 (u = 2^-11), or n-bit quantized
  /// (u = half a quantization step relative to the weight range, 1 / (2 (2^n - 1))).
  public static func defaults(quantizationBits: Int, usesFloat16: Bool) -> VerificationTolerance {
    if quantizationBits > 0 {
      let bits = quantizationBits
      let u = 1 / (2 * Float((1 << bits) - 1))
      let limit = min(compressedStepMultiple * u, loosestRelativeRMS)
      return VerificationTolerance(
        absolute: limit, relative: limit, basis: .quantizedWeights,
        maximumRelativeRMS: limit)
    }
    if usesFloat16 {
      let limit = roundoffMultiple / 2048
      return VerificationTolerance(
        absolute: limit, relative: limit, basis: .float16Weights, maximumRelativeRMS: limit)
    }
    return .float32
  }

  /// Float32 roundoff carried through a deep graph: both sides compute in float32, each operation
  /// rounds to within u = 2^-24 relative, a sum of K terms moves by up to about sqrt(K) u of its
  /// magnitude, and the errors of successive layers add up. Measured at the worst tensor compared layer
  /// by layer: Swin V2 S 30 u (an attention logit scaled by 10 after 40 blocks), Inception v3 with random
  /// weights 72 u (3x3 convolutions of 448 channels 90 layers deep, values near 10^9). The allowance is
  /// 256 u (relative RMS error 1.5e-5, SNR at least 96 dB): a tensor within it has the same computation
  /// behind it, while a wrong layout, bias, pad, or one wholly wrong element of any tensor under 4 x 10^9
  /// elements moves it by more.
  public static let float32RoundoffRMS: Float = 256 / 16_777_216

  /// With float32 weights, at most this share of a tensor's elements (and at least one) may miss the
  /// element rule when the tensor as a whole is within `float32RoundoffRMS`: an element near zero whose
  /// inputs were large gets an absolute error that the tensor's own RMS does not scale.
  public static let float32RoundoffMissShare = 1e-4

  /// With float32 weights, against the outputs another framework saved (`verify --reference`): the share of
  /// elements that may miss the element rule and the relative RMS error allowed, when that framework's own
  /// kernels disagree by as much. Measured with LiteRT 2.3.0, its XNNPACK kernels against its builtin ones on
  /// the same inputs: MediaPipe's pose landmark model's segmentation logits (values to 1 573) 3.4e-3 of the
  /// elements outside the rule, relative RMS 6.2e-5 (84 dB), the selfie segmentation masks on photos 9.5e-5
  /// and 1.3e-5; we are asked to agree with the framework no better than it agrees with itself. The allowance
  /// is 1e-2 of the elements and 2.5e-4 (72 dB): a wrong layout, bias or padding moves a tensor by 1e-2 or more,
  /// one wholly wrong element of a tensor under 16 million elements by more than 2.5e-4.
  public static let frameworkRoundoffRMS: Float = 2.5e-4
  public static let frameworkRoundoffMissShare = 1e-2

  /// How far the source model's own float32 rounding moves one output: the source rerun with its float32
  /// roundoff made visible (`RoundoffNoise`: running sums, noise of rounding size), against the plain run, on
  /// the reference inputs.
  public struct RoundoffSensitivity: Sendable, Equatable, Codable {
    /// The share of elements the noisy runs moved outside the element rule.
    public var share: Double
    /// The noisy runs' relative RMS difference.
    public var relativeRMS: Double

    public init(share: Double, relativeRMS: Double) {
      self.share = share
      self.relativeRMS = relativeRMS
    }

    /// Against another framework, a model whose own rounding moves it more than `frameworkRoundoff*` allow is
    /// allowed twice what the roundoff run moved it by (the running sums reproduce one float32 summation order,
    /// the framework's kernels may keep another). Measured with LiteRT 2.3.0 against our reading (2026-12-07):
    /// MediaPipe's landscape selfie segmentation on two photos differs at 4.24% of the mask's elements, relative
    /// RMS 1.4e-4, where the roundoff run moves 4.33% and 7.6e-5 (a squeeze-excitation gating amplifies its
    /// means over 9 216 pixels, which LiteRT sums in float32).
    public static let factor = 2.0

    /// The share of elements and the relative RMS allowed against another framework.
    public var allowedShare: Double { max(VerificationTolerance.frameworkRoundoffMissShare, Self.factor * share) }
    public var allowedRMS: Double {
      max(Double(VerificationTolerance.frameworkRoundoffRMS), Self.factor * relativeRMS)
    }
    /// Whether the model's own sensitivity, not the fixed allowance, sets the rule.
    public var widens: Bool {
      allowedShare > VerificationTolerance.frameworkRoundoffMissShare
        || allowedRMS > Double(VerificationTolerance.frameworkRoundoffRMS)
    }
  }

  /// Whether a tensor's accumulated statistics pass; `againstFramework`: compared with outputs another
  /// framework computed (with float32 weights, its own summation order's allowance, or `sensitivity`'s when
  /// the model's own rounding moves it more).
  func passes(
    mismatches: Int, signal: Double, noise: Double, elements: Int, againstFramework: Bool = false,
    sensitivity: RoundoffSensitivity? = nil
  ) -> Bool {
    // An all-zero tensor has no scale of its own: measure against 1, as the element rule does.
    let reference = max(signal, Double(elements))
    guard let limit = maximumRelativeRMS.map(Double.init) else {
      if mismatches == 0 { return true }
      // Given tolerances are the element rule as written.
      guard basis == .float32Weights else { return false }
      let framework = againstFramework ? (sensitivity ?? RoundoffSensitivity(share: 0, relativeRMS: 0)) : nil
      let share = framework?.allowedShare ?? Self.float32RoundoffMissShare
      let allowed = max(1, Int(Double(elements) * share))
      let roundoff = framework?.allowedRMS ?? Double(Self.float32RoundoffRMS)
      return mismatches <= allowed && noise <= roundoff * roundoff * reference
    }
    return noise <= limit * limit * reference
  }

  /// Whether one element passes, given its tensor's scale (`max(1, RMS)` of the expected values).
  /// Within the rule; a NaN (or an infinity of the same sign) where the source has one agrees with it.
  func allows(actual: Float, expected: Float, scale: Float) -> Bool {
    if Self.sameNonFinite(actual, expected) { return true }
    return abs(actual - expected) <= absolute * scale + relative * abs(expected)
  }

  /// Both NaN, or the same infinity: what the source computes for an input outside its domain (`log` of
  /// a negative number), reproduced.
  static func sameNonFinite(_ a: Float, _ b: Float) -> Bool {
    (a.isNaN && b.isNaN) || (a.isInfinite && a == b)
  }

  /// `max(1, RMS)` of a tensor's finite values.
  static func scale(of values: [Float]) -> Float {
    let finite = values.filter(\.isFinite)
    guard !finite.isEmpty else { return 1 }
    let meanSquare = finite.reduce(0.0) { $0 + Double($1) * Double($1) } / Double(finite.count)
    return max(1, Float(meanSquare.squareRoot()))
  }
}
