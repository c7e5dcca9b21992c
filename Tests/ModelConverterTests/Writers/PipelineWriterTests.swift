import CoreMLFormat
import Foundation
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// A detector pipeline as a model of models: a network stage written by either writer and the
/// non-maximum suppression stage, read back by the wire-level outline and shown by inspect.
@Suite struct PipelineWriterTests {
  /// One box, three classes: confidence = sigmoid(x W1), coordinates = x W2, from x of shape [1, 4].
  static func detectorStage() throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([1, 4]))
    let logits = try builder.add(
      .dense(Dense(kernel: .filled(0.1, shape: [4, 3]), bias: nil)), name: "logits", inputs: [x])
    let confidence = try builder.add(.activation(.sigmoid), name: "raw_confidence", inputs: [logits])
    let coordinates = try builder.add(
      .dense(Dense(kernel: .filled(0.2, shape: [4, 4]), bias: nil)), name: "raw_coordinates", inputs: [x])
    var graph = builder.build(outputs: [confidence, coordinates])
    try graph.rename(confidence, to: "raw_confidence")
    try graph.rename(coordinates, to: "raw_coordinates")
    return graph
  }

  static let suppression = NonMaximumSuppressionModel.Parameters(
    iouThreshold: 0.45, confidenceThreshold: 0.25, perClass: false, labels: .strings(["a", "b", "c"]), boxes: 1,
    classes: 3, maximumBoxes: 10)

  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func pipelineOfANetworkAndSuppression(format: ModelFormat) throws {
    let network = try CoreMLWriters.writer(for: format).encode(try Self.detectorStage(), options: CoreMLWriterOptions())
    let nms = try NonMaximumSuppressionModel.encode(Self.suppression)
    let pipeline = try PipelineModel.encode([network, nms], names: ["detector", "nms"])
    #expect(
      pipeline.format == format
        && pipeline.specificationVersion == max(network.specificationVersion, nms.specificationVersion))
    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Detector." + format.fileExtension)
    try pipeline.write(to: url)
    let outline = try CoreMLModelOutline.read(contentsOf: url)
    #expect(outline.typeName == "pipeline" && outline.subModels.map(\.name) == ["detector", "nms"])
    #expect(
      outline.subModels.map(\.model.typeName) == [
        format == .mlProgram ? "mlProgram" : "neuralNetwork", "nonMaximumSuppression",
      ])
    // The pipeline's inputs: the network's and the suppression's threshold inputs (its array inputs are
    // written by the network); its outputs the suppression's.
    #expect(outline.inputs.map(\.name) == ["x", "iouThreshold", "confidenceThreshold"])
    #expect(outline.outputs.map(\.name) == ["confidence", "coordinates"])
    #expect(outline.subModels[1].model.suppression?.iouThreshold == 0.45)
    let inspection = try ModelInspector.inspect(contentsOf: url)
    #expect(inspection.subModels.count == 2 && inspection.subModels[1].suppression?.confidenceThreshold == 0.25)
    #expect(inspection.description.contains("IoU above 0.45 suppressed across classes"))
  }

  /// A network stage's float32 outputs into a suppression declared double break the pipeline rule Core
  /// ML's validator applies (PipelineValidator: each input of the type it was given).
  @Test func mismatchedStagesBreakThePipelineRule() throws {
    let network = try CoreMLWriters.writer(for: .neuralNetwork).encode(
      try Self.detectorStage(), options: CoreMLWriterOptions())
    let pipeline = try PipelineModel.encode([network, try NonMaximumSuppressionModel.encode(Self.suppression)])
    let spec = try CoreMLSpecReader.read(pipeline.specification, detectorPipelines: true)
    #expect(CoreMLSpecificationRules.violations(in: spec).map(\.rule).contains("PIPELINE"))
  }

  @Test func aPipelineNeedsTwoModels() throws {
    let nms = try NonMaximumSuppressionModel.encode(Self.suppression)
    #expect(throws: CoreMLWriterError.self) { try PipelineModel.encode([nms]) }
    #expect(throws: CoreMLWriterError.self) { try PipelineModel.encode([nms, nms], names: ["one"]) }
  }
}
