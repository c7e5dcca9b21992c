import CoreMLCommon
import ModelIR

/// Dense layers, normalizations, dot products and embeddings.
extension MILEmitter {
  mutating func emitDense(_ node: Node, _ dense: Dense) throws {
    let x = try tensor(node.inputs[0], .natural)
    let dt = x.dataType
    if x.shape.count <= 3 {
      // linear computes x · weightᵀ + bias with weight [out, in]; Keras stores [in, out].
      var params: [(String, MILParam)] = [
        ("x", .tensor(x)),
        (
          "weight",
          .weights(
            .transposed(dense.kernel.values, rows: dense.inputUnits, columns: dense.outputUnits),
            shape: [dense.outputUnits, dense.inputUnits], dt)
        ),
      ]
      if let bias = dense.bias { params.append(("bias", .floats(bias.values, shape: [dense.outputUnits], dt))) }
      try produce(node.output, .natural, "linear", params, dataType: dt)
      return
    }
    // linear takes rank 3 at most: matmul with the [in, out] kernel broadcasts over the leading axes.
    let shape = MILLayout.natural.shape(graph[node.output].type.shape)
    let product = [
      ("x", MILParam.tensor(x)), ("y", .floats(dense.kernel.values, shape: dense.kernel.shape, dt)),
      ("transpose_x", .bool(false)), ("transpose_y", .bool(false)),
    ]
    guard let bias = dense.bias else {
      try produce(node.output, .natural, "matmul", product, dataType: dt)
      return
    }
    let multiplied = try op("matmul", product, temporary(node.output, "matmul"), dt, shape)
    try produce(
      node.output, .natural, "add",
      [("x", .tensor(multiplied)), ("y", .floats(bias.values, shape: [dense.outputUnits], dt))], dataType: dt)
  }

  /// MIL's `matmul` broadcasts batch axes as numpy does; both operands carry the leading unit axis.
  mutating func emitMatMul(_ node: Node) throws {
    let (x, y) = (try tensor(node.inputs[0], .natural), try tensor(node.inputs[1], .natural))
    let params: [(String, MILParam)] = [
      ("x", .tensor(x)), ("y", .tensor(y)), ("transpose_x", .bool(false)), ("transpose_y", .bool(false)),
    ]
    try produce(node.output, .natural, "matmul", params, dataType: x.dataType)
  }

  mutating func emitBatchNormalization(_ node: Node, _ norm: BatchNormalization) throws {
    let id = node.inputs[0]
    let x = try tensor(id, .channelsFirst)
    let dt = x.dataType
    let c = norm.channels
    let statistics: [(String, MILParam)] = [
      ("mean", .floats(norm.mean.values, shape: [c], dt)), ("variance", .floats(norm.variance.values, shape: [c], dt)),
      ("gamma", .floats(norm.gamma.values, shape: [c], dt)), ("beta", .floats(norm.beta.values, shape: [c], dt)),
      ("epsilon", .scalar(norm.epsilon, dt)),
    ]
    if rank(id) >= 2 {
      try produce(node.output, .channelsFirst, "batch_norm", [("x", .tensor(x))] + statistics, dataType: dt)
      return
    }
    // batch_norm takes rank 3 to 5: a [1, C] vector goes through [1, C, 1].
    let expanded = try op(
      "reshape", [("x", .tensor(x)), ("shape", .ints([1, c, 1]))], temporary(node.output, "expanded"), dt, [1, c, 1])
    let normalized = try op(
      "batch_norm", [("x", .tensor(expanded))] + statistics, temporary(node.output, "normalized"), dt, [1, c, 1])
    try produce(
      node.output, .natural, "reshape", [("x", .tensor(normalized)), ("shape", .ints([1, c]))], dataType: dt)
  }

  mutating func emitLayerNormalization(_ node: Node, _ norm: LayerNormalization) throws {
    let x = try tensor(node.inputs[0], .natural)
    let dt = x.dataType
    let c = x.shape.last!
    var params: [(String, MILParam)] = [("x", .tensor(x)), ("axes", .ints([x.shape.count - 1]))]
    if let gamma = norm.gamma { params.append(("gamma", .floats(gamma.values, shape: [c], dt))) }
    if let beta = norm.beta { params.append(("beta", .floats(beta.values, shape: [c], dt))) }
    params.append(("epsilon", .scalar(norm.epsilon, dt)))
    try produce(node.output, .natural, "layer_norm", params, dataType: dt)
  }

  /// `x / sqrt(sum(x²) + epsilon)` along the last axis (MIL's l2_norm normalizes several axes, so it is
  /// written out).
  mutating func emitL2Normalize(_ node: Node, epsilon: Float) throws {
    let x = try tensor(node.inputs[0], .natural)
    let scale = try inverseNorm(x, epsilon: epsilon, prefix: "l2", output: node.output)
    try produce(node.output, .natural, "mul", [("x", .tensor(x)), ("y", .tensor(scale))], dataType: x.dataType)
  }

  /// MIL's `local_response_norm` across axis 1 of `[1, C, *D]` (rank 3 or 4), its window of `size`
  /// channels centred; an even size is refused (MIL does not say where its window then lies).
  mutating func emitLocalResponseNormalization(_ node: Node, _ lrn: LocalResponseNormalization) throws {
    let layer = node.origin?.name ?? node.name
    guard lrn.size % 2 == 1 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: layer,
        detail:
          "local response normalization over an even window (\(lrn.size)): Core ML does not document where it lies")
    }
    guard (2...3).contains(rank(node.inputs[0])) else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: layer,
        detail:
          "local response normalization of a \(graph[node.inputs[0]].type.shape) tensor (MIL's local_response_norm takes [C, T] and [H, W, C] here)"
      )
    }
    let x = try tensor(node.inputs[0], .channelsFirst)
    let dt = x.dataType
    try produce(
      node.output, .channelsFirst, "local_response_norm",
      [
        ("x", .tensor(x)), ("size", .int(lrn.size)), ("alpha", .scalar(lrn.alpha, dt)), ("beta", .scalar(lrn.beta, dt)),
        ("k", .scalar(lrn.bias, dt)),
      ], dataType: dt)
  }

  /// `1 / sqrt(sum(x²) + epsilon)` over the last axis, kept as a length-1 axis.
  mutating func inverseNorm(_ x: MILTensor, epsilon: Float, prefix: String, output: ValueID) throws -> MILTensor {
    let dt = x.dataType
    let reducedShape = x.shape.dropLast() + [1]
    let squares = try op(
      "mul", [("x", .tensor(x)), ("y", .tensor(x))], temporary(output, "\(prefix)_squares"), dt, x.shape)
    let sum = try op(
      "reduce_sum", [("x", .tensor(squares)), ("axes", .ints([x.shape.count - 1])), ("keep_dims", .bool(true))],
      temporary(output, "\(prefix)_sum"), dt, Array(reducedShape))
    return try op(
      "rsqrt", [("x", .tensor(sum)), ("epsilon", .scalar(epsilon, dt))], temporary(output, "\(prefix)_inverse"), dt,
      Array(reducedShape))
  }

  /// The dot product of two `[D]` vectors as `[1]`; with `cosine`, of the vectors scaled to unit length
  /// (Keras' l2_normalize epsilon, 1e-12).
  mutating func emitDot(_ node: Node, cosine: Bool) throws {
    var a = try tensor(node.inputs[0], .natural)
    var b = try tensor(node.inputs[1], .natural)
    let dt = a.dataType
    if cosine {
      let ia = try inverseNorm(a, epsilon: 1e-12, prefix: "a", output: node.output)
      a = try op("mul", [("x", .tensor(a)), ("y", .tensor(ia))], temporary(node.output, "a_unit"), dt, a.shape)
      let ib = try inverseNorm(b, epsilon: 1e-12, prefix: "b", output: node.output)
      b = try op("mul", [("x", .tensor(b)), ("y", .tensor(ib))], temporary(node.output, "b_unit"), dt, b.shape)
    }
    let products = try op(
      "mul", [("x", .tensor(a)), ("y", .tensor(b))], temporary(node.output, "products"), dt, a.shape)
    try produce(
      node.output, .natural, "reduce_sum",
      [("x", .tensor(products)), ("axes", .ints([1])), ("keep_dims", .bool(true))], dataType: dt)
  }

  /// Row lookup: the `[1, T]` indices (as float) become int32 and `gather` rows of the table.
  mutating func emitEmbedding(_ node: Node, table: Constant) throws {
    let x = try tensor(node.inputs[0], .natural)
    let indices = try op(
      "cast", [("x", .tensor(x)), ("dtype", .string("int32"))], temporary(node.output, "indices"), .int32, x.shape)
    let dt = computeType
    try produce(
      node.output, .natural, "gather",
      [("x", .floats(table.values, shape: table.shape, dt)), ("indices", .tensor(indices)), ("axis", .int(0))],
      dataType: dt)
  }
}
