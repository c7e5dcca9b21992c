import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Convolutions, fully connected layers, matrix products and normalizations.
  static let linearOperations: [String: MILOperationEntry] = [
    "conv": MILOperationEntry { try $0.define(try $0.convolution()) },
    "conv_transpose": MILOperationEntry { try $0.define(try $0.convolutionTranspose()) },
    "linear": MILOperationEntry { try $0.linear() },
    "matmul": MILOperationEntry { try $0.define(try $0.matmul()) },
    "batch_norm": MILOperationEntry { try $0.define(try $0.batchNorm()) },
    "layer_norm": MILOperationEntry { try $0.define(try $0.layerNorm()) },
    "l2_norm": MILOperationEntry { try $0.l2Norm() },
    "local_response_norm": MILOperationEntry { try $0.define(try $0.localResponseNorm()) },
  ]
}

extension MILProgramImporter {
  /// `local_response_norm` across axis 1 of `[n, C, *D]` (rank 3 or 4): a centred window of `size`
  /// channels (an even size, whose window MIL does not place, is refused).
  mutating func localResponseNorm() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    guard s.count == 3 || s.count == 4 else { throw invalid("needs rank 3 or 4, got \(s)") }
    guard try constant("size") != nil else { throw invalid("required parameter 'size' is missing") }
    let size = try int("size", 0)
    guard size >= 1, size % 2 == 1 else { throw unsupported("size \(size) (an odd size of 1 or more is supported)") }
    let lrn = LocalResponseNormalization(
      size: size, alpha: try float("alpha", 1e-4), beta: try float("beta", 0.75), bias: try float("k", 1))
    return try spatial(x) { _ in .localResponseNormalization(lrn) }
  }

  /// `linear`: `x @ weight^T + bias` with a `[out, in]` weight.
  mutating func linear() throws {
    let x = try tensor("x")
    let weight = try requiredConstant("weight")
    guard weight.type.shape.count == 2, let inputs = shape(x).last, weight.type.shape[1] == inputs else {
      throw invalid("weight \(weight.type.shape) does not fit input \(shape(x))")
    }
    let outputs = weight.type.shape[0]
    try define(
      try add(
        .dense(
          Dense(
            kernel: transposed(weight.asFloats, rows: outputs, columns: inputs),
            bias: try vector("bias", count: outputs))), [x]))
  }

  /// `l2_norm`: each `[D1, D2, D3]` block of the last three axes divided by sqrt(sum of squares + epsilon).
  mutating func l2Norm() throws {
    let x = try tensor("x")
    let s = shape(x)
    guard s.count >= 3 else { throw invalid("needs rank 3 or more, got \(s)") }
    let flat = try reshape(x, to: Array(s.dropLast(3)) + [s.suffix(3).reduce(1, *)])
    let normalized = try add(.l2Normalize(epsilon: try float("epsilon", 1e-6)), [flat], suffix: "__flat")
    try define(try add(.reshape(targetShape: s), [normalized]))
  }
}
