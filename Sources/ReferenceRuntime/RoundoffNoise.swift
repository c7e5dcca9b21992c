import ModelIR

/// A run of a model with float32 roundoff made visible: Monte Carlo arithmetic's way of measuring how far a
/// model's own rounding can move its outputs. Another framework computing the same model in float32 rounds
/// differently (its summation order, its kernels); a run with this noise shows how much such a difference grows
/// through the model.
///
/// A mean or sum (a global average pooling, MEAN, SUM) is computed as a float32 running sum, one value after
/// another in memory order, as TFLite's reference kernels sum (the plain run sums in Double): over thousands of
/// values of one sign that is where two float32 implementations differ most. Every other step's element `y`
/// moves by `u · k · y · r`, with `u = 2^-24` (float32's unit roundoff), `k` the step's size
/// (`size(_:inputShapes:)`: sqrt(n) for a product of n terms of either sign, a random walk of n roundings; 0 for
/// a maximum, which is exact; 1 otherwise) and `r` uniform in [-1, 1] from a seeded generator.
public struct RoundoffNoise: Sendable, Equatable {
  public var seed: UInt64
  /// Float32's unit roundoff.
  public static let unit: Float = 0x1p-24

  public init(seed: UInt64) { self.seed = seed }

  /// The noise's size for one step, in units of `unit` (times the value): `sqrt(n)` for a product
  /// summing `n` terms of either sign (a convolution, a dense layer), a softmax or normalization over `n`; 0 for
  /// a maximum or minimum (exact) and for a mean or sum (recomputed as a running sum instead); 1 for everything
  /// else (one rounding).
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
    case .globalPooling2D, .reduce: return 0
    case .pooling2D(let pooling): return pooling.kind == .average ? product(pooling.poolHeight * pooling.poolWidth) : 0
    default: return 1
    }
  }

  /// The axes a mean or sum adds up (and whether it divides), for the running sum; nil for other steps.
  public static func summedAxes(_ operation: Operation, inputShape: [Int]) -> (axes: [Int], mean: Bool)? {
    switch operation {
    case .globalPooling2D(.average, _) where inputShape.count >= 3:
      return ([inputShape.count - 3, inputShape.count - 2], true)
    case .reduce(let reduction) where reduction.kind == .mean || reduction.kind == .sum:
      guard reduction.axes.allSatisfy({ inputShape.indices.contains($0) }) else { return nil }
      return (reduction.axes, reduction.kind == .mean)
    default: return nil
    }
  }

  /// The sums (or means) over `axes` as a float32 running sum computes them: each output adds its values one
  /// after another, in the input's memory order.
  public static func runningSum(_ input: Tensor, axes: [Int], mean: Bool) -> [Float] {
    let shape = input.shape
    var outputStrides = [Int](repeating: 0, count: shape.count)
    var stride = 1
    for axis in shape.indices.reversed() where !axes.contains(axis) {
      outputStrides[axis] = stride
      stride *= shape[axis]
    }
    var sums = [Float](repeating: 0, count: stride)
    var coordinates = [Int](repeating: 0, count: shape.count)
    var target = 0
    for value in input.values {
      sums[target] += value
      // The next element's coordinates, and where it adds.
      var axis = shape.count - 1
      while axis >= 0 {
        coordinates[axis] += 1
        target += outputStrides[axis]
        if coordinates[axis] < shape[axis] { break }
        target -= outputStrides[axis] * coordinates[axis]
        coordinates[axis] = 0
        axis -= 1
      }
    }
    if mean {
      let count = Float(axes.reduce(1) { $0 * shape[$1] })
      for i in sums.indices { sums[i] /= count }
    }
    return sums
  }

  /// Perturbs one step's result (`step`: its position in the plan, so that each step draws its own noise):
  /// relative to each value, as a rounding is, so that signs and zeros stay (a sum of squares stays positive
  /// for the square root after it, a ReLU's zeros stay zeros).
  func perturb(_ values: inout [Float], size units: Float, step: Int) {
    guard !values.isEmpty, units > 0 else { return }
    let size = Self.unit * units
    var state = seed &+ UInt64(step) &* 0x9E37_79B9_7F4A_7C15
    for i in values.indices where values[i].isFinite {
      state = state &+ 0x9E37_79B9_7F4A_7C15
      var z = state
      z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
      z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
      z ^= z >> 31
      let r = Float(Double(z >> 11) * 0x1p-53) * 2 - 1
      values[i] += size * values[i] * r
    }
  }
}
