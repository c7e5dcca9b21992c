import CProtobufC
import CoreMLCommon
import CoreMLSpec

/// The broadcasting element-wise layers of specification 4 (numpy broadcasting over any rank).
enum NeuralNetworkBroadcastable {
  case add, subtract, multiply, divide, max, min, pow
}

/// The comparisons of specification 4 (1 where true, else 0), of two broadcast inputs.
enum NeuralNetworkComparison {
  case equal, notEqual, lessThan, lessEqual, greaterThan, greaterEqual
}

/// The element-wise functions of specification 4 without parameters.
enum NeuralNetworkElementwiseMath {
  case sin, cos, floor, ceil
}

/// The axis reductions of specification 4.
enum NeuralNetworkAxisReduction {
  case mean, sum, max, min
}

/// Layers of specification 4 (iOS 13) on rank-N blobs, for networks with `EXACT_ARRAY_MAPPING`: each
/// notes that version.
extension NeuralNetworkBuilder {
  private func int64s(_ values: [Int]) -> UnsafeMutablePointer<Int64>? { arena.array(values.map { Int64($0) }) }
  private func flags(_ values: [Bool]) -> UnsafeMutablePointer<protobuf_c_boolean>? {
    arena.array(values.map { $0 ? 1 : 0 })
  }

  /// The product of the last two axes of `a` and `b` (batch axes broadcast), each transposed first when asked.
  mutating func batchedMatMul(_ name: String, a: String, b: String, output: String, transposeA: Bool, transposeB: Bool)
  {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__batched_mat_mul_layer_params__init)
    params.pointee.transposea = transposeA ? 1 : 0
    params.pointee.transposeb = transposeB ? 1 : 0
    append(
      name, inputs: [a, b], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHED_MATMUL,
      \.batchedmatmul, params)
  }

  /// `x · W + bias` over the last axis, for a stored `[rows, columns]` matrix `W` given as `weights` in
  /// column-major order (its transpose row-major: `[columns, rows]`), registered before `bias`.
  mutating func batchedMatMul(
    _ name: String, input: String, output: String, rows: Int, columns: Int, weights: CoreMLWeightValues,
    bias: CoreMLWeightValues?
  ) throws {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__batched_mat_mul_layer_params__init)
    params.pointee.weightmatrixfirstdimension = UInt64(rows)
    params.pointee.weightmatrixseconddimension = UInt64(columns)
    params.pointee.weights = try compressibleWeights(weights, channels: 1, layer: name)
    if let bias {
      params.pointee.hasbias = 1
      params.pointee.bias = try self.weights(bias, layer: name)
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHED_MATMUL,
      \.batchedmatmul, params)
  }

  /// A constant of any rank (row-major values).
  mutating func loadConstantND(_ name: String, output: String, shape: [Int], values: CoreMLWeightValues) throws {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__load_constant_ndlayer_params__init)
    params.pointee.n_shape = shape.count
    params.pointee.shape = uint64s(shape)
    params.pointee.data = try weights(values, layer: name)
    append(
      name, inputs: [], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT_ND,
      \.loadconstantnd, params)
  }

  mutating func broadcastable(_ kind: NeuralNetworkBroadcastable, _ name: String, inputs: [String], output: String) {
    requireSpecificationVersion(4)
    switch kind {
    case .add:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD_BROADCASTABLE,
        \.addbroadcastable,
        arena.message(core_ml__specification__add_broadcastable_layer_params__init))
    case .subtract:
      append(
        name, inputs: inputs, outputs: [output],
        CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SUBTRACT_BROADCASTABLE, \.subtractbroadcastable,
        arena.message(core_ml__specification__subtract_broadcastable_layer_params__init))
    case .multiply:
      append(
        name, inputs: inputs, outputs: [output],
        CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY_BROADCASTABLE, \.multiplybroadcastable,
        arena.message(core_ml__specification__multiply_broadcastable_layer_params__init))
    case .divide:
      append(
        name, inputs: inputs, outputs: [output],
        CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_DIVIDE_BROADCASTABLE, \.dividebroadcastable,
        arena.message(core_ml__specification__divide_broadcastable_layer_params__init))
    case .max:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MAX_BROADCASTABLE,
        \.maxbroadcastable,
        arena.message(core_ml__specification__max_broadcastable_layer_params__init))
    case .min:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MIN_BROADCASTABLE,
        \.minbroadcastable,
        arena.message(core_ml__specification__min_broadcastable_layer_params__init))
    case .pow:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POW_BROADCASTABLE,
        \.powbroadcastable,
        arena.message(core_ml__specification__pow_broadcastable_layer_params__init))
    }
  }

  mutating func comparison(_ kind: NeuralNetworkComparison, _ name: String, inputs: [String], output: String) {
    requireSpecificationVersion(4)
    switch kind {
    case .equal:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EQUAL, \.equal,
        arena.message(core_ml__specification__equal_layer_params__init))
    case .notEqual:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_NOT_EQUAL,
        \.notequal,
        arena.message(core_ml__specification__not_equal_layer_params__init))
    case .lessThan:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LESS_THAN,
        \.lessthan,
        arena.message(core_ml__specification__less_than_layer_params__init))
    case .lessEqual:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LESS_EQUAL,
        \.lessequal,
        arena.message(core_ml__specification__less_equal_layer_params__init))
    case .greaterThan:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GREATER_THAN,
        \.greaterthan,
        arena.message(core_ml__specification__greater_than_layer_params__init))
    case .greaterEqual:
      append(
        name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GREATER_EQUAL,
        \.greaterequal,
        arena.message(core_ml__specification__greater_equal_layer_params__init))
    }
  }

  /// `condition != 0 ? a : b`, broadcast.
  mutating func whereBroadcastable(_ name: String, condition: String, a: String, b: String, output: String) {
    requireSpecificationVersion(4)
    append(
      name, inputs: [condition, a, b], outputs: [output],
      CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_WHERE_BROADCASTABLE, \.wherebroadcastable,
      arena.message(core_ml__specification__where_broadcastable_layer_params__init))
  }

  mutating func transpose(_ name: String, input: String, output: String, axes: [Int]) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__transpose_layer_params__init)
    params.pointee.n_axes = axes.count
    params.pointee.axes = uint64s(axes)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_TRANSPOSE,
      \.transpose, params)
  }

  /// Row-major reshape to `shape`.
  mutating func reshapeStatic(_ name: String, input: String, output: String, shape: [Int]) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__reshape_static_layer_params__init)
    params.pointee.n_targetshape = shape.count
    params.pointee.targetshape = int64s(shape)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE_STATIC,
      \.reshapestatic, params)
  }

  mutating func softmaxND(_ name: String, input: String, output: String, axis: Int) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__softmax_ndlayer_params__init)
    params.pointee.axis = Int64(axis)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX_ND,
      \.softmaxnd, params)
  }

  mutating func concatND(_ name: String, inputs: [String], output: String, axis: Int) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__concat_ndlayer_params__init)
    params.pointee.axis = Int64(axis)
    append(
      name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT_ND,
      \.concatnd, params)
  }

  /// `x[begin ..< end : stride]` on every axis (no masks).
  mutating func sliceStatic(_ name: String, input: String, output: String, begin: [Int], end: [Int], strides: [Int]) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__slice_static_layer_params__init)
    let none = [Bool](repeating: false, count: begin.count)
    params.pointee.n_beginids = begin.count
    params.pointee.beginids = int64s(begin)
    params.pointee.n_beginmasks = none.count
    params.pointee.beginmasks = flags(none)
    params.pointee.n_endids = end.count
    params.pointee.endids = int64s(end)
    params.pointee.n_endmasks = none.count
    params.pointee.endmasks = flags(none)
    params.pointee.n_strides = strides.count
    params.pointee.strides = int64s(strides)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE_STATIC,
      \.slicestatic, params)
  }

  /// Pads every axis by `(before, after)` with `value`.
  mutating func constantPad(_ name: String, input: String, output: String, amounts: [(Int, Int)], value: Float) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__constant_padding_layer_params__init)
    params.pointee.value = value
    params.pointee.n_padamounts = amounts.count * 2
    params.pointee.padamounts = uint64s(amounts.flatMap { [$0.0, $0.1] })
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONSTANT_PAD,
      \.constantpad, params)
  }

  mutating func reduce(
    _ kind: NeuralNetworkAxisReduction, _ name: String, input: String, output: String, axes: [Int], keepDims: Bool
  ) {
    requireSpecificationVersion(4)
    func fill<P>(
      _ params: UnsafeMutablePointer<P>, _ n: WritableKeyPath<P, Int>,
      _ a: WritableKeyPath<P, UnsafeMutablePointer<Int64>?>,
      _ keep: WritableKeyPath<P, protobuf_c_boolean>
    ) -> UnsafeMutablePointer<P> {
      params.pointee[keyPath: n] = axes.count
      params.pointee[keyPath: a] = int64s(axes)
      params.pointee[keyPath: keep] = keepDims ? 1 : 0
      return params
    }
    switch kind {
    case .mean:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MEAN,
        \.reducemean,
        fill(arena.message(core_ml__specification__reduce_mean_layer_params__init), \.n_axes, \.axes, \.keepdims))
    case .sum:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_SUM,
        \.reducesum,
        fill(arena.message(core_ml__specification__reduce_sum_layer_params__init), \.n_axes, \.axes, \.keepdims))
    case .max:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MAX,
        \.reducemax,
        fill(arena.message(core_ml__specification__reduce_max_layer_params__init), \.n_axes, \.axes, \.keepdims))
    case .min:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MIN,
        \.reducemin,
        fill(arena.message(core_ml__specification__reduce_min_layer_params__init), \.n_axes, \.axes, \.keepdims))
    }
  }

  /// Normalizes over the last `normalizedShape.count` axes, then `gamma * x + beta` (both required),
  /// registered gamma, beta.
  mutating func layerNormalization(
    _ name: String, input: String, output: String, normalizedShape: [Int], epsilon: Float, gamma: CoreMLWeightValues,
    beta: CoreMLWeightValues
  ) throws {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__layer_normalization_layer_params__init)
    params.pointee.n_normalizedshape = normalizedShape.count
    params.pointee.normalizedshape = int64s(normalizedShape)
    params.pointee.eps = epsilon
    params.pointee.gamma = try weights(gamma, layer: name)
    params.pointee.beta = try weights(beta, layer: name)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LAYER_NORMALIZATION,
      \.layernormalization, params)
  }

  /// `min(max(x, minimum), maximum)`.
  mutating func clip(_ name: String, input: String, output: String, minimum: Float, maximum: Float) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__clip_layer_params__init)
    params.pointee.minval = minimum
    params.pointee.maxval = maximum
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CLIP, \.clip, params
    )
  }

  /// Element-wise `sin`, `cos`, `floor` or `ceil`: layers without parameters.
  mutating func elementwiseMath(_ kind: NeuralNetworkElementwiseMath, _ name: String, input: String, output: String) {
    requireSpecificationVersion(4)
    switch kind {
    case .sin:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SIN, \.sin,
        arena.message(core_ml__specification__sin_layer_params__init))
    case .cos:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_COS, \.cos,
        arena.message(core_ml__specification__cos_layer_params__init))
    case .floor:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLOOR, \.floor,
        arena.message(core_ml__specification__floor_layer_params__init))
    case .ceil:
      append(
        name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CEIL, \.ceil,
        arena.message(core_ml__specification__ceil_layer_params__init))
    }
  }

  /// GELU, exact (erf) or with the tanh approximation.
  mutating func gelu(_ name: String, input: String, output: String, tanhApproximation: Bool) {
    requireSpecificationVersion(4)
    let params = arena.message(core_ml__specification__gelu_layer_params__init)
    params.pointee.mode =
      tanhApproximation
      ? CORE_ML__SPECIFICATION__GELU_LAYER_PARAMS__GELU_MODE__TANH_APPROXIMATION
      : CORE_ML__SPECIFICATION__GELU_LAYER_PARAMS__GELU_MODE__EXACT
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GELU, \.gelu, params
    )
  }
}
