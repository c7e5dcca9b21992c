import Foundation
import ModelIR
import ReferenceRuntime
import Testing

/// Each graph pass on its own: the rewrite it promises (graph in, graph out), and the same numbers from
/// the reference runtime before and after (the IR's semantics are the oracle a pass must keep).
@Suite struct GraphPassTests {
  /// Deterministic inputs in [-1, 1].
  static func inputs(for graph: Graph, seed: UInt64 = 7) -> [Tensor] {
    var state = seed
    return graph.inputs.map { id in
      let shape = graph[id].type.shape
      return Tensor(
        shape: shape,
        values: (0..<shape.reduce(1, *)).map { _ in
          state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
          return Float(Int(state >> 40) % 2001 - 1000) / 1000
        })
    }
  }

  static func expectSameOutputs(_ before: Graph, _ after: Graph) {
    let inputs = inputs(for: before)
    let (a, b) = (Interpreter(graph: before).run(inputs), Interpreter(graph: after).run(inputs))
    #expect(a.map(\.shape) == b.map(\.shape))
    // Passes only move data: the values must be bit for bit the same.
    #expect(a.map(\.values) == b.map(\.values))
  }

  static func kinds(_ graph: Graph) -> [String] { graph.nodes.map(\.operation.kindName) }

  static func dense(_ inputs: Int, _ units: Int) -> ModelIR.Operation {
    .dense(
      Dense(
        kernel: Constant(shape: [inputs, units], values: (0..<(inputs * units)).map { Float($0 % 7) / 7 - 0.4 }),
        bias: nil))
  }

  @Test func inverseTransposesCancel() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 5, 3]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "to_chw", inputs: [x])
    let hwc = try builder.add(.permute(order: [1, 2, 0]), name: "to_hwc", inputs: [chw])
    let y = try builder.add(.activation(.relu), name: "relu", inputs: [hwc])
    let graph = builder.build(outputs: [y])
    var rewritten = graph
    try CancelTransposesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["activation"])
    #expect(rewritten.nodes[0].inputs == [rewritten.inputs[0]])
    Self.expectSameOutputs(graph, rewritten)
  }

  @Test func transposeOfTransposeMerges() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
    let a = try builder.add(.permute(order: [1, 0, 2]), name: "a", inputs: [x])
    let b = try builder.add(.permute(order: [0, 2, 1]), name: "b", inputs: [a])
    let graph = builder.build(outputs: [b])
    var rewritten = graph
    try CancelTransposesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["permute"])
    // numpy: x.transpose(1, 0, 2).transpose(0, 2, 1) == x.transpose(1, 2, 0).
    #expect(rewritten.nodes[0].operation == .permute(order: [1, 2, 0]))
    Self.expectSameOutputs(graph, rewritten)
  }

  @Test func outputTransposeStays() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3]))
    let a = try builder.add(.permute(order: [1, 0]), name: "a", inputs: [x])
    let b = try builder.add(.permute(order: [1, 0]), name: "b", inputs: [a])
    var graph = builder.build(outputs: [b])
    try CancelTransposesPass().run(&graph)
    // The graph output keeps its value and name: something must still produce it, a copy of x.
    #expect(graph.outputs.count == 1 && graph.nodes.contains { $0.output == graph.outputs[0] })
    #expect(Self.kinds(graph) == ["reshape"])
  }

  @Test func reshapeChainsShrink() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
    let same = try builder.add(.reshape(targetShape: [2, 3, 4]), name: "same", inputs: [x])
    let a = try builder.add(.reshape(targetShape: [6, 4]), name: "a", inputs: [same])
    let b = try builder.add(.reshape(targetShape: [24]), name: "b", inputs: [a])
    let y = try builder.add(.activation(.tanh), name: "tanh", inputs: [b])
    let graph = builder.build(outputs: [y])
    var rewritten = graph
    try CancelReshapesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["reshape", "activation"])
    #expect(
      rewritten.nodes[0].inputs == [rewritten.inputs[0]] && rewritten.nodes[0].operation == .reshape(targetShape: [24]))
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A long chain mixing identity reshapes, reshape pairs that cancel and flattens between activations:
  /// one run of the pass leaves only the activations (and the reshape a graph output needs).
  @Test func longReshapeChainsShrinkInOneRun() throws {
    var builder = GraphBuilder()
    var value = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
    for step in 0..<2_000 {
      switch step % 4 {
      case 0: value = try builder.add(.reshape(targetShape: [2, 3, 4]), name: "same\(step)", inputs: [value])
      case 1: value = try builder.add(.flatten, name: "flat\(step)", inputs: [value])
      case 2: value = try builder.add(.reshape(targetShape: [2, 3, 4]), name: "back\(step)", inputs: [value])
      default: value = try builder.add(.activation(.tanh), name: "tanh\(step)", inputs: [value])
      }
    }
    let last = try builder.add(.reshape(targetShape: [24]), name: "out", inputs: [value])
    let graph = builder.build(outputs: [last])
    var rewritten = graph
    try CancelReshapesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == Array(repeating: "activation", count: 500) + ["reshape"])
    #expect(rewritten.outputs == graph.outputs && rewritten.nodes.last?.output == graph.outputs[0])
    Self.expectSameOutputs(graph, rewritten)
  }

  /// An operation holding a weight float16 cannot store (and one reading such a constant node) computes
  /// between casts to float32 and back; nothing else changes, and a second run changes nothing.
  @Test func float32IslandsWrapOnlyTheOperationsWithWeightsBeyondFloat16() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4]))
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [x])
    let big = try builder.add(.constant(Constant(shape: [4], values: [1.05e7, 1, 1, 1])), name: "big", inputs: [])
    let scaled = try builder.add(.elementwise(.multiply), name: "scaled", inputs: [relu, big])
    let small = try builder.add(.constant(Constant(shape: [4], values: [1, 2, 3, 4])), name: "small", inputs: [])
    let y = try builder.add(.elementwise(.add), name: "shift", inputs: [scaled, small])
    var graph = builder.build(outputs: [y])
    #expect(Float32IslandsPass.operations(in: graph).map { graph.nodes[$0].name } == ["scaled"])
    try Float32IslandsPass().run(&graph)
    let kinds = graph.nodes.map { node -> String in
      if case .cast(let type) = node.operation { return "cast.\(type.rawValue)" }
      return node.name
    }
    #expect(kinds == ["relu", "big", "cast.float32", "scaled", "cast.float16", "small", "shift"])
    let scaledNode = try #require(graph.nodes.first { $0.name == "scaled" })
    #expect(graph[scaledNode.inputs[0]].type.dataType == .float32 && graph[scaledNode.output].type.dataType == .float32)
    #expect(graph.outputs == [y])
    let once = graph
    try Float32IslandsPass().run(&graph)
    #expect(graph == once)
  }

  /// Core ML's `[1, C, H, W]` blob between a channels-first transpose and the transpose back: the unit
  /// axis moves out of the way and the two transposes cancel.
  @Test func unitAxisReshapeMovesPastTranspose() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 5, 3]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "to_chw", inputs: [x])
    let batched = try builder.add(.reshape(targetShape: [1, 3, 4, 5]), name: "batched", inputs: [chw])
    let nhwc = try builder.add(.permute(order: [0, 2, 3, 1]), name: "to_nhwc", inputs: [batched])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [nhwc])
    let flat = try builder.add(.reshape(targetShape: [1, 60]), name: "flat", inputs: [relu])
    let dense = try builder.add(Self.dense(60, 4), name: "dense", inputs: [flat])
    let softmax = try builder.add(.softmax(axis: 1), name: "softmax", inputs: [dense])
    let out = try builder.add(.reshape(targetShape: [4]), name: "out", inputs: [softmax])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    #expect(Self.kinds(rewritten) == ["activation", "reshape", "dense", "softmax", "reshape"])
    // No tensor keeps the unit batch axis: every shape is one the classic writer takes.
    #expect(
      rewritten.nodes.allSatisfy {
        rewritten[$0.output].type.shape.first != 1 || rewritten[$0.output].type.shape.count == 1
      })
    #expect(rewritten.nodes.first { $0.operation.kindName == "softmax" }?.operation == .softmax(axis: 0))
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A permutation that is not undone keeps the order of the non-unit axes.
  @Test func unitAxisReshapeThroughOtherTranspose() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
    let batched = try builder.add(.reshape(targetShape: [2, 1, 3, 4]), name: "batched", inputs: [x])
    let turned = try builder.add(.permute(order: [3, 1, 0, 2]), name: "turned", inputs: [batched])
    let sigmoid = try builder.add(.activation(.sigmoid), name: "s", inputs: [turned])
    let graph = builder.build(outputs: [sigmoid])
    var rewritten = graph
    try SinkUnitReshapesPass().run(&rewritten)
    #expect(Self.kinds(rewritten).first == "permute")
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A dense layer needs its input axis unchanged; a parametric ReLU's per-channel slopes keep it from moving.
  @Test func reshapeStaysBeforeWhatItChanges() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6]))
    let column = try builder.add(.reshape(targetShape: [6, 1]), name: "column", inputs: [x])
    let dense = try builder.add(Self.dense(1, 2), name: "dense", inputs: [column])
    let graph = builder.build(outputs: [dense])
    var rewritten = graph
    try SinkUnitReshapesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["reshape", "dense"])
  }

  /// A transpose that only moves unit axes is a reshape; one that reorders real axes stays.
  @Test func unitPermuteBecomesReshape() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([8, 1, 1]))
    let hwc = try builder.add(.permute(order: [1, 2, 0]), name: "to_hwc", inputs: [x])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [hwc])
    let turned = try builder.add(.reshape(targetShape: [2, 4]), name: "grid", inputs: [relu])
    let swapped = try builder.add(.permute(order: [1, 0]), name: "swap", inputs: [turned])
    let graph = builder.build(outputs: [swapped])
    var rewritten = graph
    try UnitPermutesAsReshapesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["reshape", "activation", "reshape", "permute"])
    #expect(rewritten.nodes[0].operation == .reshape(targetShape: [1, 1, 8]))
    Self.expectSameOutputs(graph, rewritten)
  }

  /// Transposes separated by an element-wise activation meet and cancel.
  @Test func transposeMovesPastActivation() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 5, 3]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "to_chw", inputs: [x])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [chw])
    let hwc = try builder.add(.permute(order: [1, 2, 0]), name: "to_hwc", inputs: [relu])
    let out = try builder.add(.activation(.tanh), name: "out", inputs: [hwc])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try CancelTransposesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["activation", "activation"])
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A batch axis put in front of a 1-D signal before spatial layers (MIL's `[1, C, 1, L]`): the layers
  /// run on the `[1, L, C]` image, a slice of it keeps its cut, and a reshape read by two branches moves
  /// along both.
  @Test func batchAxisLeavesSpatialLayers() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([1, 8]))
    let image = try builder.add(.reshape(targetShape: [1, 1, 8, 1]), name: "image", inputs: [x])
    let pooled = try builder.add(
      .pooling2D(Pooling2D(kind: .max, pool: [1, 2], strides: [1, 2], padding: .valid)), name: "pool", inputs: [image])
    let cut = try builder.add(
      .slice(StridedSlice(begin: [0, 0, 1, 0], end: [1, 1, 4, 1], strides: [1, 1, 1, 1])), name: "cut", inputs: [pooled]
    )
    let branch = try builder.add(.activation(.sigmoid), name: "branch", inputs: [image])
    let flatCut = try builder.add(.reshape(targetShape: [3]), name: "flat_cut", inputs: [cut])
    let flatBranch = try builder.add(.reshape(targetShape: [8]), name: "flat_branch", inputs: [branch])
    let graph = builder.build(outputs: [flatCut, flatBranch])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    // No rank-4 tensor is left: the pooling and the slice work on the [1, 8, 1] image.
    #expect(
      rewritten.nodes.allSatisfy { rewritten[$0.output].type.shape.count <= 3 },
      "\(rewritten.nodes.map { rewritten[$0.output].type.shape })")
    Self.expectSameOutputs(graph, rewritten)
  }

  /// Two channels-first branches joined by an add and a concatenation (a residual block as a Core ML or
  /// ONNX graph has it): the transposes of the inputs become one after each join, then meet their
  /// inverse; the batch axes the branches carry leave the joins the same way.
  @Test func transposesAndBatchAxesLeaveJoins() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 5, 3]))
    func branch(_ name: String) throws -> ValueID {
      let relu = try builder.add(.activation(name == "a" ? .relu : .tanh), name: name, inputs: [x])
      let chw = try builder.add(.permute(order: [2, 0, 1]), name: name + "_chw", inputs: [relu])
      return try builder.add(.reshape(targetShape: [1, 3, 4, 5]), name: name + "_batch", inputs: [chw])
    }
    let (a, b) = (try branch("a"), try branch("b"))
    let sum = try builder.add(.elementwise(.add), name: "sum", inputs: [a, b])
    let sigmoid = try builder.add(.activation(.sigmoid), name: "sigmoid", inputs: [sum])
    let joined = try builder.add(.concatenate(axis: 1), name: "joined", inputs: [sigmoid, b])
    let unbatched = try builder.add(.reshape(targetShape: [6, 4, 5]), name: "unbatched", inputs: [joined])
    let hwc = try builder.add(.permute(order: [1, 2, 0]), name: "hwc", inputs: [unbatched])
    let graph = builder.build(outputs: [hwc])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    // The graph output keeps a value of its own: a copy of the concatenation.
    #expect(
      Self.kinds(rewritten) == ["activation", "activation", "add", "activation", "concatenate", "reshape"],
      "\(Self.kinds(rewritten))")
    #expect(rewritten.nodes.contains { $0.operation == .concatenate(axis: 2) })
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A join whose inputs are transposed differently (or only one of them) keeps its transposes.
  @Test func mixedTransposesStayBeforeAJoin() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 4, 4]))
    let p = try builder.add(.permute(order: [2, 0, 1]), name: "p", inputs: [x])
    let q = try builder.add(.permute(order: [1, 2, 0]), name: "q", inputs: [x])
    let sum = try builder.add(.elementwise(.add), name: "sum", inputs: [p, q])
    let graph = builder.build(outputs: [sum])
    var rewritten = graph
    try CancelTransposesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["permute", "permute", "add"])
    try SinkUnitReshapesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["permute", "permute", "add"])
  }

  /// A channels-first bias (`[C, 1, 1]` constant) and a squeeze-and-excitation scale (a `[C]` vector
  /// reshaped to `[1, C, 1, 1]`) meet transposed tensors: they are rewritten as the same transpose, so the
  /// joins move and the transposes meet their inverse; a reduction that drops H and W takes the
  /// channels-last tensor directly.
  @Test func biasesScalesAndReductionsLeaveTheirTransposes() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([1, 4, 5, 3]))
    let nchw = try builder.add(.permute(order: [0, 3, 1, 2]), name: "nchw", inputs: [x])
    let bias = try builder.add(.constant(Constant(shape: [3, 1, 1], values: [0.5, -1, 2])), name: "bias", inputs: [])
    let biased = try builder.add(.elementwise(.add), name: "biased", inputs: [nchw, bias])
    let pooled = try builder.add(
      .reduce(Reduction(kind: .mean, axes: [2, 3], keepDims: false)), name: "pooled", inputs: [biased])
    let gate = try builder.add(.activation(.sigmoid), name: "gate", inputs: [pooled])
    let scale = try builder.add(.reshape(targetShape: [1, 3, 1, 1]), name: "scale", inputs: [gate])
    let scaled = try builder.add(.elementwise(.multiply), name: "scaled", inputs: [biased, scale])
    let back = try builder.add(.permute(order: [0, 2, 3, 1]), name: "back", inputs: [scaled])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [back])
    let graph = builder.build(outputs: [relu])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    #expect(!Self.kinds(rewritten).contains("permute"), "\(Self.kinds(rewritten))")
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A transpose read by an activation and by the join it feeds (`x.T * sigmoid(x.T)`) is split, each
  /// copy moves on, and they meet again at the join.
  @Test func forkedTransposesMeetAgain() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 5, 3]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "chw", inputs: [x])
    let gate = try builder.add(.activation(.sigmoid), name: "gate", inputs: [chw])
    let swish = try builder.add(.elementwise(.multiply), name: "swish", inputs: [chw, gate])
    let hwc = try builder.add(.permute(order: [1, 2, 0]), name: "hwc", inputs: [swish])
    let out = try builder.add(.activation(.tanh), name: "out", inputs: [hwc])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try CancelTransposesPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["activation", "multiply", "activation"], "\(Self.kinds(rewritten))")
    Self.expectSameOutputs(graph, rewritten)
  }

  /// Per-channel factors in front of a convolution (through a zero padding) go into its kernel: the
  /// multiply is gone and the outputs agree within float32 rounding of the products.
  @Test func channelScalesFoldIntoTheConvolution() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([5, 5, 2]))
    let factors = try builder.add(
      .constant(Constant(shape: [2], values: [1 / 0.229, 1 / 0.224])), name: "factors", inputs: [])
    let scaled = try builder.add(.elementwise(.multiply), name: "scaled", inputs: [x, factors])
    let padded = try builder.add(
      .zeroPadding2D(Box2D(top: 1, bottom: 1, left: 1, right: 1)), name: "pad", inputs: [scaled])
    let kernel = Constant(shape: [3, 3, 1, 4], values: (0..<36).map { Float($0 % 5) / 5 - 0.3 })
    let conv = try builder.add(
      .convolution2D(
        Convolution2D(kernel: kernel, bias: nil, strides: [1, 1], dilations: [1, 1], padding: .valid, groups: 2)),
      name: "conv", inputs: [padded])
    let graph = builder.build(outputs: [conv])
    var rewritten = graph
    try ChannelScaleFoldPass().run(&rewritten)
    #expect(Self.kinds(rewritten) == ["zeroPadding2D", "convolution2D"])
    let inputs = Self.inputs(for: graph)
    let (a, b) = (Interpreter(graph: graph).run(inputs)[0].values, Interpreter(graph: rewritten).run(inputs)[0].values)
    // Each output sums 9 products; folding rounds each weight once more: within 9 float32 roundings of the sum of |terms|.
    let bound = Float(18) * Float.ulpOfOne * 9 * 4.5
    #expect(zip(a, b).allSatisfy { abs($0 - $1) <= bound }, "\(zip(a, b).map { abs($0 - $1) }.max() ?? 0)")
    // A multiply read by something else stays.
    var other = GraphBuilder()
    let y = try other.addInput(name: "y", type: TensorType([5, 5, 2]))
    let f = try other.add(.constant(Constant(shape: [2], values: [2, 3])), name: "f", inputs: [])
    let m = try other.add(.elementwise(.multiply), name: "m", inputs: [y, f])
    let r = try other.add(.activation(.relu), name: "r", inputs: [m])
    var kept = other.build(outputs: [r])
    try ChannelScaleFoldPass().run(&kept)
    #expect(Self.kinds(kept) == ["constant", "multiply", "activation"])
  }

  /// GELU written out as PyTorch exports it (`x / sqrt(2)`, erf, `+ 1`, `* x`, `* 0.5`) is one GELU;
  /// the same chain with another constant stays.
  @Test func geluChainsFuse() throws {
    func chain(root: Float) throws -> Graph {
      var builder = GraphBuilder()
      let x = try builder.addInput(name: "x", type: TensorType([2, 6]))
      let c = { (value: Float, name: String) in
        try builder.add(.constant(Constant(shape: [1], values: [value])), name: name, inputs: [])
      }
      let divided = try builder.add(.elementwise(.divide), name: "div", inputs: [x, try c(root, "root")])
      let erf = try builder.add(.activation(.erf), name: "erf", inputs: [divided])
      let plus = try builder.add(.elementwise(.add), name: "plus", inputs: [erf, try c(1, "one")])
      let times = try builder.add(.elementwise(.multiply), name: "times", inputs: [x, plus])
      let half = try builder.add(.elementwise(.multiply), name: "half", inputs: [times, try c(0.5, "half_c")])
      return builder.build(outputs: [half])
    }
    let graph = try chain(root: Float(2).squareRoot())
    var rewritten = graph
    try GeluFusionPass().run(&rewritten)
    #expect(rewritten.nodes.map(\.operation) == [.activation(.gelu(approximate: false))])
    let inputs = Self.inputs(for: graph)
    let (a, b) = (Interpreter(graph: graph).run(inputs)[0].values, Interpreter(graph: rewritten).run(inputs)[0].values)
    // Five float32 roundings in the chain against one: within a few units in the last place of |x|.
    #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 8 * Float.ulpOfOne }, "\(zip(a, b).map { abs($0 - $1) }.max() ?? 0)")
    var other = try chain(root: 1.5)
    try GeluFusionPass().run(&other)
    #expect(other.nodes.contains { $0.operation == .activation(.erf) })

    // PyTorch's dynamo exporter (opset 18) halves the sum first: x * (0.5 * (1 + erf(x / sqrt(2)))).
    func halvedFirst(half value: Float) throws -> Graph {
      var builder = GraphBuilder()
      let x = try builder.addInput(name: "x", type: TensorType([3, 4]))
      let c = { (value: Float, name: String) in
        try builder.add(.constant(Constant(shape: [1], values: [value])), name: name, inputs: [])
      }
      let divided = try builder.add(
        .elementwise(.divide), name: "div", inputs: [x, try c(Float(2).squareRoot(), "root")])
      let erf = try builder.add(.activation(.erf), name: "erf", inputs: [divided])
      let plus = try builder.add(.elementwise(.add), name: "plus", inputs: [erf, try c(1, "one")])
      let halved = try builder.add(.elementwise(.multiply), name: "halved", inputs: [try c(value, "half_c"), plus])
      let gelu = try builder.add(.elementwise(.multiply), name: "gelu", inputs: [x, halved])
      return builder.build(outputs: [gelu])
    }
    let dynamo = try halvedFirst(half: 0.5)
    var fused = dynamo
    try GeluFusionPass().run(&fused)
    #expect(fused.nodes.map(\.operation) == [.activation(.gelu(approximate: false))])
    let dynamoInputs = Self.inputs(for: dynamo)
    let (c, d) = (
      Interpreter(graph: dynamo).run(dynamoInputs)[0].values, Interpreter(graph: fused).run(dynamoInputs)[0].values
    )
    #expect(zip(c, d).allSatisfy { abs($0 - $1) <= 8 * Float.ulpOfOne }, "\(zip(c, d).map { abs($0 - $1) }.max() ?? 0)")
    var notHalf = try halvedFirst(half: 0.25)
    try GeluFusionPass().run(&notHalf)
    #expect(notHalf.nodes.contains { $0.operation == .activation(.erf) })
  }

  /// Twelve residual blocks as an ONNX import has them (a batch axis, each convolution between
  /// transposes to and from channels first): the pipeline reaches its fixed point with no transpose and
  /// no batch axis left, however deep the network.
  @Test func deepResidualStacksLoseEveryTranspose() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6, 6, 4]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "chw", inputs: [x])
    var value = try builder.add(.reshape(targetShape: [1, 4, 6, 6]), name: "batch", inputs: [chw])
    let kernel = Constant(shape: [1, 1, 4, 4], values: (0..<16).map { Float($0 % 5) / 10 - 0.2 })
    for block in 0..<12 {
      func conv(_ input: ValueID, _ name: String) throws -> ValueID {
        let nhwc = try builder.add(.permute(order: [0, 2, 3, 1]), name: name + "_to_nhwc", inputs: [input])
        let y = try builder.add(
          .convolution2D(
            Convolution2D(kernel: kernel, bias: nil, strides: [1, 1], dilations: [1, 1], padding: .valid, groups: 1)),
          name: name, inputs: [nhwc])
        return try builder.add(.permute(order: [0, 3, 1, 2]), name: name + "_to_nchw", inputs: [y])
      }
      let a = try builder.add(.activation(.relu), name: "relu\(block)", inputs: [try conv(value, "conv\(block)a")])
      let b = try conv(a, "conv\(block)b")
      value = try builder.add(
        .activation(.tanh), name: "out\(block)",
        inputs: [try builder.add(.elementwise(.add), name: "add\(block)", inputs: [b, value])])
    }
    let hwc = try builder.add(.permute(order: [0, 2, 3, 1]), name: "hwc", inputs: [value])
    let out = try builder.add(.reshape(targetShape: [6, 6, 4]), name: "out", inputs: [hwc])
    let graph = builder.build(outputs: [out])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    #expect(
      !Self.kinds(rewritten).contains("permute"),
      "\(Self.kinds(rewritten).filter { $0 == "permute" }.count) transposes left")
    #expect(
      rewritten.nodes.dropLast().allSatisfy { rewritten[$0.output].type.shape.count == 3 }, "a batch axis is left")
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A network ending in `relu` then a mean over H and W (MnasNet's head) from channels first: the
  /// transpose moves past the activation into the reduction, which becomes a global pooling.
  @Test func transposeMovesThroughAnActivationIntoAReduction() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 4, 5]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "chw", inputs: [x])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [chw])
    let mean = try builder.add(
      .reduce(Reduction(kind: .mean, axes: [1, 2], keepDims: false)), name: "mean", inputs: [relu])
    let graph = builder.build(outputs: [mean])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    #expect(
      Self.kinds(rewritten).contains("globalPooling2D") && !Self.kinds(rewritten).contains("permute"),
      "\(Self.kinds(rewritten))")
    let inputs = Self.inputs(for: graph)
    let (a, b) = (Interpreter(graph: graph).run(inputs)[0].values, Interpreter(graph: rewritten).run(inputs)[0].values)
    // A mean of 12 values summed in another order: within 12 float32 roundings of the largest magnitude.
    #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 12 * Float.ulpOfOne }, "\(zip(a, b).map { abs($0 - $1) })")
  }

  /// Zero padding of an image's height and width is a ZeroPadding2D; padding channels, or by another value, stays.
  @Test func spatialZeroPadding() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 4, 2]))
    let spatial = try builder.add(
      .constantPad(ConstantPadding(before: [1, 0, 0], after: [2, 3, 0], value: 0)), name: "spatial", inputs: [x])
    let channels = try builder.add(
      .constantPad(ConstantPadding(before: [0, 0, 1], after: [0, 0, 0], value: 0)), name: "channels", inputs: [spatial])
    let ones = try builder.add(
      .constantPad(ConstantPadding(before: [1, 1, 0], after: [1, 1, 0], value: 1)), name: "ones", inputs: [channels])
    let graph = builder.build(outputs: [ones])
    var rewritten = graph
    try SpatialZeroPaddingPass().run(&rewritten)
    #expect(rewritten.nodes[0].operation == .zeroPadding2D(Box2D(top: 1, bottom: 2, left: 0, right: 3)))
    #expect(Self.kinds(rewritten) == ["zeroPadding2D", "constantPad", "constantPad"])
    Self.expectSameOutputs(graph, rewritten)
  }

  /// A Core ML global average pooling read back from an ML Program: a mean over H and W of `[1, C, H, W]`
  /// after the transpose out of channels-last becomes a global pooling of the `[H, W, C]` image; a zero
  /// padding between a transpose and its inverse pads the image directly.
  @Test func reductionsAndPaddingLeaveTheirTransposes() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6, 6, 4]))
    let chw = try builder.add(.permute(order: [2, 0, 1]), name: "to_chw", inputs: [x])
    let padded = try builder.add(
      .constantPad(ConstantPadding(before: [0, 1, 2], after: [0, 1, 0], value: 0)), name: "pad", inputs: [chw])
    let hwc = try builder.add(.permute(order: [1, 2, 0]), name: "to_hwc", inputs: [padded])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [hwc])
    let back = try builder.add(.permute(order: [2, 0, 1]), name: "back", inputs: [relu])
    let batched = try builder.add(.reshape(targetShape: [1, 4, 8, 8]), name: "batched", inputs: [back])
    let mean = try builder.add(
      .reduce(Reduction(kind: .mean, axes: [2, 3], keepDims: true)), name: "gap", inputs: [batched])
    let flat = try builder.add(.reshape(targetShape: [4]), name: "flat", inputs: [mean])
    let graph = builder.build(outputs: [flat])
    var rewritten = graph
    try GraphPipeline.standard.run(&rewritten)
    #expect(Self.kinds(rewritten) == ["zeroPadding2D", "activation", "globalPooling2D", "reshape"])
    // Padding 1 row at the top and bottom, 2 columns at the left, as the [C, H, W] pad said.
    #expect(rewritten.nodes[0].operation == .zeroPadding2D(Box2D(top: 1, bottom: 1, left: 2, right: 0)))
    // The global pooling sums the 64 values in another order than the reduction: float32 sums of n
    // non-negative terms differ by at most n * 2^-24 relative.
    let inputs = Self.inputs(for: graph)
    let (a, b) = (Interpreter(graph: graph).run(inputs)[0].values, Interpreter(graph: rewritten).run(inputs)[0].values)
    #expect(a.count == b.count)
    for (x, y) in zip(a, b) { #expect(abs(x - y) <= 64 * 0x1p-24 * abs(x), "\(x) vs \(y)") }
  }

  @Test func float16CastsGo() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([8]))
    let half = try builder.add(.cast(.float16), name: "half", inputs: [x])
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [half])
    let back = try builder.add(.cast(.float32), name: "back", inputs: [relu])
    var graph = builder.build(outputs: [back])
    #expect(graph[relu].type.dataType == .float16)
    try RemoveFloat16CastsPass().run(&graph)
    #expect(!Self.kinds(graph).contains { $0.hasPrefix("cast") })
    #expect(graph.values.allSatisfy { $0.type.dataType == .float32 })
    #expect(graph[graph.outputs[0]].name == "back_output")
  }
}

/// Constant folding: what depends only on constants becomes a constant (computed by the runtime's direct loops).
@Suite struct ConstantFoldingPassTests {
  @Test func constantSubgraphsFold() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3]))
    let a = try builder.add(.constant(Constant(shape: [2, 3], values: [1, 2, 3, 4, 5, 6])), name: "a", inputs: [])
    let b = try builder.add(.constant(Constant(shape: [3], values: [10, 20, 30])), name: "b", inputs: [])
    let sum = try builder.add(.elementwise(.add), name: "sum", inputs: [a, b])
    let scaled = try builder.add(.activation(.linear(scale: 2, offset: -1)), name: "scaled", inputs: [sum])
    let y = try builder.add(.elementwise(.multiply), name: "y", inputs: [x, scaled])
    let graph = builder.build(outputs: [y])
    var folded = graph
    try ConstantFoldingPass().run(&folded)
    #expect(GraphPassTests.kinds(folded) == ["constant", "multiply"])
    // (a + b) * 2 - 1, by hand.
    guard case .constant(let value) = folded.nodes[0].operation else {
      Issue.record("not folded")
      return
    }
    #expect(value.shape == [2, 3] && value.values == [21, 43, 65, 27, 49, 71])
    #expect(folded[folded.nodes[0].output].name == graph[scaled].name)
    GraphPassTests.expectSameOutputs(graph, folded)
  }

  @Test func largeResultsAndInputsStay() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4]))
    let small = try builder.add(.constant(Constant(shape: [1], values: [3])), name: "small", inputs: [])
    let big = try builder.add(.reshape(targetShape: [1, 1]), name: "big", inputs: [small])
    let y = try builder.add(.elementwise(.add), name: "y", inputs: [x, small])
    let graph = builder.build(outputs: [y, big])
    var folded = graph
    try ConstantFoldingPass(maximumElements: 0).run(&folded)
    #expect(GraphPassTests.kinds(folded) == GraphPassTests.kinds(graph))
  }
}
