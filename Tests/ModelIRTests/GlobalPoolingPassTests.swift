import Foundation
import ModelIR
import ReferenceRuntime
import Testing

/// `GlobalPoolingPass` on its own (issue 36: every pass tested alone): a mean or max over the height and
/// width of an `[H, W, C]` tensor becomes a global pooling with the same numbers; other reductions stay.
@Suite struct GlobalPoolingPassTests {
  static func reduction(_ kind: ReductionKind, axes: [Int], keepDims: Bool, shape: [Int] = [3, 4, 2]) throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType(shape))
    let y = try builder.add(.reduce(Reduction(kind: kind, axes: axes, keepDims: keepDims)), name: "pool", inputs: [x])
    return builder.build(outputs: [y])
  }

  @Test(arguments: [(ReductionKind.mean, PoolingKind.average, false), (.max, .max, true)])
  func spatialMeanOrMaxIsAGlobalPooling(_ kind: ReductionKind, _ pooling: PoolingKind, _ keepDims: Bool) throws {
    let graph = try Self.reduction(kind, axes: [0, 1], keepDims: keepDims)
    var rewritten = graph
    try GlobalPoolingPass().run(&rewritten)
    #expect(rewritten.nodes.map(\.operation) == [.globalPooling2D(kind: pooling, keepDims: keepDims)])
    let inputs = GraphPassTests.inputs(for: graph)
    let (a, b) = (Interpreter(graph: graph).run(inputs), Interpreter(graph: rewritten).run(inputs))
    #expect(a.map(\.shape) == b.map(\.shape))
    // A mean adds in another order in the pooling kernel: within float32 rounding of the sum.
    #expect(zip(a[0].values, b[0].values).allSatisfy { abs($0 - $1) <= 1e-6 * max(1, abs($0)) })
  }

  /// A sum, a reduction over other axes, or over a tensor that is not an image: unchanged.
  @Test func otherReductionsStay() throws {
    for graph in [
      try Self.reduction(.sum, axes: [0, 1], keepDims: false),
      try Self.reduction(.mean, axes: [1, 2], keepDims: false),
      try Self.reduction(.mean, axes: [0, 1], keepDims: false, shape: [3, 4]),
    ] {
      var rewritten = graph
      try GlobalPoolingPass().run(&rewritten)
      #expect(rewritten == graph)
    }
  }
}
