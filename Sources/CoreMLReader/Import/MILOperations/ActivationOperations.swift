import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Element-wise activations (`MILProgramImporter.activation(_:)` gives each its IR function), PReLU and softmax.
  static let activationOperations: [String: MILOperationEntry] = all([
    "relu", "relu6", "sigmoid", "tanh", "softplus", "softsign", "silu", "clip", "sigmoid_hard", "leaky_relu", "elu", "thresholded_relu",
    "gelu", "sqrt", "rsqrt", "exp", "log", "abs", "inverse", "linear_activation", "threshold", "erf",
  ]) { importer in
    try importer.define(try importer.layoutPreserving(.activation(try importer.activation(importer.operation.type)), [try importer.tensor("x")]))
  }.merging([
    "prelu": MILOperationEntry { try $0.prelu() },
    "softmax": MILOperationEntry { importer in
      let x = try importer.tensor("x")
      try importer.define(try importer.add(.softmax(axis: try importer.axis(try importer.int("axis", -1), rank: importer.shape(x).count)), [x]))
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
