import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Each element-wise activation with the IR function it computes, its parameters read from the
  /// operation with coremltools' defaults.
  static let activationFunctions: [String: (MILProgramImporter) throws -> Activation] = [
    "relu": { _ in .relu },
    "relu6": { _ in .clippedReLU(maxValue: 6, negativeSlope: 0, threshold: 0) },
    "sigmoid": { _ in .sigmoid },
    "tanh": { _ in .tanh },
    "softplus": { _ in .softplus },
    "softsign": { _ in .softsign },
    "silu": { _ in .swish },
    "clip": { importer in
      let (low, high) = (try importer.float("alpha"), try importer.float("beta"))
      guard low <= high else { throw importer.invalid("needs alpha <= beta, got \(low) and \(high)") }
      return .clip(min: low, max: high)
    },
    "sigmoid_hard": { .hardSigmoid(slope: try $0.float("alpha", 0.2), offset: try $0.float("beta", 0.5)) },
    "leaky_relu": { .leakyReLU(alpha: try $0.float("alpha", 0.01)) },
    "elu": { .elu(alpha: try $0.float("alpha", 1)) },
    "thresholded_relu": { .thresholdedReLU(theta: try $0.float("alpha", 1)) },
    "gelu": { importer in
      switch try importer.string("mode", "EXACT") {
      case "EXACT": return .gelu(approximate: false)
      case "TANH_APPROXIMATION": return .gelu(approximate: true)
      case let mode: throw importer.unsupported("mode '\(mode)' (EXACT and TANH_APPROXIMATION are supported)")
      }
    },
    "linear_activation": { .linear(scale: try $0.float("alpha"), offset: try $0.float("beta", 0)) },
    "threshold": { .unary(UnaryFunction(kind: .threshold, alpha: try $0.float("alpha"))) },
    "sqrt": { _ in .unary(UnaryFunction(kind: .sqrt)) },
    "rsqrt": { .unary(UnaryFunction(kind: .rsqrt, epsilon: try $0.float("epsilon", 1e-12))) },
    "inverse": { .unary(UnaryFunction(kind: .inverse, epsilon: try $0.float("epsilon", 1e-4))) },
    "exp": { _ in .unary(UnaryFunction(kind: .exp)) },
    "erf": { _ in .erf },
    "sin": { _ in .sin },
    "cos": { _ in .cos },
    "floor": { _ in .floor },
    "ceil": { _ in .ceil },
    "log": { .unary(UnaryFunction(kind: .log, epsilon: try $0.float("epsilon", .leastNonzeroMagnitude))) },
    "abs": { _ in .unary(UnaryFunction(kind: .abs)) },
  ]

  /// Element-wise activations (`activationFunctions`), PReLU and softmax.
  static let activationOperations: [String: MILOperationEntry] = activationFunctions.mapValues { function in
    MILOperationEntry { importer in
      try importer.define(
        try importer.layoutPreserving(.activation(try function(importer)), [try importer.tensor("x")]))
    }
  }.merging([
    "prelu": MILOperationEntry { try $0.prelu() },
    "softmax": MILOperationEntry { importer in
      let x = try importer.tensor("x")
      try importer.define(
        try importer.add(
          .softmax(axis: try importer.axis(try importer.int("axis", -1), rank: importer.shape(x).count)), [x]))
    },
  ]) { first, _ in first }
}

extension MILProgramImporter {
  /// `prelu`: one slope per channel of a `[N, C, ...]` tensor of rank 3 to 5 (`[B, C, H]`, `[B, C, H, W]`,
  /// `[B, C, D, H, W]`, as coremltools documents the operation).
  mutating func prelu() throws {
    let x = try tensor("x")
    let alpha = try requiredConstant("alpha")
    let rank = shape(x).count
    guard (3...5).contains(rank), alpha.type.shape.count == 1, alpha.count == shape(x)[1] else {
      throw invalid("alpha \(alpha.type.shape) must hold one value per channel of \(shape(x)) (rank 3 to 5)")
    }
    let activation = Activation.parametricReLU(alpha: Constant(shape: [alpha.count], values: alpha.asFloats))
    guard rank == 5 else {
      try define(try spatial(x) { _ in .activation(activation) })
      return
    }
    // Channels last for the slopes, and back.
    let last = try add(.permute(order: [0, 2, 3, 4, 1]), [x], suffix: "__channels_last")
    let activated = try add(.activation(activation), [last], suffix: "__prelu")
    try define(try add(.permute(order: [0, 4, 1, 2, 3]), [activated]))
  }
}
