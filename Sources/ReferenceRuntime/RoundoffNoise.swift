import ModelIR

/// Noise of float32 roundoff's size added to every step's result: Monte Carlo arithmetic's way of measuring
/// how far a model's own rounding can move its outputs. Another framework computing the same model in float32
/// rounds differently (its summation order, its kernels); a run with this noise shows how much such a
/// difference grows through the model.
///
/// Each element `y` of a step moves by `u · k · max(|y|, RMS) · r`, with `u = 2^-24` (float32's unit roundoff),
/// `k` the step's size (`size(_:inputShapes:)`: how roundings add up in it), `r` uniform in [-1, 1] from a
/// seeded generator, and RMS the result's root mean square (a sum's rounding error scales with its terms, not
/// with a result that cancelled to near zero).
public struct RoundoffNoise: Sendable, Equatable {
  public var seed: UInt64
  /// Float32's unit roundoff.
  public static let unit: Float = 0x1p-24

  public init(seed: UInt64) { self.seed = seed }

  /// The noise's size for one step, in units of `unit` (times `max(|y|, RMS)`): `sqrt(n)` for a product
  /// summing `n` terms of either sign (a convolution, a dense layer: a random walk of `n` roundings); `n` for a
  /// mean or sum of `n` values (a global average pooling, MEAN, SUM: summed one after another in float32, as
  /// TFLite's and many kernels do, the values mostly of one sign, each rounding is a share of a partial sum
  /// that only grows, and the errors add up rather than cancel); 0 for a maximum or minimum (exact); 1 for
  /// everything else (one rounding).
  public static func size(_ operation: Operation, inputShapes: [[Int]]) -> Float {
    let first = inputShapes.first ?? []
    func product(_ n: Int) -> Float { Float(Double(max(1, n)).squareRoot()) }
    switch operation {
    case .convolution2D(let conv): return product(conv.kernel.shape.prefix(3).reduce(1, *))
    case .convolutionTranspose(let conv):
      return product(conv.kernel.values.count / max(1, conv.kernel.shape.count > 2 ? conv.kernel.shape[2] : 1))
    case .dense(let dense): return product(dense.inputUnits)
    case .matMul: return product(first.last ?? 1)
    case .dot: return product(first.reduce(1, *))
    case .softmax, .layerNormalization, .l2Normalize: return product(first.last ?? 1)
    case .globalPooling2D(let kind, _):
      guard kind == .average, first.count >= 3 else { return 0 }
      return Float(first[first.count - 3] * first[first.count - 2])
    case .pooling2D(let pooling):
      return pooling.kind == .average ? Float(pooling.poolHeight * pooling.poolWidth) : 0
    case .reduce(let reduction):
      guard reduction.kind == .mean || reduction.kind == .sum else { return 0 }
      return Float(reduction.axes.reduce(1) { $0 * (first.indices.contains($1) ? first[$1] : 1) })
    default: return 1
    }
  }

  /// Perturbs one step's result (`step`: its position in the plan, so that each step draws its own noise).
  func perturb(_ values: inout [Float], size units: Float, step: Int) {
    guard !values.isEmpty, units > 0 else { return }
    var squares = 0.0
    for v in values where v.isFinite { squares += Double(v) * Double(v) }
    let rms = Float((squares / Double(values.count)).squareRoot())
    let size = Self.unit * units
    var state = seed &+ UInt64(step) &* 0x9E37_79B9_7F4A_7C15
    for i in values.indices where values[i].isFinite {
      state = state &+ 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      z ^= z >> 31
      let r = Float(Double(z >> 11) * 0x1p-53) * 2 - 1
      values[i] += size * max(abs(values[i]), rms) * r
    }
  }
}
