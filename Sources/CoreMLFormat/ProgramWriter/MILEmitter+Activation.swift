import ModelIR

/// Activations: elementwise, so they run in whichever layout their input has.
extension MILEmitter {
  mutating func emitActivation(_ node: Node, _ activation: Activation) throws {
    let (x, layout) = try tensor(node.inputs[0])
    // PReLU with one slope per channel is MIL's prelu on a channels-first tensor of rank 3 or more.
    if case .parametricReLU(let alpha) = activation {
      let shape = graph[node.inputs[0]].type.shape
      if shape.count >= 2, alpha.count == shape.last!, alpha.count != shape.reduce(1, *) {
        let cf = try tensor(node.inputs[0], .channelsFirst)
        try produce(node.output, .channelsFirst, "prelu", [("x", .tensor(cf)), ("alpha", .floats(alpha.values, shape: [alpha.count], cf.dataType))], dataType: cf.dataType)
        return
      }
    }
    try emitActivation(activation, x: x, layout: layout, output: node.output, shape: graph[node.inputs[0]].type.shape)
  }

  /// Writes `activation(x)` as the value `output` in `layout`.
  mutating func emitActivation(_ activation: Activation, x: MILTensor, layout: MILLayout, output: ValueID, shape: [Int]) throws {
    let dt = x.dataType
    func unary(_ type: String, _ extra: [(String, MILParam)] = []) throws {
      try produce(output, layout, type, [("x", .tensor(x))] + extra, dataType: dt)
    }
    func tmp(_ suffix: String) -> MILName { temporary(output, suffix) }
    switch activation {
    case .linear(let scale, let offset):
      if scale == 1 && offset == 0 { try unary("identity") } else { try unary("linear_activation", [("alpha", .scalar(scale, dt)), ("beta", .scalar(offset, dt))]) }
    case .relu: try unary("relu")
    case .clippedReLU(let maxValue, let slope, let threshold):
      if slope == 0 && threshold == 0 {
        if let maxValue { try unary("clip", [("alpha", .scalar(0, dt)), ("beta", .scalar(maxValue, dt))]) } else { try unary("relu") }
        return
      }
      // x >= threshold ? min(x, max) : slope * (x - threshold)
      let kept = try maxValue.map { try op("minimum", [("x", .tensor(x)), ("y", .scalar($0, dt))], tmp("capped"), dt, x.shape) } ?? x
      let shifted = try op("sub", [("x", .tensor(x)), ("y", .scalar(threshold, dt))], tmp("shifted"), dt, x.shape)
      let below = try op("mul", [("x", .tensor(shifted)), ("y", .scalar(slope, dt))], tmp("below"), dt, x.shape)
      let condition = try op("greater_equal", [("x", .tensor(x)), ("y", .scalar(threshold, dt))], tmp("above"), .bool, x.shape)
      try produce(output, layout, "select", [("cond", .tensor(condition)), ("a", .tensor(kept)), ("b", .tensor(below))], dataType: dt)
    case .leakyReLU(let alpha): try unary("leaky_relu", [("alpha", .scalar(alpha, dt))])
    case .parametricReLU(let alpha):
      // relu(x) + alpha * min(x, 0), alpha broadcast over the natural layout.
      let natural = try tensor(inputID(of: output), .natural)
      let positive = try op("relu", [("x", .tensor(natural))], tmp("positive"), dt, natural.shape)
      let negative = try op("minimum", [("x", .tensor(natural)), ("y", .scalar(0, dt))], tmp("negative"), dt, natural.shape)
      let alphaShape = alpha.count == shape.reduce(1, *) ? [1] + shape : [alpha.count]
      let scaled = try op("mul", [("x", .tensor(negative)), ("y", .floats(alpha.values, shape: alphaShape, dt))], tmp("scaled"), dt, natural.shape)
      try produce(output, .natural, "add", [("x", .tensor(positive)), ("y", .tensor(scaled))], dataType: dt)
    case .elu(let alpha): try unary("elu", [("alpha", .scalar(alpha, dt))])
    case .selu:
      let elu = try op("elu", [("x", .tensor(x)), ("alpha", .scalar(Activation.seluAlpha, dt))], tmp("elu"), dt, x.shape)
      try produce(output, layout, "mul", [("x", .tensor(elu)), ("y", .scalar(Activation.seluScale, dt))], dataType: dt)
    case .thresholdedReLU(let theta):
      // Keras keeps x only where x > theta (MIL's thresholded_relu keeps x >= alpha).
      let condition = try op("greater", [("x", .tensor(x)), ("y", .scalar(theta, dt))], tmp("above"), .bool, x.shape)
      let zero = try builder.const([0], shape: [], dt, name: tmp("zero").name)
      try produce(output, layout, "select", [("cond", .tensor(condition)), ("a", .tensor(x)), ("b", .tensor(zero))], dataType: dt)
    case .sigmoid: try unary("sigmoid")
    case .hardSigmoid(let slope, let offset): try unary("sigmoid_hard", [("alpha", .scalar(slope, dt)), ("beta", .scalar(offset, dt))])
    case .tanh: try unary("tanh")
    case .softplus: try unary("softplus")
    case .softsign: try unary("softsign")
    case .swish: try unary("silu")
    case .gelu(let approximate): try unary("gelu", [("mode", .string(approximate ? "TANH_APPROXIMATION" : "EXACT"))])
    case .exponential: try unary("exp")
    case .clip(let low, let high): try unary("clip", [("alpha", .scalar(low, dt)), ("beta", .scalar(high, dt))])
    case .unary(let function):
      try emitUnaryFunction(function, x: x, layout: layout, output: output)
    }
  }

  /// The input of the node producing `output`.
  func inputID(of output: ValueID) -> ValueID {
    graph.nodes.first { $0.output == output }!.inputs[0]
  }

  /// Core ML's unary function family `f(scale * x + shift)`.
  mutating func emitUnaryFunction(_ function: UnaryFunction, x: MILTensor, layout: MILLayout, output: ValueID) throws {
    let dt = x.dataType
    var v = x
    if function.scale != 1 || function.shift != 0 {
      v = try op("linear_activation", [("x", .tensor(x)), ("alpha", .scalar(function.scale, dt)), ("beta", .scalar(function.shift, dt))], temporary(output, "affine"), dt, x.shape)
    }
    func unary(_ type: String, _ extra: [(String, MILParam)] = []) throws {
      try produce(output, layout, type, [("x", .tensor(v))] + extra, dataType: dt)
    }
    switch function.kind {
    case .sqrt: try unary("sqrt")
    case .rsqrt: try unary("rsqrt", [("epsilon", .scalar(function.epsilon, dt))])
    case .inverse: try unary("inverse", [("epsilon", .scalar(function.epsilon, dt))])
    case .power: try produce(output, layout, "pow", [("x", .tensor(v)), ("y", .scalar(function.alpha, dt))], dataType: dt)
    case .exp: try unary("exp")
    case .log: try unary("log", [("epsilon", .scalar(function.epsilon, dt))])
    case .abs: try unary("abs")
    case .threshold: try unary("threshold", [("alpha", .scalar(function.alpha, dt))])
    }
  }
}
