import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// Bilinear upsampling in its three sampling grids (issue 35: real Core ML files use DEFAULT and
/// ALIGN_CORNERS_TRUE, paddle2onnx and opset 9-10 exports asymmetric coordinates). The expected values
/// are computed by hand from the documented formulas: NeuralNetwork.proto's `LinearUpsampleMode`
/// (DEFAULT: spacing (Xin - Xin/Xout) / (Xout - 1); ALIGN_CORNERS_TRUE: (Xin - 1) / (Xout - 1);
/// ALIGN_CORNERS_FALSE: Xin / Xout with the half-pixel offset), the same grids as ONNX Resize's
/// asymmetric, align_corners and half_pixel coordinates. The input row [1, 2] upsampled by 2 samples
/// positions 0, 0.5, 1, 1 (asymmetric, clamped), 0, 1/3, 2/3, 1 (aligned corners), and 0, 0.25, 0.75, 1
/// (half-pixel, clamped).
@Suite struct UpsamplingModeTests {
  static let expected: [(UpsamplingMode, [Float])] = [
    (.bilinearAsymmetric, [1, 1.5, 2, 2]),
    (.bilinearAlignCorners, [1, 4.0 / 3, 5.0 / 3, 2]),
    (.bilinear, [1, 1.25, 1.75, 2]),
    (.nearest, [1, 1, 2, 2]),
  ]

  static func graph(_ mode: UpsamplingMode) throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([1, 2, 1]))
    let y = try builder.add(.upsampling2D(height: 1, width: 2, mode: mode), name: "up", inputs: [x])
    return builder.build(outputs: [y])
  }

  static func run(_ graph: Graph) -> [Float] {
    Interpreter(graph: graph).run([Tensor(shape: [1, 2, 1], values: [1, 2])])[0].values
  }

  static func close(_ a: [Float], _ b: [Float]) -> Bool {
    a.count == b.count && zip(a, b).allSatisfy { abs($0 - $1) <= 1e-6 }
  }

  @Test func theRuntimeSamplesTheDocumentedGrids() throws {
    for (mode, values) in Self.expected {
      let computed = Self.run(try Self.graph(mode))
      #expect(Self.close(computed, values), "\(mode): \(computed)")
    }
  }

  /// Each mode written as a classic upsample layer (DEFAULT, ALIGN_CORNERS_TRUE, ALIGN_CORNERS_FALSE)
  /// and as a MIL operation (resize_bilinear DEFAULT, upsample_bilinear with and without align_corners),
  /// read back as Apple documents them, computes the hand-computed values.
  @Test func bothWritersKeepTheGrid() throws {
    let directory = try Fixtures.temporaryDirectory()
    for (mode, values) in Self.expected {
      let graph = try Self.graph(mode)
      let classic = try CoreMLSpecReader.read(
        try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions()), path: "up.mlmodel")
      let layer = try #require(classic.layers.first { $0.kind == "upsample" })
      guard case .upsample(let p) = layer.parameters else {
        Issue.record("\(mode): the upsample layer has no upsample parameters")
        continue
      }
      let documented: [UpsamplingMode: Int] = [
        .bilinearAsymmetric: 0, .bilinearAlignCorners: 1, .bilinear: 2, .nearest: 0,
      ]
      #expect(p.linearUpsampleMode.rawValue == documented[mode], "\(mode)")
      let read = try CoreMLGraphImporter.importModel(classic, path: "up.mlmodel")
      #expect(Self.close(Self.runCoreML(read), values), "classic \(mode): \(Self.runCoreML(read))")

      let encoded = try MLProgramWriter().encode(graph, options: CoreMLWriterOptions())
      let package = directory.appendingPathComponent("\(mode).mlpackage")
      try ModelPackage.write(model: encoded.specification, weights: encoded.weights, to: package)
      let program = try CoreMLGraphImporter.importModel(contentsOf: package)
      #expect(Self.close(Self.runCoreML(program), values), "ML Program \(mode): \(Self.runCoreML(program))")
    }
  }

  /// A Core ML model keeps its batch axis: the importer's graph takes `[1, C, H, W]` or `(C, H, W)`; the
  /// input here has one channel, so the elements are the same in either layout.
  static func runCoreML(_ model: CoreMLModel) -> [Float] {
    let input = model.graph[model.graph.inputs[0]].type.shape
    return Interpreter(graph: model.graph).run([Tensor(shape: input, values: [1, 2])])[0].values
  }
}
