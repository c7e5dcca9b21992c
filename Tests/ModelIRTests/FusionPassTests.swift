import Foundation
import ModelIR
import ReferenceRuntime
import Testing

/// The passes that recognise an operation written out step by step (a layer normalization from reductions,
/// ShuffleNet's channel shuffle from reshapes and a transpose), and the moves that let the recognised
/// channel shuffle, slices and channels-first constants lose their transposes and unit axes. Expected values
/// come from the formulas written out here, not from the operation under test.
@Suite struct FusionPassTests {
  static func kinds(_ graph: Graph) -> [String] { graph.nodes.map(\.operation.kindName) }

  /// Values of a tensor of `shape`: `Float(i % 13) - 6` plus a little of `i`, so no two rows are alike.
  static func ramp(_ shape: [Int]) -> Tensor {
    let count = shape.reduce(1, *)
    return Tensor(shape: shape, values: (0..<count).map { Float($0 % 13) - 6 + Float($0) / Float(count) })
  }

  /// ShuffleNet's channel shuffle of the last axis, by its definition: output channel j * groups + i is input
  /// channel i * (C / groups) + j.
  static func shuffled(_ values: [Float], channels: Int, groups: Int) -> [Float] {
    let n = channels / groups
    var result = values
    for start in stride(from: 0, to: values.count, by: channels) {
      for i in 0..<groups { for j in 0..<n { result[start + j * groups + i] = values[start + i * n + j] } }
    }
    return result
  }

  /// Layer normalization of each last-axis row in Double: (x - mean) / sqrt(variance + epsilon) * gamma + beta.
  static func layerNormalized(_ values: [Float], channels: Int, epsilon: Double, gamma: [Float], beta: [Float])
    -> [Float]
  {
    stride(from: 0, to: values.count, by: channels).flatMap { start -> [Float] in
      let row = values[start..<start + channels].map(Double.init)
      let mean = row.reduce(0, +) / Double(channels)
      let variance = row.map { ($0 - mean) * ($0 - mean) }.reduce(0, +) / Double(channels)
      return row.indices.map {
        Float((row[$0] - mean) / (variance + epsilon).squareRoot() * Double(gamma[$0]) + Double(beta[$0]))
      }
    }
  }

  static func constant(_ builder: inout GraphBuilder, _ name: String, _ shape: [Int], _ values: [Float]) throws
    -> ValueID
  {
    try builder.add(.constant(Constant(shape: shape, values: values)), name: name, inputs: [])
  }

  static func run(_ graph: Graph, _ input: Tensor) -> Tensor { Interpreter(graph: graph).run([input])[0] }

  // MARK: Channel shuffle

  /// The interpreter's shuffle of the middle axis of `[2, 6, 2]` in 3 groups, element by element: along the
  /// axis, output entry j * 3 + i is input entry i * 2 + j, so the entries come in the order 0, 2, 4, 1, 3, 5.
  @Test func channelShuffleComputesItsDefinition() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 6, 2]))
    let y = try builder.add(.channelShuffle(axis: 1, groups: 3), name: "shuffle", inputs: [x])
    let graph = builder.build(outputs: [y])
    let input = Tensor(shape: [2, 6, 2], values: (0..<24).map(Float.init))
    let order = [0, 2, 4, 1, 3, 5]
    let expected = (0..<2).flatMap { outer in
      order.flatMap { entry in (0..<2).map { Float(outer * 12 + entry * 2 + $0) } }
    }
    #expect(Self.run(graph, input).values == expected)
    #expect(throws: GraphError.self) {
      try ModelIR.Operation.channelShuffle(axis: 1, groups: 4).outputShape(inputShapes: [[2, 6, 2]], node: "bad")
    }
  }

  /// torchvision's `x.view(1, 2, C / 2, H, W).transpose(1, 2).view(1, C, H, W)` on an NCHW tensor with its batch
  /// axis: one shuffle of axis 1.
  @Test func channelShuffleFusesFromReshapesAndTranspose() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([1, 6, 2, 3]))
    let split = try builder.add(.reshape(targetShape: [1, 2, 3, 2, 3]), name: "split", inputs: [x])
    let swapped = try builder.add(.permute(order: [0, 2, 1, 3, 4]), name: "swap", inputs: [split])
    let merged = try builder.add(.reshape(targetShape: [1, 6, 2, 3]), name: "merge", inputs: [swapped])
    let graph = builder.build(outputs: [merged])
    var rewritten = graph
    try ChannelShuffleFusionPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["channelShuffle"])
    #expect(
      rewritten.nodes[0].operation == .channelShuffle(axis: 1, groups: 2)
        && rewritten.nodes[0].inputs == rewritten.inputs)
    #expect(rewritten[rewritten.outputs[0]].name == graph[graph.outputs[0]].name)
    // Channels first: the shuffle moves whole 2x3 planes; channel j * 2 + i is input channel i * 3 + j.
    let input = Self.ramp([1, 6, 2, 3])
    let planes = [0, 3, 1, 4, 2, 5]
    let expected = planes.flatMap { Array(input.values[$0 * 6..<($0 + 1) * 6]) }
    #expect(Self.run(graph, input).values == expected)
    #expect(Self.run(rewritten, input).values == expected)
  }

  /// The same shuffle after the passes dropped the batch axis of its input but not of its output
  /// (`[48, 28, 28]` to `[2, 24, 28, 28]`, swapped, to `[1, 48, 28, 28]` in ShuffleNet): a shuffle, then the
  /// reshape adding the unit axis.
  @Test func channelShuffleFusesAcrossUnitAxes() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6, 2, 2]))
    let split = try builder.add(.reshape(targetShape: [3, 2, 2, 2]), name: "split", inputs: [x])
    let swapped = try builder.add(.permute(order: [1, 0, 2, 3]), name: "swap", inputs: [split])
    let merged = try builder.add(.reshape(targetShape: [1, 6, 2, 2]), name: "merge", inputs: [swapped])
    let graph = builder.build(outputs: [merged])
    var rewritten = graph
    try ChannelShuffleFusionPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["channelShuffle", "reshape"])
    #expect(rewritten.nodes[0].operation == .channelShuffle(axis: 0, groups: 3))
    let input = Self.ramp([6, 2, 2])
    #expect(Self.run(rewritten, input).values == Self.run(graph, input).values)
    #expect(Self.run(rewritten, input).shape == [1, 6, 2, 2])
  }

  /// Reshapes and transposes that only look alike stay: a transpose that also moves another axis, a split
  /// merged back into another shape, and a split whose transposed tensor is also read elsewhere.
  @Test func otherReshapeTransposeChainsStay() throws {
    func chain(split: [Int], order: [Int], merged: [Int], alsoOutput: Bool = false) throws -> Graph {
      var builder = GraphBuilder()
      let x = try builder.addInput(name: "x", type: TensorType([6, 2, 3]))
      let a = try builder.add(.reshape(targetShape: split), name: "split", inputs: [x])
      let b = try builder.add(.permute(order: order), name: "swap", inputs: [a])
      let c = try builder.add(.reshape(targetShape: merged), name: "merge", inputs: [b])
      return builder.build(outputs: alsoOutput ? [c, b] : [c])
    }
    let graphs = [
      try chain(split: [2, 3, 2, 3], order: [1, 0, 3, 2], merged: [6, 2, 3]),
      try chain(split: [2, 3, 2, 3], order: [1, 0, 2, 3], merged: [3, 2, 6]),
      try chain(split: [2, 3, 2, 3], order: [1, 0, 2, 3], merged: [6, 2, 3], alsoOutput: true),
      try chain(split: [6, 1, 2, 3], order: [1, 0, 2, 3], merged: [6, 2, 3]),
    ]
    for graph in graphs {
      var rewritten = graph
      try ChannelShuffleFusionPass().run(&rewritten)
      #expect(!Self.kinds(rewritten).contains("channelShuffle"), "\(Self.kinds(graph))")
    }
  }

  /// ShuffleNet's unit as the passes find it: a channels-first transpose of the concatenated branches, the
  /// shuffle, the two halves, each transposed back for the next convolution or joined. The transpose moves
  /// past the shuffle and into both slices and cancels against the ones after them: no transpose is left.
  @Test func transposeMovesPastShuffleAndSlices() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 4, 6]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "to_chw", inputs: [x])
    let mixed = try builder.add(.channelShuffle(axis: 0, groups: 2), name: "shuffle", inputs: [chw])
    let first = try builder.add(
      .slice(StridedSlice(begin: [0, 0, 0], end: [3, 3, 4], strides: [1, 1, 1])), name: "first", inputs: [mixed])
    let second = try builder.add(
      .slice(StridedSlice(begin: [3, 0, 0], end: [6, 3, 4], strides: [1, 1, 1])), name: "second", inputs: [mixed])
    let back = try builder.add(.permute(order: [1, 2, 0]), name: "to_hwc", inputs: [second])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [back])
    let again = try builder.add(.permute(order: [2, 0, 1]), name: "to_chw_again", inputs: [relu])
    let joined = try builder.add(.concatenate(axis: 0), name: "join", inputs: [first, again])
    let out = try builder.add(.permute(order: [1, 2, 0]), name: "out", inputs: [joined])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try CancelTransposesPass().run(&rewritten)
    #expect(!Self.kinds(rewritten).contains("permute"), "\(Self.kinds(rewritten))")
    #expect(
      rewritten.nodes.first { $0.operation.kindName == "channelShuffle" }?.operation
        == .channelShuffle(axis: 2, groups: 2))
    // Channels last now: the first slice keeps channels 0..<3 of the shuffled [3, 4, 6] tensor.
    #expect(
      rewritten.nodes.first { $0.name == "first" }?.operation
        == .slice(StridedSlice(begin: [0, 0, 0], end: [3, 4, 3], strides: [1, 1, 1])))
    let input = Self.ramp([3, 4, 6])
    #expect(Self.run(rewritten, input).values == Self.run(graph, input).values)
    // Every output channel c < 3 is shuffled channel c; the rest the ReLU of shuffled channel c.
    let shuffled = Self.shuffled(input.values, channels: 6, groups: 2)
    #expect(
      Self.run(rewritten, input).values
        == shuffled.enumerated().map { $0.offset % 6 < 3 ? $0.element : max($0.element, 0) })
  }

  /// A unit batch axis in front of a shuffle moves past it (the shuffled axis renumbered) and meets the
  /// reshape that drops it (what is left is the output's copy of its own shape).
  @Test func unitAxesMovePastShuffle() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 8]))
    let batched = try builder.add(.reshape(targetShape: [1, 2, 3, 8]), name: "batched", inputs: [x])
    let mixed = try builder.add(.channelShuffle(axis: 3, groups: 4), name: "shuffle", inputs: [batched])
    let out = try builder.add(.reshape(targetShape: [2, 3, 8]), name: "out", inputs: [mixed])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    #expect(Self.kinds(rewritten) == ["channelShuffle", "reshape"])
    #expect(
      rewritten.nodes[0].operation == .channelShuffle(axis: 2, groups: 4)
        && rewritten.nodes[0].inputs == rewritten.inputs)
    let input = Self.ramp([2, 3, 8])
    #expect(Self.run(rewritten, input).values == Self.shuffled(input.values, channels: 8, groups: 4))
  }

  // MARK: Layer normalization

  /// PyTorch's LayerNorm before opset 17: mean, subtract, square by a power of 2, mean, add epsilon, sqrt,
  /// divide, scale by gamma and shift by beta, each a node of its own. One layer normalization with those
  /// parameters computes the same.
  @Test func layerNormFusesFromReductions() throws {
    let (channels, epsilon): (Int, Float) = (6, 1e-5)
    let gamma = (0..<channels).map { Float($0) / 4 - 0.5 }
    let beta = (0..<channels).map { 0.25 * Float($0) }
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, channels]))
    let mean = try builder.add(.reduce(Reduction(kind: .mean, axes: [2], keepDims: true)), name: "mean", inputs: [x])
    let centered = try builder.add(.elementwise(.subtract), name: "centered", inputs: [x, mean])
    let two = try Self.constant(&builder, "two", [1], [2])
    let squared = try builder.add(.elementwise(.power), name: "squared", inputs: [centered, two])
    let variance = try builder.add(
      .reduce(Reduction(kind: .mean, axes: [2], keepDims: true)), name: "variance", inputs: [squared])
    let eps = try Self.constant(&builder, "eps", [1], [epsilon])
    let shifted = try builder.add(.elementwise(.add), name: "shifted", inputs: [variance, eps])
    let root = try builder.add(.activation(.unary(UnaryFunction(kind: .sqrt))), name: "root", inputs: [shifted])
    let normalized = try builder.add(.elementwise(.divide), name: "normalized", inputs: [centered, root])
    let g = try Self.constant(&builder, "gamma", [channels], gamma)
    let scaled = try builder.add(.elementwise(.multiply), name: "scaled", inputs: [normalized, g])
    let b = try Self.constant(&builder, "beta", [channels], beta)
    let out = try builder.add(.elementwise(.add), name: "out", inputs: [scaled, b])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try LayerNormFusionPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["layerNormalization"])
    #expect(
      rewritten.nodes[0].operation
        == .layerNormalization(
          LayerNormalization(
            gamma: Constant(shape: [channels], values: gamma), beta: Constant(shape: [channels], values: beta),
            epsilon: epsilon)))
    #expect(
      rewritten[rewritten.outputs[0]].name == graph[graph.outputs[0]].name
        && rewritten.nodes[0].inputs == rewritten.inputs)
    let input = Self.ramp([2, 3, channels])
    let expected = Self.layerNormalized(
      input.values, channels: channels, epsilon: Double(epsilon), gamma: gamma, beta: beta)
    for (got, want) in zip(Self.run(rewritten, input).values, expected) {
      #expect(abs(got - want) <= 1e-5 * max(1, abs(want)))
    }
    for (got, want) in zip(Self.run(graph, input).values, expected) {
      #expect(abs(got - want) <= 1e-4 * max(1, abs(want)))
    }
  }

  /// The other spellings: the square as `d * d`, `d * rsqrt(variance + epsilon)`, no beta, and constants
  /// broadcast to a rank-4 `[1, 1, 1, C]` (as the passes leave a channels-first model's): the normalization,
  /// then a reshape adding the unit axis the constants gave the result.
  @Test func layerNormFusesOtherSpellings() throws {
    let channels = 4
    let gamma: [Float] = [1.5, -0.5, 2, 0.25]
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 2, channels]))
    let mean = try builder.add(.reduce(Reduction(kind: .mean, axes: [2], keepDims: true)), name: "mean", inputs: [x])
    let centered = try builder.add(.elementwise(.subtract), name: "centered", inputs: [x, mean])
    let squared = try builder.add(.elementwise(.multiply), name: "squared", inputs: [centered, centered])
    let variance = try builder.add(
      .reduce(Reduction(kind: .mean, axes: [2], keepDims: true)), name: "variance", inputs: [squared])
    let eps = try Self.constant(&builder, "eps", [1, 1, 1, 1], [1e-3])
    let shifted = try builder.add(.elementwise(.add), name: "shifted", inputs: [eps, variance])
    let inverse = try builder.add(.activation(.unary(UnaryFunction(kind: .rsqrt))), name: "inverse", inputs: [shifted])
    let normalized = try builder.add(.elementwise(.multiply), name: "normalized", inputs: [inverse, centered])
    let g = try Self.constant(&builder, "gamma", [1, 1, 1, channels], gamma)
    let out = try builder.add(.elementwise(.multiply), name: "out", inputs: [g, normalized])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try LayerNormFusionPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["layerNormalization", "reshape"])
    #expect(
      rewritten.nodes[0].operation
        == .layerNormalization(
          LayerNormalization(gamma: Constant(shape: [channels], values: gamma), beta: nil, epsilon: 1e-3)))
    #expect(rewritten[rewritten.outputs[0]].type.shape == [1, 3, 2, channels])
    let input = Self.ramp([3, 2, channels])
    let expected = Self.layerNormalized(
      input.values, channels: channels, epsilon: 1e-3, gamma: gamma, beta: [Float](repeating: 0, count: channels))
    for (got, want) in zip(Self.run(rewritten, input).values, expected) {
      #expect(abs(got - want) <= 1e-5 * max(1, abs(want)))
    }
  }

  /// Chains that are no layer normalization stay: the mean over another axis than the last, a centered
  /// tensor the graph also outputs, and a square of something else.
  @Test func otherReductionChainsStay() throws {
    func chain(meanAxis: Int = 2, exposeCentered: Bool = false, exponent: Float = 2) throws -> Graph {
      var builder = GraphBuilder()
      let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
      let mean = try builder.add(
        .reduce(Reduction(kind: .mean, axes: [meanAxis], keepDims: true)), name: "mean", inputs: [x])
      let centered = try builder.add(.elementwise(.subtract), name: "centered", inputs: [x, mean])
      let power = try Self.constant(&builder, "power", [1], [exponent])
      let squared = try builder.add(.elementwise(.power), name: "squared", inputs: [centered, power])
      let variance = try builder.add(
        .reduce(Reduction(kind: .mean, axes: [2], keepDims: true)), name: "variance", inputs: [squared])
      let root = try builder.add(.activation(.unary(UnaryFunction(kind: .sqrt))), name: "root", inputs: [variance])
      let out = try builder.add(.elementwise(.divide), name: "out", inputs: [centered, root])
      return builder.build(outputs: exposeCentered ? [out, centered] : [out])
    }
    var plain = try chain()
    try LayerNormFusionPass().run(&plain)
    #expect(Self.kinds(plain) == ["layerNormalization"], "the unchanged chain does fuse")
    for graph in [try chain(meanAxis: 1), try chain(exposeCentered: true), try chain(exponent: 3)] {
      var rewritten = graph
      try LayerNormFusionPass().run(&rewritten)
      #expect(Self.kinds(rewritten) == Self.kinds(graph))
    }
  }

  // MARK: Constants with unit axes in front

  /// `x * s` with `x` of `[H, W, C]` and a channels-first scale moved channels last (`[1, 1, 1, C]`): the
  /// constant loses its leading unit axis, the product is `[H, W, C]`, and a reshape adds the axis back.
  @Test func constantsLoseLeadingUnitAxes() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
    let scale = try Self.constant(&builder, "scale", [1, 1, 1, 4], [0.5, -1, 2, 3])
    let product = try builder.add(.elementwise(.multiply), name: "product", inputs: [scale, x])
    let out = try builder.add(.activation(.relu), name: "out", inputs: [product])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try SinkUnitReshapesPass().run(&rewritten)
    let multiply = try #require(rewritten.nodes.first { $0.operation.kindName == "multiply" })
    #expect(rewritten[multiply.output].type.shape == [2, 3, 4])
    #expect(rewritten[multiply.inputs[0]].type.shape == [1, 1, 4])
    #expect(Self.kinds(rewritten).suffix(3) == ["multiply", "activation", "reshape"])
    let input = Self.ramp([2, 3, 4])
    let expected = input.values.enumerated().map { max($0.element * [0.5, -1, 2, 3][$0.offset % 4], 0) }
    #expect(Self.run(rewritten, input).values == expected && Self.run(rewritten, input).shape == [1, 2, 3, 4])
    #expect(Self.run(graph, input).values == expected)
  }
}
