import Foundation
import KerasTestSupport
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// The detector's decoding written as graph nodes computes what the reference runtime's
/// `DetectorDecoding` (written from Ultralytics' documented head layouts) computes from the raw output.
@Suite struct DetectorHeadTests {
  /// An image input of `height` x `width` x 3, a dense layer of seeded weights to `rows` x `columns`.
  static func network(height: Int, width: Int, rows: Int, columns: Int, seed: UInt64) throws -> Graph {
    var random = SplitMix64(seed: seed)
    var builder = GraphBuilder()
    let image = try builder.addInput(name: "image", type: TensorType([height, width, 3]))
    let flat = try builder.add(.flatten, name: "flat", inputs: [image])
    let kernel = (0..<(height * width * 3 * rows * columns)).map { _ in Float.random(in: -1...1, using: &random) }
    let dense = try builder.add(
      .dense(Dense(kernel: Constant(shape: [height * width * 3, rows * columns], values: kernel), bias: nil)),
      name: "head", inputs: [flat])
    let raw = try builder.add(.reshape(targetShape: [rows, columns]), name: "raw", inputs: [dense])
    return builder.build(outputs: [raw])
  }

  static func image(height: Int, width: Int, seed: UInt64) -> Tensor {
    var random = SplitMix64(seed: seed)
    return Tensor(
      shape: [height, width, 3], values: (0..<(height * width * 3)).map { _ in Float.random(in: 0...1, using: &random) }
    )
  }

  @Test(arguments: [DetectorDecoding.anchorsLast, .objectness])
  func decodedGraphMatchesTheRuntimesDecoding(decoding: DetectorDecoding) throws {
    // 2 classes, 12 anchors, an image 6 wide and 4 high (width and height normalized apart).
    let (rows, columns) = decoding == .anchorsLast ? (6, 12) : (12, 7)
    let network = try Self.network(height: 4, width: 6, rows: rows, columns: columns, seed: 7)
    var graph = network
    let head = try DetectorHead.append(to: &graph)
    #expect(head == DetectorHead(decoding: decoding, anchors: 12, classes: 2, width: 6, height: 4))
    #expect(graph.outputs.map { graph[$0].name } == ["raw_confidence", "raw_coordinates"])
    #expect(graph.outputs.map { graph[$0].type.shape } == [[12, 2], [12, 4]])
    let input = Self.image(height: 4, width: 6, seed: 8)
    let raw = try #require(Interpreter(graph: network).run([input]).first)
    let expected = try decoding.decode(raw.values, shape: [rows, columns], width: 6, height: 4)
    let decoded = Interpreter(graph: graph).run([input])
    // The graph multiplies by the reciprocal of the size in float32: one rounding more than the division.
    for (ours, theirs) in zip(decoded[0].values + decoded[1].values, expected.confidence + expected.coordinates) {
      #expect(abs(Double(ours) - theirs) <= 1e-6 * max(1, abs(theirs)), "\(ours) vs \(theirs)")
    }
    #expect(decoded[0].values.count == expected.confidence.count)
  }

  @Test func aLeadingBatchAxisIsDropped() throws {
    var builder = GraphBuilder()
    let image = try builder.addInput(name: "image", type: TensorType([2, 2, 3]))
    let flat = try builder.add(.flatten, name: "flat", inputs: [image])
    let dense = try builder.add(
      .dense(Dense(kernel: .filled(0.5, shape: [12, 40]), bias: nil)), name: "head", inputs: [flat])
    let raw = try builder.add(.reshape(targetShape: [1, 5, 8]), name: "raw", inputs: [dense])
    var graph = builder.build(outputs: [raw])
    let head = try DetectorHead.append(to: &graph)
    #expect(head.decoding == .anchorsLast && head.anchors == 8 && head.classes == 1)
    #expect(graph.outputs.map { graph[$0].type.shape } == [[8, 1], [8, 4]])
  }

  @Test func networksThatAreNotDetectorsAreRefused() throws {
    // Four rows and no class row.
    var noClasses = try Self.network(height: 2, width: 2, rows: 4, columns: 9, seed: 1)
    #expect(throws: DetectorHead.Failure.self) { try DetectorHead.append(to: &noClasses) }
    // A classifier's vector output.
    var builder = GraphBuilder()
    let image = try builder.addInput(name: "image", type: TensorType([2, 2, 3]))
    let flat = try builder.add(.flatten, name: "flat", inputs: [image])
    var classifier = builder.build(outputs: [flat])
    #expect(throws: DetectorHead.Failure.self) { try DetectorHead.append(to: &classifier) }
  }

  /// On Ultralytics' YOLOv8 export: the decoded outputs of the converted graph equal the runtime's decoding
  /// of onnxruntime's saved raw outputs.
  @Test func ultralyticsExportDecodesAsItsRawOutput() throws {
    let url = Fixtures.url(DetectorAgreementTests.fixture + ".onnx")
    let source = try Frontends.frontend(for: url).importSource(at: url, options: SourceOptions())
    var graph = source.graph
    let head = try DetectorHead.append(to: &graph)
    #expect(head == DetectorHead(decoding: .anchorsLast, anchors: 84, classes: 3, width: 64, height: 64))
    let reference = try ReferenceFile(url: Fixtures.url(DetectorAgreementTests.fixture + ".reference.h5"))
    let inputs = try reference.dataset("inputs/0")
    let outputs = try reference.dataset("outputs/0")
    let chw = Array(inputs.values[0..<(3 * 64 * 64)])
    var hwc = [Float](repeating: 0, count: chw.count)
    for c in 0..<3 { for p in 0..<(64 * 64) { hwc[p * 3 + c] = chw[c * 64 * 64 + p] } }
    let decoded = Interpreter(graph: graph).run([Tensor(shape: [64, 64, 3], values: hwc)])
    let expected = try DetectorDecoding.anchorsLast.decode(
      Array(outputs.values[0..<(7 * 84)]), shape: [7, 84], width: 64, height: 64)
    // Two float32 computations of the same network: coordinates up to 64 pixels, within 1e-4 relative.
    var worst = 0.0
    for (ours, theirs) in zip(decoded[0].values + decoded[1].values, expected.confidence + expected.coordinates) {
      worst = max(worst, abs(Double(ours) - theirs) / max(1, abs(theirs)))
    }
    #expect(worst <= 1e-4, "largest relative difference \(worst)")
  }
}
