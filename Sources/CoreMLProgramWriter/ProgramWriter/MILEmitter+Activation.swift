import CoreMLCommon
import ModelIR

/// Activations: elementwise, so they run in whichever layout their input has.
extension MILEmitter {
  mutating func emitActivation(_ node: Node, _ activation: Activation) throws {
    let (x, layout) = try tensor(node.inputs[0])
    // PReLU with one slope per channel is MIL's prelu on a channels-first tensor of rank 3 or 4 (an IR
    // tensor of rank 2 or 3 and the batch axis). A rank-4 IR tensor would be a rank-5 prelu, which
    // coremltools documents but our own program writer keeps out of (its channels-first rank-5 value would
    // carry the name of the channels-last one): it broadcasts its slopes over the natural layout instead.
    if case .parametricReLU(let alpha) = activation {
      let shape = graph[node.inputs[0]].type.shape
      if shape.count >= 2, shape.count <= 3, alpha.count == shape.last!, alpha.count != shape.reduce(1, *) {
        let cf = try tensor(node.inputs[0], .channelsFirst)
        try produce(
          node.output, .channelsFirst, "prelu",
          [("x", .tensor(cf)), ("alpha", .floats(alpha.values, shape: [alpha.count], cf.dataType))],
          dataType: cf.dataType)
        return
      }
    }
    try emitActivation(activation, x: x, layout: layout, output: node.output, shape: graph[node.inputs[0]].type.shape)
  }

  /// Writes `activation(x)` as the value `output` in `layout`.
  mutating func emitActivation(_ activation: Activation, x: MILTensor, layout: MILLayout, output: ValueID, shape: [Int])
    throws
  {
    if case .parametricReLU = activation {
      // The full-shape (or unshaped) slopes broadcast over the natural layout.
      let natural = try tensor(inputID(of: output), .natural)
      let result = try activate(
        activation, natural, final: resultName(output, layout: .natural, dataType: natural.dataType), irShape: shape
      ) { temporary(output, $0) }
      define(output, .natural, result)
      return
    }
    let result = try activate(
      activation, x, final: resultName(output, layout: layout, dataType: x.dataType), irShape: shape
    ) { temporary(output, $0) }
    define(output, layout, result)
  }

  /// `activation(x)`: the last operation is named `final`, the others by `temp(suffix)`. Elementwise, so
  /// any layout works, except PReLU's slopes, which broadcast over a natural-layout `x` of IR shape `irShape`.
  func activate(_ activation: Activation, _ x: MILTensor, final: MILName, irShape: [Int], temp: (String) -> MILName)
    throws -> MILTensor
  {
    let dt = x.dataType
    func unary(_ type: String, _ extra: [(String, MILParam)] = []) throws -> MILTensor {
      try op(type, [("x", .tensor(x))] + extra, final, dt, x.shape)
    }
    switch activation {
    case .linear(let scale, let offset):
      if scale == 1 && offset == 0 { return try unary("identity") }
      return try unary("linear_activation", [("alpha", .scalar(scale, dt)), ("beta", .scalar(offset, dt))])
    case .relu: return try unary("relu")
    case .clippedReLU(let maxValue, let slope, let threshold):
      if slope == 0 && threshold == 0 {
        if let maxValue { return try unary("clip", [("alpha", .scalar(0, dt)), ("beta", .scalar(maxValue, dt))]) }
        return try unary("relu")
      }
      // x >= threshold ? min(x, max) : slope * (x - threshold)
      let kept =
        try maxValue.map {
          try op("minimum", [("x", .tensor(x)), ("y", .scalar($0, dt))], temp("capped"), dt, x.shape)
        } ?? x
      let shifted = try op("sub", [("x", .tensor(x)), ("y", .scalar(threshold, dt))], temp("shifted"), dt, x.shape)
      let below = try op("mul", [("x", .tensor(shifted)), ("y", .scalar(slope, dt))], temp("below"), dt, x.shape)
      let condition = try op(
        "greater_equal", [("x", .tensor(x)), ("y", .scalar(threshold, dt))], temp("above"), .bool, x.shape)
      return try op(
        "select", [("cond", .tensor(condition)), ("a", .tensor(kept)), ("b", .tensor(below))], final, dt, x.shape)
    case .leakyReLU(let alpha): return try unary("leaky_relu", [("alpha", .scalar(alpha, dt))])
    case .parametricReLU(let alpha):
      // relu(x) + alpha * min(x, 0)
      let positive = try op("relu", [("x", .tensor(x))], temp("positive"), dt, x.shape)
      let negative = try op("minimum", [("x", .tensor(x)), ("y", .scalar(0, dt))], temp("negative"), dt, x.shape)
      let alphaShape = alpha.count == irShape.reduce(1, *) ? [1] + irShape : [alpha.count]
      let scaled = try op(
        "mul", [("x", .tensor(negative)), ("y", .floats(alpha.values, shape: alphaShape, dt))], temp("scaled"), dt,
        x.shape)
      return try op("add", [("x", .tensor(positive)), ("y", .tensor(scaled))], final, dt, x.shape)
    case .elu(let alpha): return try unary("elu", [("alpha", .scalar(alpha, dt))])
    case .selu:
      let elu = try op(
        "elu", [("x", .tensor(x)), ("alpha", .scalar(Activation.seluAlpha, dt))], temp("elu"), dt, x.shape)
      return try op("mul", [("x", .tensor(elu)), ("y", .scalar(Activation.seluScale, dt))], final, dt, x.shape)
    case .thresholdedReLU(let theta):
      // Keras keeps x only where x > theta (MIL's thresholded_relu keeps x >= alpha).
      let condition = try op("greater", [("x", .tensor(x)), ("y", .scalar(theta, dt))], temp("above"), .bool, x.shape)
      let zero = try builder.const([0], shape: [], dt, name: temp("zero").name)
      return try op(
        "select", [("cond", .tensor(condition)), ("a", .tensor(x)), ("b", .tensor(zero))], final, dt, x.shape)
    case .sigmoid: return try unary("sigmoid")
    case .hardSigmoid(let slope, let offset):
      return try unary("sigmoid_hard", [("alpha", .scalar(slope, dt)), ("beta", .scalar(offset, dt))])
    case .tanh: return try unary("tanh")
    case .softplus: return try unary("softplus")
    case .softsign: return try unary("softsign")
    case .swish: return try unary("silu")
    case .hardSwish:
      // MIL has no hard swish: x * sigmoid_hard(x) with alpha 1/6, beta 1/2 (clip(x / 6 + 1/2, 0, 1)).
      let gate = try op(
        "sigmoid_hard", [("x", .tensor(x)), ("alpha", .scalar(1.0 / 6, dt)), ("beta", .scalar(0.5, dt))], temp("gate"),
        dt, x.shape)
      return try op("mul", [("x", .tensor(x)), ("y", .tensor(gate))], final, dt, x.shape)
    case .gelu(let approximate):
      return try unary("gelu", [("mode", .string(approximate ? "TANH_APPROXIMATION" : "EXACT"))])
    case .exponential: return try unary("exp")
    case .erf: return try unary("erf")
    case .sin: return try unary("sin")
    case .cos: return try unary("cos")
    case .floor: return try unary("floor")
    case .ceil: return try unary("ceil")
    case .clip(let low, let high): return try unary("clip", [("alpha", .scalar(low, dt)), ("beta", .scalar(high, dt))])
    case .unary(let function): return try unaryFunction(function, x, final: final, temp: temp)
    }
  }

  /// The input of the node producing `output`.
  func inputID(of output: ValueID) -> ValueID {
    graph.nodes.first { $0.output == output }!.inputs[0]
  }

  /// Core ML's unary function family `f(scale * x + shift)`.
  func unaryFunction(_ function: UnaryFunction, _ x: MILTensor, final: MILName, temp: (String) -> MILName) throws
    -> MILTensor
  {
    let dt = x.dataType
    var v = x
    if function.scale != 1 || function.shift != 0 {
      v = try op(
        "linear_activation",
        [("x", .tensor(x)), ("alpha", .scalar(function.scale, dt)), ("beta", .scalar(function.shift, dt))],
        temp("affine"), dt, x.shape)
    }
    func unary(_ type: String, _ extra: [(String, MILParam)] = []) throws -> MILTensor {
      try op(type, [("x", .tensor(v))] + extra, final, dt, x.shape)
    }
    switch function.kind {
    case .sqrt: return try unary("sqrt")
    case .rsqrt: return try unary("rsqrt", [("epsilon", .scalar(function.epsilon, dt))])
    case .inverse: return try unary("inverse", [("epsilon", .scalar(function.epsilon, dt))])
    case .power: return try op("pow", [("x", .tensor(v)), ("y", .scalar(function.alpha, dt))], final, dt, x.shape)
    case .exp: return try unary("exp")
    case .log: return try unary("log", [("epsilon", .scalar(function.epsilon, dt))])
    case .abs: return try unary("abs")
    case .threshold: return try unary("threshold", [("alpha", .scalar(function.alpha, dt))])
    }
  }
}
