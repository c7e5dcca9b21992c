import Foundation
import ModelIR
import ReferenceRuntime
import Testing

/// The passes that turn tf2onnx's sequence idioms into what classic Core ML layers take (issue 35): each on
/// its own, the rewrite it promises, the same numbers from the reference runtime before and after, and
/// the forms it must leave alone.
@Suite struct SequencePassTests {
  static func run(_ graph: Graph, _ inputs: [Tensor]) -> [Tensor] { Interpreter(graph: graph).run(inputs) }

  /// tf2onnx's bidirectional LSTM `Y` `[T, 2, 1, H]` cut into its directions (slice + squeeze each) and
  /// joined along the features: the concatenation becomes a reshape of `Y`, the slices go.
  @Test func concatOfCoveringSlicesIsAReshape() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 8]))
    let y = try builder.add(.reshape(targetShape: [3, 2, 1, 4]), name: "y", inputs: [x])
    let forward = try builder.add(
      .slice(StridedSlice(begin: [0, 0, 0, 0], end: [3, 1, 1, 4], strides: [1, 1, 1, 1])), name: "fw", inputs: [y])
    let backward = try builder.add(
      .slice(StridedSlice(begin: [0, 1, 0, 0], end: [3, 2, 1, 4], strides: [1, 1, 1, 1])), name: "bw", inputs: [y])
    let f = try builder.add(.reshape(targetShape: [3, 1, 4]), name: "fw_squeeze", inputs: [forward])
    let b = try builder.add(.reshape(targetShape: [3, 1, 4]), name: "bw_squeeze", inputs: [backward])
    let joined = try builder.add(.concatenate(axis: 2), name: "join", inputs: [f, b])
    let graph = builder.build(outputs: [joined])
    var rewritten = graph
    try ConcatOfSlicesPass().run(&rewritten)
    #expect(GraphPassTests.kinds(rewritten) == ["reshape", "reshape"])
    #expect(rewritten.nodes.last?.inputs == [y])
    GraphPassTests.expectSameOutputs(graph, rewritten)
  }

  /// Slices joined in another order, slices that leave a gap, and a join along an axis that interleaves
  /// the pieces all compute something else than the tensor: unchanged.
  @Test(arguments: [
    ([(1, 2), (0, 1)], 2, [3, 1, 4]),  // the backward half first
    ([(0, 1), (0, 1)], 2, [3, 1, 4]),  // the same half twice
    ([(0, 1), (1, 2)], 0, [3, 1, 4]),  // joined along time: the halves one after the other, not side by side
  ])
  func slicesThatDoNotReassembleStay(_ ranges: [(Int, Int)], _ axis: Int, _ pieceShape: [Int]) throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 2, 1, 4]))
    var pieces: [ValueID] = []
    for (index, range) in ranges.enumerated() {
      let slice = try builder.add(
        .slice(StridedSlice(begin: [0, range.0, 0, 0], end: [3, range.1, 1, 4], strides: [1, 1, 1, 1])),
        name: "s\(index)", inputs: [x])
      pieces.append(try builder.add(.reshape(targetShape: pieceShape), name: "r\(index)", inputs: [slice]))
    }
    let joined = try builder.add(.concatenate(axis: axis), name: "join", inputs: pieces)
    let graph = builder.build(outputs: [joined])
    var rewritten = graph
    try ConcatOfSlicesPass().run(&rewritten)
    #expect(GraphPassTests.kinds(rewritten) == GraphPassTests.kinds(graph))
  }

  /// A bias added after a dense layer over a sequence (Tensordot + Add) becomes the dense layer's bias.
  @Test func addedBiasFoldsIntoTheDenseLayer() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([5, 4]))
    let projected = try builder.add(GraphPassTests.dense(4, 3), name: "matmul", inputs: [x])
    let bias = try builder.add(.constant(Constant(shape: [1, 3], values: [0.5, -1, 2])), name: "b", inputs: [])
    let sum = try builder.add(.elementwise(.add), name: "bias_add", inputs: [bias, projected])
    let graph = builder.build(outputs: [sum])
    var rewritten = graph
    try DenseBiasFoldPass().run(&rewritten)
    #expect(GraphPassTests.kinds(rewritten) == ["dense"])
    guard case .dense(let dense)? = rewritten.nodes.first?.operation else {
      Issue.record("no dense layer")
      return
    }
    #expect(dense.bias?.values == [0.5, -1, 2])
    #expect(rewritten.nodes.first?.name == "bias_add" && rewritten.outputs == graph.outputs)
    let inputs = GraphPassTests.inputs(for: graph)
    let (a, b) = (Self.run(graph, inputs)[0].values, Self.run(rewritten, inputs)[0].values)
    // One rounding apart at most: the bias is added inside the dense layer's sum instead of after it.
    #expect(zip(a, b).allSatisfy { abs($0 - $1) <= 1e-6 * max(1, abs($0)) })
  }

  /// The dense result read elsewhere too, or an add of a computed tensor or of a non-vector: unchanged.
  @Test func biasesThatAreNotTheDenseLayersStay() throws {
    for variant in 0..<3 {
      var builder = GraphBuilder()
      let x = try builder.addInput(name: "x", type: TensorType([5, 4]))
      let projected = try builder.add(GraphPassTests.dense(4, 3), name: "matmul", inputs: [x])
      let other: ValueID
      switch variant {
      case 1: other = try builder.add(.activation(.relu), name: "computed", inputs: [projected])
      case 2:
        other = try builder.add(
          .constant(Constant(shape: [5, 3], values: (0..<15).map(Float.init))), name: "grid", inputs: [])
      default: other = try builder.add(.constant(Constant(shape: [3], values: [1, 2, 3])), name: "b", inputs: [])
      }
      let sum = try builder.add(.elementwise(.add), name: "bias_add", inputs: [projected, other])
      let outputs = variant == 0 ? [sum, projected] : [sum]
      let graph = builder.build(outputs: outputs)
      var rewritten = graph
      try DenseBiasFoldPass().run(&rewritten)
      #expect(GraphPassTests.kinds(rewritten) == GraphPassTests.kinds(graph), "variant \(variant)")
    }
  }

  /// Token ids reshaped to `[1, T]` (an ONNX batch axis) before an embedding: the reshape moves past the
  /// lookup, so the embedding reads the `[T]` ids itself (what a classic embedding layer takes).
  @Test func unitAxesMovePastAnEmbedding() throws {
    var builder = GraphBuilder()
    let ids = try builder.addInput(name: "ids", type: TensorType([6]))
    let batched = try builder.add(.reshape(targetShape: [1, 6]), name: "batched", inputs: [ids])
    let table = Constant(shape: [10, 3], values: (0..<30).map { Float($0) / 10 })
    let embedded = try builder.add(.embedding(table: table), name: "embed", inputs: [batched])
    let steps = try builder.add(.reshape(targetShape: [6, 3]), name: "steps", inputs: [embedded])
    let graph = builder.build(outputs: [steps])
    var rewritten = graph
    try SinkUnitReshapesPass().run(&rewritten)
    try CancelReshapesPass().run(&rewritten)
    // The graph output keeps its node (a reshape that changes nothing, by the output's name).
    #expect(GraphPassTests.kinds(rewritten) == ["embedding", "reshape"])
    #expect(rewritten.nodes.first?.inputs == [ids])
    #expect(rewritten.nodes.first.map { rewritten[$0.output].type.shape } == [6, 3])
    let tokens = [Tensor(shape: [6], values: [0, 9, 3, 3, 7, 1])]
    #expect(Self.run(graph, tokens).map(\.values) == Self.run(rewritten, tokens).map(\.values))
  }

  /// A transpose with nothing left to move (the identity order) is a reshape, and then nothing.
  @Test func identityTransposeGoes() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6, 3]))
    let same = try builder.add(.permute(order: [0, 1]), name: "same", inputs: [x])
    let y = try builder.add(.activation(.relu), name: "relu", inputs: [same])
    let graph = builder.build(outputs: [y])
    var rewritten = graph
    try UnitPermutesAsReshapesPass().run(&rewritten)
    #expect(GraphPassTests.kinds(rewritten) == ["reshape", "activation"])
    try CancelReshapesPass().run(&rewritten)
    #expect(GraphPassTests.kinds(rewritten) == ["activation"])
    GraphPassTests.expectSameOutputs(graph, rewritten)
  }
}
