import ModelIR

extension ONNXOperatorRegistry {
  /// `BatchNormalization` (inference), `LayerNormalization` over the last axis, `InstanceNormalization`.
  static let normalizationOperators: [String: [ONNXOperatorEntry]] =
    entries(["BatchNormalization": [1, 6, 7, 9, 14, 15]], layout: .channelsFirst) { try $0.batchNormalization() }
    .merging(entries(["LayerNormalization": [17]]) { try $0.layerNormalization() }) { $0 + $1 }
    .merging(entries(["InstanceNormalization": [1, 6]], layout: .channelsFirst) { try $0.instanceNormalization() }) {
      $0 + $1
    }
    .merging(entries(["LRN": [1, 13]], layout: .channelsFirst) { try $0.localResponseNormalization() }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// `Y = (X - mean) / sqrt(var + epsilon) * scale + B` over axis 1, with the running statistics.
  mutating func batchNormalization() throws {
    let x = try tensor(0)
    let shape = builder.type(of: x).shape
    guard shape.count >= 2 else { throw invalid("input of shape \(shape) has no channel axis") }
    guard try int("training_mode", 0) == 0 else { throw invalid("training_mode 1 is not supported (inference only)") }
    if opset < 9, try int("spatial", 1) != 1 { throw invalid("spatial 0 is not supported") }
    for index in 1..<outputCount where !node.outputs[index].isEmpty {
      throw invalid("the training outputs (running mean and variance) are not supported")
    }
    let channels = shape[1]
    var parameters: [Constant] = []
    for (index, what) in [(1, "scale"), (2, "B"), (3, "input_mean"), (4, "input_var")] {
      let c = try requiredConstant(index, what)
      guard c.count == channels else { throw invalid("\(what) has \(c.count) values for \(channels) channels") }
      parameters.append(Constant(shape: [channels], values: c.floats))
    }
    let epsilon = try float("epsilon", 1e-5)
    guard epsilon >= 0 else { throw invalid("epsilon \(epsilon) is negative") }
    let norm = BatchNormalization(
      gamma: parameters[0], beta: parameters[1], mean: parameters[2], variance: parameters[3], epsilon: epsilon)
    if shape.count == 2 {
      define(try add(.batchNormalization(norm), [x]))
    } else {
      define(try channelsFirst(try add(.batchNormalization(norm), [try channelsLast(x)], suffix: "__nhwc")))
    }
  }

  /// LRN across axis 1 (the channels), computed channels last.
  mutating func localResponseNormalization() throws {
    let x = try tensor(0)
    let shape = builder.type(of: x).shape
    guard shape.count >= 2 else { throw invalid("input of shape \(shape) has no channel axis") }
    let size = try int("size", 0)
    guard size >= 1, size <= 1 << 20 else { throw invalid("attribute 'size' (1 or more) is required") }
    let (alpha, beta, bias) = (try float("alpha", 1e-4), try float("beta", 0.75), try float("bias", 1))
    guard alpha.isFinite, beta.isFinite, bias.isFinite else { throw invalid("alpha, beta and bias must be finite") }
    let lrn = LocalResponseNormalization(size: size, alpha: alpha, beta: beta, bias: bias)
    if shape.count == 2 {
      define(try add(.localResponseNormalization(lrn), [x]))
    } else {
      define(try channelsFirst(try add(.localResponseNormalization(lrn), [try channelsLast(x)], suffix: "__nhwc")))
    }
  }

  /// Over the axes from `axis` on (flattened into one last axis when there are several), scale and
  /// bias constant and broadcast to those axes.
  mutating func layerNormalization() throws {
    var x = try tensor(0)
    let shape = builder.type(of: x).shape
    let first = try axis(try int("axis", -1), rank: shape.count)
    for index in 1..<outputCount where !node.outputs[index].isEmpty {
      throw invalid("the Mean and InvStdDev outputs are not supported")
    }
    let channels = shape[first...].reduce(1, *)
    if first != shape.count - 1 {
      x = try add(.reshape(targetShape: Array(shape[..<first]) + [channels]), [x], suffix: "__flat")
    }
    func parameter(_ index: Int, _ what: String) throws -> Constant? {
      guard hasInput(index) else { return nil }
      var c = try requiredConstant(index, what)
      if c.count != channels,
        let folded = try Self.fold(
          .multiply, [c, ONNXConstant(shape: Array(shape[first...]), floats: Array(repeating: 1, count: channels))],
          opType: opType)
      {
        c = folded
      }
      guard c.count == channels else {
        throw invalid("\(what) of shape \(c.shape) does not broadcast to \(Array(shape[first...]))")
      }
      return Constant(shape: [channels], values: c.floats)
    }
    let norm = LayerNormalization(
      gamma: try parameter(1, "Scale"), beta: try parameter(2, "B"), epsilon: try float("epsilon", 1e-5))
    let y = try add(.layerNormalization(norm), [x], suffix: first != shape.count - 1 ? "__normalized" : "")
    define(first != shape.count - 1 ? try add(.reshape(targetShape: shape), [y]) : y)
  }

  /// `scale * (x - mean) / sqrt(variance + epsilon) + B`, the statistics over the spatial axes of each
  /// sample and channel: reductions and element-wise operations.
  mutating func instanceNormalization() throws {
    let x = try tensor(0)
    let shape = builder.type(of: x).shape
    guard shape.count >= 3 else { throw invalid("input of shape \(shape) has no spatial axes") }
    let channels = shape[1]
    let epsilon = try float("epsilon", 1e-5)
    guard epsilon >= 0 else { throw invalid("epsilon \(epsilon) is negative") }
    let spatial = Array(2..<shape.count)
    let perChannel = [channels] + [Int](repeating: 1, count: shape.count - 2)
    func parameter(_ index: Int, _ what: String) throws -> ValueID {
      let c = try requiredConstant(index, what)
      guard c.count == channels else { throw invalid("\(what) has \(c.count) values for \(channels) channels") }
      return try add(.constant(Constant(shape: perChannel, values: c.floats)), [], suffix: "__\(what)")
    }
    let mean = try add(.reduce(Reduction(kind: .mean, axes: spatial, keepDims: true)), [x], suffix: "__mean")
    let centered = try add(.elementwise(.subtract), [x, mean], suffix: "__centered")
    let squared = try add(.elementwise(.multiply), [centered, centered], suffix: "__squared")
    let variance = try add(
      .reduce(Reduction(kind: .mean, axes: spatial, keepDims: true)), [squared], suffix: "__variance")
    let inverse = try add(
      .activation(.unary(UnaryFunction(kind: .rsqrt, epsilon: epsilon))), [variance], suffix: "__inverse_std")
    let normalized = try add(.elementwise(.multiply), [centered, inverse], suffix: "__normalized")
    let scaled = try add(.elementwise(.multiply), [normalized, try parameter(1, "scale")], suffix: "__scaled")
    define(try add(.elementwise(.add), [scaled, try parameter(2, "B")]))
  }
}
