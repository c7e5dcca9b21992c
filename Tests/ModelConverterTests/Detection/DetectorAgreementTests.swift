import Foundation
import KerasTestSupport
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// A detector's detections from our runtime equal those from onnxruntime's raw outputs, both decoded and
/// suppressed the same way (what `verify --detector` compares last): Ultralytics' YOLOv8 head (3 classes,
/// random weights) on the fixture's saved inputs.
@Suite struct DetectorAgreementTests {
  static let fixture = "onnx/exporters/ultralytics/yolov8_tiny_det_dynamic"

  @Test func runtimeDetectionsMatchOnnxruntimes() throws {
    let source = try Frontends.frontend(for: Fixtures.url(Self.fixture + ".onnx")).importSource(
      at: Fixtures.url(Self.fixture + ".onnx"), options: SourceOptions())
    let reference = try ReferenceFile(url: Fixtures.url(Self.fixture + ".reference.h5"))
    let inputs = try reference.dataset("inputs/0")
    let outputs = try reference.dataset("outputs/0")
    let samples = inputs.shape[0]
    let inputSize = inputs.values.count / samples
    let outputSize = outputs.values.count / samples
    let outputShape = Array(outputs.shape.dropFirst())
    #expect(outputShape.count == 2 && outputShape[0] == 7, "\(outputShape): 4 box rows and 3 classes")
    let graph = source.graph
    let interpreter = Interpreter(graph: graph)
    // The random head's class probabilities stay below 0.011 (onnxruntime's outputs): a threshold of 0.001
    // keeps the top tenth of them for suppression.
    let nms = NonMaximumSuppression(iouThreshold: 0.45, confidenceThreshold: 0.001, perClass: true, maximumBoxes: 100)
    var compared = 0
    for sample in 0..<samples {
      // The saved input is onnxruntime's [1, 3, 64, 64]; the graph takes [64, 64, 3] (channels last).
      let chw = Array(inputs.values[(sample * inputSize)..<((sample + 1) * inputSize)])
      var hwc = [Float](repeating: 0, count: inputSize)
      for c in 0..<3 { for p in 0..<(64 * 64) { hwc[p * 3 + c] = chw[c * 64 * 64 + p] } }
      let ours = try #require(interpreter.run([Tensor(shape: graph[graph.inputs[0]].type.shape, values: hwc)]).first)
      let theirs = Array(outputs.values[(sample * outputSize)..<((sample + 1) * outputSize)])
      #expect(ours.values.count == theirs.count)
      let expected = try Detection.detections(
        output: theirs, shape: outputShape, decoding: .anchorsLast, width: 64, height: 64, suppression: nms)
      let actual = try Detection.detections(
        output: ours.values, shape: outputShape, decoding: .anchorsLast, width: 64, height: 64, suppression: nms)
      let agreement = DetectionAgreement(expected: expected, actual: actual, minimumIoU: 0.98)
      // float32 on both sides: confidences below 0.011 agree to well within 1e-5.
      #expect(agreement.agrees(confidenceTolerance: 1e-5), "sample \(sample): \(agreement)")
      compared += expected.count
    }
    #expect(compared > 0, "the fixture's random detector finds nothing to compare")
  }

  /// The matching is strict: a box moved by a tenth of its width, or another class, is a mismatch.
  @Test func agreementNoticesMovedBoxesAndOtherClasses() {
    let box = NonMaximumSuppression.Box(x: 0.5, y: 0.5, width: 0.2, height: 0.2)
    let a = Detection(classIndex: 1, confidence: 0.9, box: box)
    var moved = a
    moved.box.x += 0.02
    #expect(DetectionAgreement(expected: [a], actual: [a], minimumIoU: 0.98).agrees(confidenceTolerance: 0))
    #expect(!DetectionAgreement(expected: [a], actual: [moved], minimumIoU: 0.98).agrees(confidenceTolerance: 0))
    var other = a
    other.classIndex = 2
    #expect(!DetectionAgreement(expected: [a], actual: [other], minimumIoU: 0.98).agrees(confidenceTolerance: 0))
    #expect(!DetectionAgreement(expected: [a], actual: [], minimumIoU: 0.98).agrees(confidenceTolerance: 0))
  }
}
