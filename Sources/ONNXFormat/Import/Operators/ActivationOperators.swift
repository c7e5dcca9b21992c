import ModelIR

extension ONNXOperatorRegistry {
  /// Activations, each with ONNX's default parameters, and `Softmax`/`LogSoftmax` (before opset 13 over
  /// the flattened trailing axes, from 13 over one axis).
  static let activationOperators: [String: [ONNXOperatorEntry]] = {
    var all: [String: [ONNXOperatorEntry]] = [:]
    let simple: [(String, Activation, [Int], ONNXOperatorLayout)] = [
      ("Relu", .relu, [1, 6, 13, 14], .neutral), ("Sigmoid", .sigmoid, [1, 6, 13], .neutral),
      ("Tanh", .tanh, [1, 6, 13], .neutral),
      ("Softplus", .softplus, [1], .own), ("Softsign", .softsign, [1], .own),
    ]
    for (op, activation, versions, layout) in simple {
      all.merge(entries([op: versions], layout: layout) { try $0.activation(activation) }) { $0 + $1 }
    }
    all.merge(
      entries(["LeakyRelu": [1, 6, 16]], layout: .neutral) { c in
        try c.activation(.leakyReLU(alpha: try c.float("alpha", 0.01)))
      }
    ) { $0 + $1 }
    all.merge(
      entries(["ThresholdedRelu": [10]]) { c in try c.activation(.thresholdedReLU(theta: try c.float("alpha", 1))) }
    ) { $0 + $1 }
    all.merge(
      entries(["Elu": [1, 6]], layout: .neutral) { c in try c.activation(.elu(alpha: try c.float("alpha", 1))) }
    ) { $0 + $1 }
    all.merge(
      entries(["HardSigmoid": [1, 6]], layout: .neutral) { c in
        try c.activation(.hardSigmoid(slope: try c.float("alpha", 0.2), offset: try c.float("beta", 0.5)))
      }
    ) { $0 + $1 }
    all.merge(entries(["Selu": [1, 6]], layout: .neutral) { try $0.selu() }) { $0 + $1 }
    all.merge(entries(["HardSwish": [14]]) { try $0.hardSwish() }) { $0 + $1 }
    all.merge(
      entries(["Gelu": [20]]) { c in
        let approximate = try c.string("approximate", "none")
        guard ["none", "tanh"].contains(approximate) else {
          throw c.invalid("approximate '\(approximate)' (none or tanh)")
        }
        try c.activation(.gelu(approximate: approximate == "tanh"))
      }
    ) { $0 + $1 }
    all.merge(entries(["Clip": [1, 6, 11, 12, 13]], layout: .neutral) { try $0.clip() }) { $0 + $1 }
    all.merge(entries(["Erf": [9, 13]]) { try $0.activation(.erf) }) { $0 + $1 }
    all.merge(entries(["Sin": [7]]) { try $0.activation(.sin) }) { $0 + $1 }
    all.merge(entries(["Cos": [7]]) { try $0.activation(.cos) }) { $0 + $1 }
    all.merge(entries(["Floor": [1, 6, 13]]) { try $0.activation(.floor) }) { $0 + $1 }
    all.merge(entries(["Ceil": [1, 6, 13]]) { try $0.activation(.ceil) }) { $0 + $1 }
    all.merge(entries(["PRelu": [1, 6, 7, 9, 16]], layout: .channelsFirst) { try $0.parametricReLU() }) { $0 + $1 }
    all.merge(entries(["Softmax": [1, 11, 13]]) { try $0.softmax(log: false) }) { $0 + $1 }
    all.merge(entries(["LogSoftmax": [1, 11, 13]]) { try $0.softmax(log: true) }) { $0 + $1 }
    return all
  }()
}

extension ONNXNodeContext {
  mutating func activation(_ activation: Activation) throws {
    define(try add(.activation(activation), [try tensor(0)]))
  }

  mutating func selu() throws {
    let alpha = try float("alpha", 1.67326319217681884765625)
    let gamma = try float("gamma", 1.05070102214813232421875)
    if alpha == Activation.seluAlpha && gamma == Activation.seluScale {
      try activation(.selu)
      return
    }
    let elu = try add(.activation(.elu(alpha: alpha)), [try tensor(0)], suffix: "__elu")
    define(try add(.activation(.linear(scale: gamma, offset: 0)), [elu]))
  }

  /// `x * max(0, min(1, x / 6 + 1/2))`.
  mutating func hardSwish() throws {
    try activation(.hardSwish)
  }

  /// Bounds from attributes (before opset 11) or constant inputs; a missing bound is none.
  mutating func clip() throws {
    var low = -Float.greatestFiniteMagnitude
    var high = Float.greatestFiniteMagnitude
    if opset < 11 {
      low = try float("min", low)
      high = try float("max", high)
    } else {
      if hasInput(1) { low = try bound(1, "min") }
      if hasInput(2) { high = try bound(2, "max") }
    }
    guard low <= high else { throw invalid("min \(low) is above max \(high)") }
    if let c = try constant(0) {
      define(
        ONNXConstant(
          shape: c.shape, floats: c.floats.map { Swift.min(Swift.max($0, low), high) },
          ints: c.ints.map { $0.map { Swift.min(Swift.max($0, Int(low.rounded(.up))), Int(high.rounded(.down))) } }))
      return
    }
    try activation(.clip(min: low, max: high))
  }

  private func bound(_ index: Int, _ what: String) throws -> Float {
    let c = try requiredConstant(index, what)
    guard c.count == 1, c.floats[0].isFinite || abs(c.floats[0]) == .infinity else {
      throw invalid("\(what) must be one number")
    }
    return Swift.min(Swift.max(c.floats[0], -Float.greatestFiniteMagnitude), Float.greatestFiniteMagnitude)
  }

  /// `x < 0 ? slope * x : x`, the slope broadcast to `x` (before opset 7 a 1-D slope is per channel):
  /// per channel (`[C]` or `[C, 1, 1]`) as the IR's
  /// parametric ReLU on channels-last data, otherwise as `relu(x) - slope * relu(-x)`.
  mutating func parametricReLU() throws {
    let x = try tensor(0)
    let shape = builder.type(of: x).shape
    let slope = try requiredConstant(1, "slope")
    if shape.count >= 2, slope.count == shape[1], slope.shape.filter({ $0 != 1 }) == [shape[1]],
      slope.shape.count == shape.count - 1 || (slope.shape.count == 1 && (shape.count == 2 || opset < 7))
    {
      let alpha = Constant(shape: [shape[1]], values: slope.floats)
      if shape.count == 2 {
        define(try add(.activation(.parametricReLU(alpha: alpha)), [x]))
      } else {
        define(
          try channelsFirst(
            try add(.activation(.parametricReLU(alpha: alpha)), [try channelsLast(x)], suffix: "__nhwc")))
      }
      return
    }
    let positive = try add(.activation(.relu), [x], suffix: "__positive")
    let negated = try add(.activation(.linear(scale: -1, offset: 0)), [x], suffix: "__negated")
    let negative = try add(.activation(.relu), [negated], suffix: "__negative")
    let scaled = try add(.elementwise(.multiply), [negative, try tensor(1)], suffix: "__scaled")
    define(try add(.elementwise(.subtract), [positive, scaled]))
  }

  /// Softmax (or its log) along `axis`; before opset 13 the input is seen as 2-D at `axis`
  /// (`[d0 * ... * d(axis-1), d(axis) * ... ]`) and the softmax runs over the second.
  mutating func softmax(log: Bool) throws {
    let x = try tensor(0)
    let shape = builder.type(of: x).shape
    let axis = try self.axis(try int("axis", opset < 13 ? 1 : -1), rank: shape.count)
    var y: ValueID
    if opset >= 13 || axis == shape.count - 1 {
      y = try add(.softmax(axis: axis), [x], suffix: log ? "__softmax" : "")
    } else {
      let flat = try add(
        .reshape(targetShape: [shape[..<axis].reduce(1, *), shape[axis...].reduce(1, *)]), [x], suffix: "__2d")
      let soft = try add(.softmax(axis: 1), [flat], suffix: "__softmax_2d")
      y = try add(.reshape(targetShape: shape), [soft], suffix: log ? "__softmax" : "")
    }
    if log { y = try add(.activation(.unary(UnaryFunction(kind: .log))), [y]) }
    define(y)
  }
}
