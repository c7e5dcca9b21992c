import CoreMLCommon
import CoreMLProgramWriter
import ModelIR

/// Writes a graph that classic rank-5 layers cannot hold (a product of two computed tensors, as
/// attention computes) as a rank-N network of specification 4 (iOS 13): `EXACT_ARRAY_MAPPING` and
/// `RANK4_IMAGE_MAPPING`, every blob of the shape the ML Program writer gives the value (`[1] + S`,
/// images and spatial values `[1, C, H, W]`).
///
/// The operations are the ML Program emitter's float32 ones (`MILRecordedProgram`), each lowered to the
/// specification-4 layer Apple documents for the same computation, as coremltools' neural-network backend
/// lowers MIL; constants become the layers' weights, or `loadConstantND` blobs where a layer takes them as
/// inputs. An operation with no such layer is refused by name.
struct RankNLowering {
  /// Whether the graph needs rank-N layers: a product of two computed tensors.
  static func isNeeded(_ graph: Graph) -> Bool {
    graph.nodes.contains { if case .matMul = $0.operation { return true } else { return false } }
  }

  private(set) var builder: NeuralNetworkBuilder
  private(set) var groups: [StreamedSpecification.LayerGroup] = []
  /// `const` values by MIL name.
  private var constants: [String: (values: CoreMLWeightValues, shape: [Int])] = [:]
  /// Constant names already loaded as blobs.
  private var loaded: [String: String] = [:]
  /// Blob names renamed on the way (a classifier's probabilities, computed `[1, N]` and declared `[N]`).
  private let renamed: [String: String]
  private var used: Set<String> = []
  /// The MIL operation being lowered, for errors.
  private var current = ""

  init(
    arena: MessageArena, precision: WeightPrecision, renamed: [String: String], compression: WeightCompression? = nil
  ) {
    builder = NeuralNetworkBuilder(arena: arena, precision: precision)
    builder.compression = compression
    builder.requireSpecificationVersion(4)
    self.renamed = renamed
  }

  mutating func lower(_ program: MILRecordedProgram) throws {
    for input in program.inputs { used.insert(input.name) }
    for record in program.records { for output in record.outputs { used.insert(output.name) } }
    for record in program.records {
      let (firstLayer, firstWeight) = (builder.layers.count, builder.deferredWeights.count)
      current = "\(record.type) '\(record.outputs.first?.name ?? "")'"
      try lower(record)
      if builder.layers.count > firstLayer {
        groups.append(
          StreamedSpecification.LayerGroup(
            layers: Array(builder.layers[firstLayer...]), weights: Array(builder.deferredWeights[firstWeight...])))
      }
    }
  }

  // MARK: Parameters

  private func unsupported(_ detail: String) -> CoreMLWriterError {
    .unsupportedOperation(layer: current, detail: "\(detail) (rank-N classic layers)")
  }

  private func param(_ record: MILRecord, _ key: String) throws -> MILParam {
    guard let value = record.param(key) else { throw unsupported("no parameter '\(key)'") }
    return value
  }

  private func tensor(_ record: MILRecord, _ key: String) throws -> MILTensor {
    guard case .tensor(let t) = try param(record, key) else { throw unsupported("'\(key)' is not a tensor") }
    return t
  }

  private func ints(_ record: MILRecord, _ key: String) throws -> [Int] {
    switch try param(record, key) {
    case .ints(let v): return v
    case .int(let v): return [v]
    default: throw unsupported("'\(key)' is not a list of integers")
    }
  }

  private func int(_ record: MILRecord, _ key: String) throws -> Int {
    guard case .int(let v) = try param(record, key) else { throw unsupported("'\(key)' is not an integer") }
    return v
  }

  private func bool(_ record: MILRecord, _ key: String, default value: Bool) throws -> Bool {
    guard let p = record.param(key) else { return value }
    guard case .bool(let v) = p else { throw unsupported("'\(key)' is not a boolean") }
    return v
  }

  private func string(_ record: MILRecord, _ key: String) throws -> String {
    guard case .string(let v) = try param(record, key) else { throw unsupported("'\(key)' is not a string") }
    return v
  }

  /// A float constant parameter: its values in row-major order and its shape.
  private func constant(_ param: MILParam?) -> (values: CoreMLWeightValues, shape: [Int])? {
    switch param {
    case .scalar(let v, _): return (.values([v]), [])
    case .floats(let v, let shape, _): return (.values(v), shape)
    case .weights(let w, let shape, _): return (w, shape)
    case .tensor(let t): return constants[t.name]
    default: return nil
    }
  }

  private func scalar(_ record: MILRecord, _ key: String) throws -> Float {
    guard let c = constant(record.param(key)), c.values.count == 1 else {
      throw unsupported("'\(key)' is not a float scalar")
    }
    return c.values.materialized()[0]
  }

  private mutating func fresh(_ base: String) -> String {
    if used.insert(base).inserted { return base }
    var index = 1
    while !used.insert("\(base)_\(index)").inserted { index += 1 }
    return "\(base)_\(index)"
  }

  /// The blob holding `param`: a computed tensor's, or a constant loaded as a `loadConstantND` blob.
  private mutating func blob(_ param: MILParam?, label: String) throws -> String {
    if case .tensor(let t) = param, constants[t.name] == nil { return renamed[t.name] ?? t.name }
    guard let value = constant(param) else { throw unsupported("'\(label)' is neither a tensor nor a float constant") }
    if case .tensor(let t) = param, let blob = loaded[t.name] { return blob }
    let name = fresh(label)
    try builder.loadConstantND(name, output: name, shape: value.shape.isEmpty ? [1] : value.shape, values: value.values)
    if case .tensor(let t) = param { loaded[t.name] = name }
    return name
  }

  /// The blob of the operation's `x`.
  private mutating func input(_ record: MILRecord) throws -> String {
    try blob(record.param("x"), label: output(record) + "_x")
  }

  private func output(_ record: MILRecord) -> String {
    let name = record.outputs[0].name
    return renamed[name] ?? name
  }

  // MARK: Operations

  /// Each MIL operation's lowering by operation type, as the ML Program writer keys its emitters: an
  /// operation not in the table has no specification-4 layer and is refused by name.
  private static let lowerings: [String: (inout RankNLowering, MILRecord, String) throws -> Void] = [
    "const": { try $0.lowerConst($1, $2) },
    "identity": { try $0.lowerIdentity($1, $2) },
    "cast": { try $0.lowerCast($1, $2) },
    "relu": { try $0.lowerRelu($1, $2) },
    "sigmoid": { try $0.lowerSigmoid($1, $2) },
    "tanh": { try $0.lowerTanh($1, $2) },
    "softplus": { try $0.lowerSoftplus($1, $2) },
    "softsign": { try $0.lowerSoftsign($1, $2) },
    "elu": { try $0.lowerElu($1, $2) },
    "leaky_relu": { try $0.lowerLeakyRelu($1, $2) },
    "prelu": { try $0.lowerPrelu($1, $2) },
    "linear_activation": { try $0.lowerLinearActivation($1, $2) },
    "clip": { try $0.lowerClip($1, $2) },
    "sigmoid_hard": { try $0.lowerSigmoidHard($1, $2) },
    "gelu": { try $0.lowerGelu($1, $2) },
    "silu": { try $0.lowerSilu($1, $2) },
    "exp": { try $0.lowerExp($1, $2) },
    "log": { try $0.lowerLog($1, $2) },
    "sqrt": { try $0.lowerSqrt($1, $2) },
    "abs": { try $0.lowerAbs($1, $2) },
    "rsqrt": { try $0.lowerRsqrt($1, $2) },
    "sin": { try $0.lowerElementwiseMath(.sin, $1, $2) },
    "cos": { try $0.lowerElementwiseMath(.cos, $1, $2) },
    "floor": { try $0.lowerElementwiseMath(.floor, $1, $2) },
    "ceil": { try $0.lowerElementwiseMath(.ceil, $1, $2) },
    "add": { try $0.lowerBroadcastable($1, $2) },
    "sub": { try $0.lowerBroadcastable($1, $2) },
    "mul": { try $0.lowerBroadcastable($1, $2) },
    "real_div": { try $0.lowerBroadcastable($1, $2) },
    "maximum": { try $0.lowerBroadcastable($1, $2) },
    "minimum": { try $0.lowerBroadcastable($1, $2) },
    "pow": { try $0.lowerBroadcastable($1, $2) },
    "greater": { try $0.lowerComparison($1, $2) },
    "greater_equal": { try $0.lowerComparison($1, $2) },
    "less": { try $0.lowerComparison($1, $2) },
    "less_equal": { try $0.lowerComparison($1, $2) },
    "equal": { try $0.lowerComparison($1, $2) },
    "not_equal": { try $0.lowerComparison($1, $2) },
    "select": { try $0.lowerSelect($1, $2) },
    "linear": { try $0.lowerLinear($1, $2) },
    "matmul": { try $0.lowerMatmul($1, $2) },
    "conv": { try $0.lowerConv($1, $2) },
    "conv_transpose": { try $0.lowerConvTranspose($1, $2) },
    "upsample_nearest_neighbor": { try $0.lowerUpsample($1, $2) },
    "upsample_bilinear": { try $0.lowerUpsample($1, $2) },
    "resize_bilinear": { try $0.lowerResizeBilinear($1, $2) },
    "max_pool": { try $0.lowerPooling($1, $2) },
    "avg_pool": { try $0.lowerPooling($1, $2) },
    "batch_norm": { try $0.lowerBatchNorm($1, $2) },
    "layer_norm": { try $0.lowerLayerNorm($1, $2) },
    "reduce_mean": { try $0.lowerReduction($1, $2) },
    "reduce_sum": { try $0.lowerReduction($1, $2) },
    "reduce_max": { try $0.lowerReduction($1, $2) },
    "reduce_min": { try $0.lowerReduction($1, $2) },
    "softmax": { try $0.lowerSoftmax($1, $2) },
    "reshape": { try $0.lowerReshape($1, $2) },
    "transpose": { try $0.lowerTranspose($1, $2) },
    "concat": { try $0.lowerConcat($1, $2) },
    "slice_by_index": { try $0.lowerSliceByIndex($1, $2) },
    "pad": { try $0.lowerPad($1, $2) },
  ]

  /// The MIL operation types the lowering writes.
  static var loweredOperations: Set<String> { Set(lowerings.keys) }

  private mutating func lower(_ r: MILRecord) throws {
    guard let lowering = Self.lowerings[r.type] else { throw unsupported("MIL operation \(r.type) has no lowering") }
    try lowering(&self, r, output(r))
  }

  /// `const`.
  private mutating func lowerConst(_ r: MILRecord, _ out: String) throws {
    guard let value = constant(r.param("val")) else { throw unsupported("a constant that is not a float tensor") }
    constants[r.outputs[0].name] = value
  }

  /// `identity`.
  private mutating func lowerIdentity(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.linear(alpha: 1, beta: 0), out, input: try input(r), output: out)
  }

  /// `cast`.
  private mutating func lowerCast(_ r: MILRecord, _ out: String) throws {
    let type = try string(r, "dtype")
    guard type == "fp32" || type == "fp16" else { throw unsupported("a cast to \(type)") }
    try builder.activation(.linear(alpha: 1, beta: 0), out, input: try input(r), output: out)
  }

  /// `relu` (element-wise functions).
  private mutating func lowerRelu(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.relu, out, input: try input(r), output: out)
  }

  /// `sigmoid`.
  private mutating func lowerSigmoid(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.sigmoid, out, input: try input(r), output: out)
  }

  /// `tanh`.
  private mutating func lowerTanh(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.tanh, out, input: try input(r), output: out)
  }

  /// `softplus`.
  private mutating func lowerSoftplus(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.softplus, out, input: try input(r), output: out)
  }

  /// `softsign`.
  private mutating func lowerSoftsign(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.softsign, out, input: try input(r), output: out)
  }

  /// `elu`.
  private mutating func lowerElu(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.elu(alpha: try scalar(r, "alpha")), out, input: try input(r), output: out)
  }

  /// `leaky_relu`.
  private mutating func lowerLeakyRelu(_ r: MILRecord, _ out: String) throws {
    try builder.activation(.leakyReLU(alpha: try scalar(r, "alpha")), out, input: try input(r), output: out)
  }

  /// `prelu` of a `[B, C, H, W]` tensor: the classic PReLU's slopes run along axis -3, the channels here (MIL's
  /// along axis 1, which a tensor of another rank would not match).
  private mutating func lowerPrelu(_ r: MILRecord, _ out: String) throws {
    guard r.outputs[0].shape.count == 4, let alpha = constant(r.param("alpha")), alpha.shape.count == 1,
      alpha.shape[0] == r.outputs[0].shape[1]
    else { throw unsupported("prelu of a tensor of rank \(r.outputs[0].shape.count) (rank 4, one slope per channel)") }
    try builder.activation(.preLU(alpha: alpha.values), out, input: try input(r), output: out)
  }

  /// `linear_activation`.
  private mutating func lowerLinearActivation(_ r: MILRecord, _ out: String) throws {
    try builder.activation(
      .linear(alpha: try scalar(r, "alpha"), beta: try scalar(r, "beta")), out, input: try input(r), output: out)
  }

  /// `clip`.
  private mutating func lowerClip(_ r: MILRecord, _ out: String) throws {
    builder.clip(out, input: try input(r), output: out, minimum: try scalar(r, "alpha"), maximum: try scalar(r, "beta"))
  }

  /// `sigmoid_hard`.
  private mutating func lowerSigmoidHard(_ r: MILRecord, _ out: String) throws {
    try builder.activation(
      .sigmoidHard(alpha: try scalar(r, "alpha"), beta: try scalar(r, "beta")), out, input: try input(r), output: out)
  }

  /// `gelu`.
  private mutating func lowerGelu(_ r: MILRecord, _ out: String) throws {
    let mode = try string(r, "mode")
    guard mode == "EXACT" || mode == "TANH_APPROXIMATION" else { throw unsupported("gelu mode \(mode)") }
    builder.gelu(out, input: try input(r), output: out, tanhApproximation: mode == "TANH_APPROXIMATION")
  }

  /// `silu`.
  private mutating func lowerSilu(_ r: MILRecord, _ out: String) throws {
    let input = try input(r)
    let gate = fresh(out + "_sigmoid")
    try builder.activation(.sigmoid, gate, input: input, output: gate)
    builder.broadcastable(.multiply, out, inputs: [input, gate], output: out)
  }

  /// `exp`.
  private mutating func lowerExp(_ r: MILRecord, _ out: String) throws {
    builder.unary(.exp, out, input: try input(r), output: out)
  }

  /// `sin`, `cos`, `floor`, `ceil`.
  private mutating func lowerElementwiseMath(_ kind: NeuralNetworkElementwiseMath, _ r: MILRecord, _ out: String)
    throws
  {
    builder.elementwiseMath(kind, out, input: try input(r), output: out)
  }

  /// `log`.
  private mutating func lowerLog(_ r: MILRecord, _ out: String) throws {
    builder.unary(.log, out, input: try input(r), output: out, epsilon: .leastNonzeroMagnitude)
  }

  /// `sqrt`.
  private mutating func lowerSqrt(_ r: MILRecord, _ out: String) throws {
    builder.unary(.sqrt, out, input: try input(r), output: out)
  }

  /// `abs`.
  private mutating func lowerAbs(_ r: MILRecord, _ out: String) throws {
    builder.unary(.abs, out, input: try input(r), output: out)
  }

  /// `rsqrt`.
  private mutating func lowerRsqrt(_ r: MILRecord, _ out: String) throws {
    // Apple reads an epsilon of 0 as 1e-6 ([rule UNARY-DEFAULTS]): a zero epsilon is written as the least float.
    let epsilon = r.param("epsilon") == nil ? 1e-12 : try scalar(r, "epsilon")
    builder.unary(
      .rsqrt, out, input: try input(r), output: out, epsilon: epsilon == 0 ? .leastNonzeroMagnitude : epsilon)
  }

  /// `add`, `sub`, `mul`, `real_div`, `maximum`, `minimum`, `pow` (broadcasting binary operations).
  private mutating func lowerBroadcastable(_ r: MILRecord, _ out: String) throws {
    let kinds: [String: NeuralNetworkBroadcastable] = [
      "add": .add, "sub": .subtract, "mul": .multiply, "real_div": .divide, "maximum": .max, "minimum": .min,
      "pow": .pow,
    ]
    let a = try input(r)
    let b = try blob(r.param("y"), label: out + "_y")
    builder.broadcastable(kinds[r.type]!, out, inputs: [a, b], output: out)
  }

  /// `greater`, `greater_equal`, `less`, `less_equal`, `equal`, `not_equal`.
  private mutating func lowerComparison(_ r: MILRecord, _ out: String) throws {
    let kinds: [String: NeuralNetworkComparison] = [
      "greater": .greaterThan, "greater_equal": .greaterEqual, "less": .lessThan, "less_equal": .lessEqual,
      "equal": .equal, "not_equal": .notEqual,
    ]
    let a = try input(r)
    let b = try blob(r.param("y"), label: out + "_y")
    builder.comparison(kinds[r.type]!, out, inputs: [a, b], output: out)
  }

  /// `select`.
  private mutating func lowerSelect(_ r: MILRecord, _ out: String) throws {
    let condition = try blob(r.param("cond"), label: out + "_cond")
    let a = try blob(r.param("a"), label: out + "_a")
    let b = try blob(r.param("b"), label: out + "_b")
    builder.whereBroadcastable(out, condition: condition, a: a, b: b, output: out)
  }

  /// `linear` (products).
  private mutating func lowerLinear(_ r: MILRecord, _ out: String) throws {
    // MIL's weight [out, in] row-major is the stored [in, out] matrix in column-major order.
    guard let weight = constant(r.param("weight")), weight.shape.count == 2 else {
      throw unsupported("a linear weight that is not a constant matrix")
    }
    let bias = constant(r.param("bias"))
    try builder.batchedMatMul(
      out, input: try input(r), output: out, rows: weight.shape[1], columns: weight.shape[0], weights: weight.values,
      bias: bias?.values)
  }

  /// `matmul`.
  private mutating func lowerMatmul(_ r: MILRecord, _ out: String) throws {
    let transposeX = try bool(r, "transpose_x", default: false)
    let transposeY = try bool(r, "transpose_y", default: false)
    if let weight = constant(r.param("y")), weight.shape.count == 2, !transposeX, !transposeY {
      // A constant [in, out] right operand: stored in column-major order, its transpose row-major.
      let (rows, columns) = (weight.shape[0], weight.shape[1])
      try builder.batchedMatMul(
        out, input: try input(r), output: out, rows: rows, columns: columns,
        weights: .transposed(weight.values.materialized(), rows: rows, columns: columns), bias: nil)
    } else {
      let a = try input(r)
      let b = try blob(r.param("y"), label: out + "_y")
      guard r.outputs[0].shape.count >= 2, (try tensorRank(r.param("x"))) >= 2, (try tensorRank(r.param("y"))) >= 2
      else {
        throw unsupported("a product of vectors")
      }
      builder.batchedMatMul(out, a: a, b: b, output: out, transposeA: transposeX, transposeB: transposeY)
    }
  }

  /// `conv` (spatial operations on [1, c, h, w]).
  private mutating func lowerConv(_ r: MILRecord, _ out: String) throws {
    guard let weight = constant(r.param("weight")), weight.shape.count == 4 else {
      throw unsupported("a convolution weight that is not a constant [O, I, kh, kw]")
    }
    try requireRank4(r)
    let pad = try customPad(r)
    try builder.convolution(
      out, input: try input(r), output: out, outputChannels: weight.shape[0], kernelChannels: weight.shape[1],
      groups: try int(r, "groups"),
      kernelSize: [weight.shape[2], weight.shape[3]], stride: try ints(r, "strides"),
      dilation: try ints(r, "dilations"),
      padding: pad, weights: weight.values, bias: constant(r.param("bias"))?.values)
  }

  /// `conv_transpose`.
  private mutating func lowerConvTranspose(_ r: MILRecord, _ out: String) throws {
    // The deconvolution layer with explicit amounts crops them off the full scatter:
    // H_out = (H_in - 1) * stride + K - (top + bottom) ([rule VALID-PADDING]).
    guard let weight = constant(r.param("weight")), weight.shape.count == 4 else {
      throw unsupported("a weight that is not a constant [I, O, kh, kw]")
    }
    try requireRank4(r)
    guard try int(r, "groups") == 1, try ints(r, "dilations").allSatisfy({ $0 == 1 }) else {
      throw unsupported("a grouped or dilated transposed convolution")
    }
    guard r.param("output_shape") == nil else { throw unsupported("conv_transpose with output_shape") }
    try builder.convolution(
      out, input: try input(r), output: out, outputChannels: weight.shape[1], kernelChannels: weight.shape[0],
      groups: 1,
      kernelSize: [weight.shape[2], weight.shape[3]], stride: try ints(r, "strides"), dilation: [1, 1],
      padding: try customPad(r), weights: weight.values, bias: constant(r.param("bias"))?.values, deconvolution: true)
  }

  /// `upsample_nearest_neighbor`, `upsample_bilinear`.
  private mutating func lowerUpsample(_ r: MILRecord, _ out: String) throws {
    // The upsample layer scales the last two axes of its input by whole factors (rank 3 and up).
    try requireRank4(r)
    let factors = [try int(r, "scale_factor_height"), try int(r, "scale_factor_width")]
    let mode: NeuralNetworkUpsampleMode =
      r.type == "upsample_nearest_neighbor"
      ? .nearestNeighbor
      : try bool(r, "align_corners", default: false) ? .bilinearAlignCornersTrue : .bilinearAlignCornersFalse
    builder.upsample(out, input: try input(r), output: out, scalingFactor: factors, mode: mode)
  }

  /// `resize_bilinear`.
  private mutating func lowerResizeBilinear(_ r: MILRecord, _ out: String) throws {
    // Only the DEFAULT grid the ML Program writer uses (i / f for whole factors f): the layer's DEFAULT mode.
    try requireRank4(r)
    guard try string(r, "sampling_mode") == "DEFAULT" else {
      throw unsupported("resize_bilinear sampling other than DEFAULT")
    }
    let inShape = try tensorOf(r.param("x")).shape
    let outShape = r.outputs[0].shape
    let (h, w) = (inShape[inShape.count - 2], inShape[inShape.count - 1])
    guard h > 0, w > 0, outShape[outShape.count - 2] % h == 0, outShape[outShape.count - 1] % w == 0 else {
      throw unsupported("resize_bilinear by factors that are not whole")
    }
    builder.upsample(
      out, input: try input(r), output: out,
      scalingFactor: [outShape[outShape.count - 2] / h, outShape[outShape.count - 1] / w], mode: .bilinearDefault)
  }

  /// `max_pool`, `avg_pool`.
  private mutating func lowerPooling(_ r: MILRecord, _ out: String) throws {
    try requireRank4(r)
    guard !(try bool(r, "ceil_mode", default: false)) else { throw unsupported("pooling with ceil_mode") }
    let excludes = try bool(r, "exclude_padding_from_average", default: false)
    builder.pooling(
      r.type == "max_pool" ? .max : .average, out, input: try input(r), output: out,
      kernelSize: try ints(r, "kernel_sizes"),
      stride: try ints(r, "strides"), padding: try customPad(r), global: false, averageExcludesPadding: excludes)
  }

  /// `batch_norm`.
  private mutating func lowerBatchNorm(_ r: MILRecord, _ out: String) throws {
    // The layer normalizes axis -3 of its input: [1, C, D...] goes through [1, C, product of the middle axes, last axis].
    let shape = try tensorOf(r.param("x")).shape
    guard shape.count >= 3 else { throw unsupported("batch_norm of a \(shape) tensor") }
    guard let mean = constant(r.param("mean")), let variance = constant(r.param("variance")) else {
      throw unsupported("batch_norm statistics that are not constants")
    }
    let c = mean.values.count
    let gamma = constant(r.param("gamma"))?.values ?? .values([Float](repeating: 1, count: c))
    let beta = constant(r.param("beta"))?.values ?? .values([Float](repeating: 0, count: c))
    let folded =
      shape.count == 3
      ? [1, shape[1], shape[2], 1] : [1, shape[1], shape[2..<(shape.count - 1)].reduce(1, *), shape.last!]
    var source = try input(r)
    let direct = folded == shape
    if !direct {
      let name = fresh(out + "_rank4")
      builder.reshapeStatic(name, input: source, output: name, shape: folded)
      source = name
    }
    let normalized = direct ? out : fresh(out + "_normalized")
    try builder.batchnorm(
      normalized, input: source, output: normalized, channels: c, epsilon: try scalar(r, "epsilon"), gamma: gamma,
      beta: beta, mean: mean.values,
      variance: variance.values)
    if !direct { builder.reshapeStatic(out, input: normalized, output: out, shape: shape) }
  }

  /// `layer_norm` (normalizations and reductions).
  private mutating func lowerLayerNorm(_ r: MILRecord, _ out: String) throws {
    let shape = try tensorOf(r.param("x")).shape
    let axes = try ints(r, "axes").map { $0 < 0 ? $0 + shape.count : $0 }
    guard axes == Array((shape.count - axes.count)..<shape.count) else {
      throw unsupported("layer_norm over axes \(axes) that are not the last ones")
    }
    let normalized = Array(shape.suffix(axes.count))
    let count = normalized.reduce(1, *)
    let gamma = constant(r.param("gamma"))?.values ?? .values([Float](repeating: 1, count: count))
    let beta = constant(r.param("beta"))?.values ?? .values([Float](repeating: 0, count: count))
    try builder.layerNormalization(
      out, input: try input(r), output: out, normalizedShape: normalized, epsilon: try scalar(r, "epsilon"),
      gamma: gamma, beta: beta)
  }

  /// `reduce_mean`, `reduce_sum`, `reduce_max`, `reduce_min`.
  private mutating func lowerReduction(_ r: MILRecord, _ out: String) throws {
    let kinds: [String: NeuralNetworkAxisReduction] = [
      "reduce_mean": .mean, "reduce_sum": .sum, "reduce_max": .max, "reduce_min": .min,
    ]
    builder.reduce(
      kinds[r.type]!, out, input: try input(r), output: out, axes: try ints(r, "axes"),
      keepDims: try bool(r, "keep_dims", default: false))
  }

  /// `softmax`.
  private mutating func lowerSoftmax(_ r: MILRecord, _ out: String) throws {
    builder.softmaxND(out, input: try input(r), output: out, axis: try int(r, "axis"))
  }

  /// `reshape` (shapes).
  private mutating func lowerReshape(_ r: MILRecord, _ out: String) throws {
    builder.reshapeStatic(out, input: try input(r), output: out, shape: r.outputs[0].shape)
  }

  /// `transpose`.
  private mutating func lowerTranspose(_ r: MILRecord, _ out: String) throws {
    builder.transpose(out, input: try input(r), output: out, axes: try ints(r, "perm"))
  }

  /// `concat`.
  private mutating func lowerConcat(_ r: MILRecord, _ out: String) throws {
    guard case .tensors(let values) = try param(r, "values") else { throw unsupported("concat values") }
    guard !(try bool(r, "interleave", default: false)) else { throw unsupported("interleaved concat") }
    let inputs = try values.enumerated().map { try blob(.tensor($0.element), label: "\(out)_\($0.offset)") }
    builder.concatND(out, inputs: inputs, output: out, axis: try int(r, "axis"))
  }

  /// `slice_by_index`.
  private mutating func lowerSliceByIndex(_ r: MILRecord, _ out: String) throws {
    guard r.param("begin_mask") == nil, r.param("end_mask") == nil, r.param("squeeze_mask") == nil else {
      throw unsupported("slice masks")
    }
    let begin = try ints(r, "begin")
    let end = try ints(r, "end")
    let stride = r.param("stride") == nil ? [Int](repeating: 1, count: begin.count) : try ints(r, "stride")
    builder.sliceStatic(out, input: try input(r), output: out, begin: begin, end: end, strides: stride)
  }

  /// `pad`.
  private mutating func lowerPad(_ r: MILRecord, _ out: String) throws {
    guard try string(r, "mode") == "constant" else { throw unsupported("a pad that is not constant") }
    let amounts = try ints(r, "pad")
    let rank = try tensorOf(r.param("x")).shape.count
    // MIL pads the last amounts.count / 2 axes; the constant pad layer takes every axis.
    let pairs =
      [(Int, Int)](repeating: (0, 0), count: rank - amounts.count / 2)
      + stride(from: 0, to: amounts.count, by: 2).map { (amounts[$0], amounts[$0 + 1]) }
    builder.constantPad(
      out, input: try input(r), output: out, amounts: pairs,
      value: r.param("constant_val") == nil ? 0 : try scalar(r, "constant_val"))
  }

  private func tensorOf(_ param: MILParam?) throws -> MILTensor {
    guard case .tensor(let t) = param else { throw unsupported("an operand that is not a tensor") }
    return t
  }

  private func tensorRank(_ param: MILParam?) throws -> Int {
    if case .tensor(let t) = param { return t.shape.count }
    guard let c = constant(param) else { throw unsupported("an operand that is not a tensor") }
    return c.shape.count
  }

  private func requireRank4(_ r: MILRecord) throws {
    guard try tensorOf(r.param("x")).shape.count == 4 else {
      throw unsupported("\(r.type) of a tensor that is not [1, C, H, W]")
    }
  }

  /// MIL's `pad_type` with `pad` `[top, bottom, left, right]` as the layers' padding.
  private func customPad(_ r: MILRecord) throws -> NeuralNetworkPadding {
    switch try string(r, "pad_type") {
    case "valid": return .valid
    case "same": return .same
    case "custom":
      let pad = try ints(r, "pad")
      guard pad.count == 4 else { throw unsupported("pad \(pad)") }
      return .explicit([(pad[0], pad[1]), (pad[2], pad[3])])
    default: throw unsupported("pad_type \(try string(r, "pad_type"))")
    }
  }
}
