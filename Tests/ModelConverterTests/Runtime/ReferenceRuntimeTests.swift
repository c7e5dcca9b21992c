import Foundation
import KerasFormat
import KerasTestSupport
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// The IR of each Keras fixture, run by the reference interpreter, reproduces the outputs real Keras saved.
@Suite struct ReferenceRuntimeTests {
  /// Splits a batched dataset into per-item tensors.
  static func items(_ data: (shape: [Int], values: [Float])) -> [Tensor] {
    let itemShape = Array(data.shape.dropFirst())
    let size = itemShape.reduce(1, *)
    return (0..<data.shape[0]).map {
      Tensor(shape: itemShape, values: Array(data.values[($0 * size)..<(($0 + 1) * size)]))
    }
  }

  static func check(graph: Graph, reference: ReferenceFile, label: String) throws {
    let inputCount = graph.inputs.count
    let inputs = try (0..<inputCount).map { items(try reference.dataset("inputs/\($0)")) }
    let expected = try (0..<graph.outputs.count).map { items(try reference.dataset("outputs/\($0)")) }
    let interpreter = Interpreter(graph: graph)
    for item in inputs[0].indices {
      let outputs = interpreter.run(inputs.map { $0[item] })
      for (index, output) in outputs.enumerated() {
        let want = expected[index][item].values
        let worst = zip(output.values, want).map { abs($0 - $1) - (1e-5 + 1e-3 * abs($1)) }.max() ?? 0
        #expect(worst <= 0, "\(label) item \(item) output \(index): exceeds atol 1e-5 + rtol 1e-3 by \(worst)")
      }
    }
  }

  @Test(arguments: Fixtures.models)
  func kerasGraphMatchesKerasOutputs(model: String) throws {
    let graph = try KerasGraphImporter.importGraph(KerasModelFile(path: Fixtures.url(model + ".h5").path))
    try Self.check(graph: graph, reference: ReferenceFile(model: model), label: model)
  }

  /// Dense on a `[T, C]` tensor (once refused) acts on the last axis and matches Keras.
  @Test func denseOnRank3MatchesKeras() throws {
    let graph = try KerasGraphImporter.importGraph(KerasModelFile(path: Fixtures.url("bad/dense_rank3.h5").path))
    try Self.check(graph: graph, reference: ReferenceFile(model: "bad/dense_rank3"), label: "dense_rank3")
  }
  @Test func digitsClassifierMatchesKeras() throws {
    let graph = try KerasGraphImporter.importGraph(
      KerasModelFile(path: Fixtures.digits.appendingPathComponent("digits_cnn.h5").path))
    try Self.check(
      graph: graph, reference: ReferenceFile(url: Fixtures.digits.appendingPathComponent("digits_cnn.reference.h5")),
      label: "digits")
  }
}
