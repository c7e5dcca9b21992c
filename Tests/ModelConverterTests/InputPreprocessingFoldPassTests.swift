import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelIR
import TestSupport
import Testing

@testable import ModelConverter

/// The fold of an image input's first scale-and-offset layer into Core ML's scaler, as a pass on its own.
@Suite struct InputPreprocessingFoldPassTests {
  @Test func firstLayerFoldsOnce() throws {
    var builder = GraphBuilder()
    let image = try builder.addInput(name: "image", type: TensorType([4, 4, 3]))
    // Keras Rescaling(scale=2, offset=-1), then a second one that must stay a layer.
    let first = try builder.add(.activation(.linear(scale: 2, offset: -1)), name: "rescale", inputs: [image])
    let second = try builder.add(.activation(.linear(scale: 3, offset: 0)), name: "again", inputs: [first])
    var graph = builder.build(outputs: [second])
    let ledger = ImageInputLedger(["image": ImagePreprocessing(scale: 0.5, redBias: 0.25)])
    try GraphPipeline([InputPreprocessingFoldPass(ledger: ledger)]).run(&graph)
    #expect(graph.nodes.map(\.name) == ["again"])
    #expect(graph.nodes[0].inputs == graph.inputs)
    // 2 * (0.5 * pixel + bias) - 1: scale 1, biases 2 * bias - 1.
    let folded = try #require(ledger.current["image"])
    #expect(folded.scale == 1 && folded.redBias == -0.5 && folded.greenBias == -1 && folded.blueBias == -1)
  }

  @Test func inputsWithoutAFoldableLayerKeepTheirPreprocessing() throws {
    var builder = GraphBuilder()
    let image = try builder.addInput(name: "image", type: TensorType([4, 4, 1]))
    let relu = try builder.add(.activation(.relu), name: "relu", inputs: [image])
    var graph = builder.build(outputs: [relu])
    let given = ImagePreprocessing(scale: 1.0 / 255)
    let ledger = ImageInputLedger(["image": given])
    try InputPreprocessingFoldPass(ledger: ledger).run(&graph)
    #expect(graph.nodes.count == 1 && ledger.current["image"] == given)
  }

  /// An image input named twice is one image input (it was a crash to build the table of image inputs).
  @Test func imageInputNamedTwice() throws {
    let model = try Converter.convert(
      modelAt: Fixtures.digits.appendingPathComponent("digits_cnn.h5"),
      options: ConversionOptions(imageInputNames: ["input1", "input1"], imageScale: 1 / 255))
    let spec = try CoreMLSpecReader.read(model.bytes)
    #expect(spec.inputs.count == 1 && spec.preprocessing.count == 1)
    guard case .image = spec.inputs[0].kind else {
      Issue.record("not an image input: \(spec.inputs[0])")
      return
    }
  }
}
