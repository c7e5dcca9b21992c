import CoreMLCommon
import ModelIR

/// Elementwise, reduction and shape operations.
extension MILEmitter {
  /// Channels-first when every input has that layout already and they all have one shape of rank 2 or more.
  func sharedLayout(_ ids: [ValueID]) -> MILLayout {
    let shapes = Set(ids.map { graph[$0].type.shape })
    guard shapes.count == 1, rank(ids[0]) >= 2,
      ids.allSatisfy({ hasChannelsFirst($0) || layout(of: $0) == .channelsFirst })
    else { return .natural }
    return .channelsFirst
  }

  /// For a broadcasting element-wise operation whose full-size inputs are channels first: the inputs
  /// that only vary along the channel axis (`[C]`, `[1, 1, C]`, a scalar), which can be broadcast in
  /// channels-first layout as `[1, C, 1, 1]` without moving the others. Nil when the operation is not
  /// of that form.
  func channelBroadcast(_ node: Node) -> Set<ValueID>? {
    let output = graph[node.output].type.shape
    guard output.count >= 2 else { return nil }
    var vectors = Set<ValueID>()
    for id in node.inputs {
      let shape = graph[id].type.shape
      if shape == output {
        guard hasChannelsFirst(id) || layout(of: id) == .channelsFirst else { return nil }
      } else {
        guard shape.dropLast().allSatisfy({ $0 == 1 }), shape.count <= output.count,
          shape.last == 1 || shape.last == output.last
        else { return nil }
        vectors.insert(id)
      }
    }
    return vectors.isEmpty || vectors.count == node.inputs.count ? nil : vectors
  }

  mutating func emitElementwise(_ node: Node, _ kind: ElementwiseKind) throws {
    var layout = sharedLayout(node.inputs)
    var inputs: [MILTensor]
    if layout == .natural, let vectors = channelBroadcast(node) {
      // [C] broadcast against channels-first tensors as [1, C, 1, ...].
      layout = .channelsFirst
      let rank = graph[node.output].type.shape.count
      inputs = try node.inputs.map { id in
        guard vectors.contains(id) else { return try tensor(id, .channelsFirst) }
        let vector = try tensor(id, .natural)
        let shape = [1, graph[id].type.shape.last ?? 1] + [Int](repeating: 1, count: rank - 1)
        return try op(
          "reshape", [("x", .tensor(vector)), ("shape", .ints(shape))], temporary(id, "channels"), vector.dataType,
          shape)
      }
    } else {
      inputs = try node.inputs.map { try tensor($0, layout) }
    }
    let dt = inputs[0].dataType
    let shape = layout.shape(graph[node.output].type.shape)
    let out = node.output
    func binary(_ type: String) throws {
      try produce(out, layout, type, [("x", .tensor(inputs[0])), ("y", .tensor(inputs[1]))], dataType: dt)
    }
    /// Folds `type` over two or more inputs; the last step produces the node's value when `final`.
    func chain(_ type: String, final: Bool) throws -> MILTensor {
      var accumulated = inputs[0]
      for (index, next) in inputs.dropFirst().enumerated() {
        let last = index == inputs.count - 2
        if last && final {
          return try produce(out, layout, type, [("x", .tensor(accumulated)), ("y", .tensor(next))], dataType: dt)
        }
        accumulated = try op(
          type, [("x", .tensor(accumulated)), ("y", .tensor(next))], temporary(out, "\(type)\(index)"), dt, shape)
      }
      return accumulated
    }
    func comparison(_ type: String) throws {
      let flags = try op(
        type, [("x", .tensor(inputs[0])), ("y", .tensor(inputs[1]))], temporary(out, type), .bool, shape)
      try produce(out, layout, "cast", [("x", .tensor(flags)), ("dtype", .string(dt.castName))], dataType: dt)
    }
    switch kind {
    case .add: _ = try chain("add", final: true)
    case .multiply: _ = try chain("mul", final: true)
    case .maximum: _ = try chain("maximum", final: true)
    case .minimum: _ = try chain("minimum", final: true)
    case .average:
      let sum = inputs.count == 1 ? inputs[0] : try chain("add", final: false)
      try produce(out, layout, "mul", [("x", .tensor(sum)), ("y", .scalar(1 / Float(inputs.count), dt))], dataType: dt)
    case .subtract: try binary("sub")
    case .divide: try binary("real_div")
    case .power: try binary("pow")
    case .greaterThan: try comparison("greater")
    case .greaterEqual: try comparison("greater_equal")
    case .lessThan: try comparison("less")
    case .lessEqual: try comparison("less_equal")
    case .equal: try comparison("equal")
    case .notEqual: try comparison("not_equal")
    case .select:
      let condition = try op(
        "not_equal", [("x", .tensor(inputs[0])), ("y", .scalar(0, inputs[0].dataType))], temporary(out, "condition"),
        .bool, inputs[0].shape)
      try produce(
        out, layout, "select", [("cond", .tensor(condition)), ("a", .tensor(inputs[1])), ("b", .tensor(inputs[2]))],
        dataType: inputs[1].dataType)
    }
  }

  mutating func emitConcatenate(_ node: Node, axis: Int) throws {
    let r = rank(node.inputs[0])
    let layout: MILLayout =
      r >= 2 && node.inputs.allSatisfy({ hasChannelsFirst($0) || self.layout(of: $0) == .channelsFirst })
      ? .channelsFirst : .natural
    let inputs = try node.inputs.map { try tensor($0, layout) }
    try produce(
      node.output, layout, "concat",
      [("values", .tensors(inputs)), ("axis", .int(layout.axis(axis, rank: r))), ("interleave", .bool(false))],
      dataType: inputs[0].dataType)
  }

  mutating func emitConstant(_ node: Node, _ constant: Constant) throws {
    // A constant float16 cannot store stays float32 when every reader computes in float32
    // (`Float32IslandsPass` puts them there); otherwise the writer's float16 check names it.
    let keepsFloat32 =
      computeType == .fp16 && Float32IslandsPass.isBeyondFloat16(constant) && readersComputeInFloat32(node.output)
    let dataType: MILElementType = keepsFloat32 ? .fp32 : computeType
    let name = resultName(node.output, layout: .natural, dataType: dataType)
    let result = try builder.const(
      constant.values, shape: [1] + constant.shape, dataType, name: name.name, exactName: name.exact)
    if name.exact { builder.claim(name.name) }
    define(node.output, .natural, result)
  }

  mutating func emitReduce(_ node: Node, _ reduction: Reduction) throws {
    let x = try tensor(node.inputs[0], .natural)
    let type: String
    switch reduction.kind {
    case .mean: type = "reduce_mean"
    case .max: type = "reduce_max"
    case .min: type = "reduce_min"
    case .sum: type = "reduce_sum"
    }
    try produce(
      node.output, .natural, type,
      [("x", .tensor(x)), ("axes", .ints(reduction.axes.map { $0 + 1 })), ("keep_dims", .bool(reduction.keepDims))],
      dataType: x.dataType)
  }

  mutating func emitSoftmax(_ node: Node, axis: Int) throws {
    let id = node.inputs[0]
    let layout = rank(id) >= 2 && layout(of: id) == .channelsFirst ? MILLayout.channelsFirst : .natural
    let x = try tensor(id, layout)
    try produce(
      node.output, layout, "softmax", [("x", .tensor(x)), ("axis", .int(layout.axis(axis, rank: rank(id))))],
      dataType: x.dataType)
  }

  mutating func emitCast(_ node: Node, _ type: DataType) throws {
    let (x, layout) = try tensor(node.inputs[0])
    let target: MILElementType = type == .float16 ? .fp16 : .fp32
    if x.dataType == target {
      try alias(node.output, x, layout)
    } else {
      try produce(
        node.output, layout, "cast", [("x", .tensor(x)), ("dtype", .string(target.castName))], dataType: target)
    }
  }

  /// Flatten and reshape: row-major over the channels-last (natural) layout, as Keras does.
  mutating func emitReshape(_ node: Node, target: [Int]) throws {
    let x = try tensor(node.inputs[0], .natural)
    try produce(
      node.output, .natural, "reshape", [("x", .tensor(x)), ("shape", .ints([1] + target))], dataType: x.dataType)
  }

  mutating func emitPermute(_ node: Node, order: [Int]) throws {
    let x = try tensor(node.inputs[0], .natural)
    try produce(
      node.output, .natural, "transpose", [("x", .tensor(x)), ("perm", .ints([0] + order.map { $0 + 1 }))],
      dataType: x.dataType)
  }

  /// A channel shuffle in the layout its input already has: a reshape splitting the axis into
  /// `[groups, n]`, a transpose of the two, a reshape back.
  mutating func emitChannelShuffle(_ node: Node, axis: Int, groups: Int) throws {
    let (x, layout) = try tensor(node.inputs[0])
    let a = layout.axis(axis, rank: rank(node.inputs[0]))
    let split = Array(x.shape[..<a]) + [groups, x.shape[a] / groups] + Array(x.shape[(a + 1)...])
    var order = Array(split.indices)
    order.swapAt(a, a + 1)
    let grouped = try op(
      "reshape", [("x", .tensor(x)), ("shape", .ints(split))], temporary(node.output, "groups"), x.dataType, split)
    let swapped = try op(
      "transpose", [("x", .tensor(grouped)), ("perm", .ints(order))], temporary(node.output, "swapped"), x.dataType,
      order.map { split[$0] })
    try produce(
      node.output, layout, "reshape", [("x", .tensor(swapped)), ("shape", .ints(x.shape))], dataType: x.dataType)
  }

  /// A constant pad, channels first when its input is (an image's `[H, W, C]` padded as `[C, H, W]`). The
  /// lowest float (a max pooling's padding) is float16's lowest in a float16 program: no finite float16
  /// value is below it, so a maximum is the same.
  mutating func emitConstantPad(_ node: Node, _ padding: ConstantPadding) throws {
    let id = node.inputs[0]
    let layout: MILLayout =
      rank(id) == 3 && (hasChannelsFirst(id) || self.layout(of: id) == .channelsFirst) ? .channelsFirst : .natural
    let x = try tensor(id, layout)
    var pairs = Array(zip(padding.before, padding.after))
    if layout == .channelsFirst { pairs = [pairs[2], pairs[0], pairs[1]] }
    var value = padding.value
    if x.dataType == .fp16, abs(value) == Float.greatestFiniteMagnitude { value = value < 0 ? -65504 : 65504 }
    try produce(
      node.output, layout, "pad",
      [
        ("x", .tensor(x)), ("pad", .ints(pairs.flatMap { [$0.0, $0.1] })), ("mode", .string("constant")),
        ("constant_val", .scalar(value, x.dataType)),
      ],
      dataType: x.dataType)
  }

  mutating func emitSlice(_ node: Node, _ slice: StridedSlice) throws {
    let x = try tensor(node.inputs[0], .natural)
    try produce(
      node.output, .natural, "slice_by_index",
      [
        ("x", .tensor(x)), ("begin", .ints([0] + slice.begin)), ("end", .ints([1] + slice.end)),
        ("stride", .ints([1] + slice.strides)),
      ],
      dataType: x.dataType)
  }

  /// Whether every node reading `value` reads all its other inputs in float32 (casts to float32 or
  /// constants float16 cannot store), as `Float32IslandsPass` leaves them. Linear; asked only for the
  /// rare constants beyond float16.
  func readersComputeInFloat32(_ value: ValueID) -> Bool {
    var producers: [ValueID: Node] = [:]
    for node in graph.nodes { producers[node.output] = node }
    return graph.nodes.allSatisfy { reader in
      guard reader.inputs.contains(value) else { return true }
      return reader.inputs.allSatisfy { input in
        switch producers[input]?.operation {
        case .cast(.float32)?: return true
        case .constant(let other)?: return Float32IslandsPass.isBeyondFloat16(other)
        default: return false
        }
      }
    }
  }
}
