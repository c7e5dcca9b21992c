import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import ONNXFormat
import ONNXTestSupport
import ReferenceRuntime
import Testing

/// ONNX's LRN (AlexNet's and GoogLeNet's original normalization): the runtime's values against the formula
/// of Operators.md, computed here; the backend tests `test_lrn` and `test_lrn_default` check it against
/// ONNX's stored outputs (BackendPassList.txt). Both Core ML formats write it, and `verify` reads it back
/// as Apple documents the classic `lrn` layer and MIL's `local_response_norm`.
@Suite struct LocalResponseNormalizationTests {
  static func lrn(size: Int, channels: Int, alpha: Float = 2e-2, beta: Float = 0.75, bias: Float = 1.5) throws
    -> ONNXModel
  {
    let attributes = [
      ONNXTestModels.intAttribute("size", size), ONNXProtos.attribute("alpha", type: 1) { $0.float(2, alpha) },
      ONNXProtos.attribute("beta", type: 1) { $0.float(2, beta) },
      ONNXProtos.attribute("bias", type: 1) { $0.float(2, bias) },
    ]
    return try ONNXTestModels.model(
      nodes: [ONNXProtos.node("LRN", inputs: ["x"], outputs: ["y"], attributes: attributes)],
      inputs: [("x", [1, channels, 3, 2])],
      outputs: [("y", [1, channels, 3, 2])], opset: 13)
  }

  @Test(arguments: [1, 3, 4, 5])
  func runsOperatorsMdsWindow(size: Int) throws {
    let c = 6
    let imported = try ONNXGraphImporter.importGraph(try Self.lrn(size: size, channels: c), path: "m.onnx")
    let x = (0..<(c * 6)).map { Float(($0 * 29) % 23) / 4 - 2.5 }
    let y = Interpreter(graph: imported.graph).run([Tensor(shape: [1, c, 3, 2], values: x)])[0].values
    for channel in 0..<c {
      for pixel in 0..<6 {
        // square_sum over max(0, c - floor((size - 1) / 2)) ... min(C - 1, c + ceil((size - 1) / 2)).
        let low = max(0, channel - (size - 1) / 2)
        let high = min(c - 1, channel + Int((Double(size - 1) / 2).rounded(.up)))
        let sum = (low...high).reduce(0.0) { $0 + Double(x[$1 * 6 + pixel]) * Double(x[$1 * 6 + pixel]) }
        let expected = Double(x[channel * 6 + pixel]) / pow(1.5 + 2e-2 / Double(size) * sum, 0.75)
        #expect(
          abs(Double(y[channel * 6 + pixel]) - expected) <= 4e-7 * max(1, abs(expected)),
          "size \(size) channel \(channel)")
      }
    }
  }

  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func writesAnOddWindowInEitherFormat(format: ModelFormat) throws {
    let output = try ONNXTestModels.convertAndVerify(try Self.lrn(size: 5, channels: 7), format: format)
    try? FileManager.default.removeItem(at: output.deletingLastPathComponent())
  }

  /// Apple documents a window of localSize channels without saying where an even one lies.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func refusesAnEvenWindowByName(format: ModelFormat) throws {
    let source = try ONNXFrontend.source(
      try Self.lrn(size: 4, channels: 7), path: "m.onnx", options: SourceOptions(), constants: [:])
    do {
      _ = try Converter.convert(source, options: ConversionOptions(format: format, precision: .float32))
      Issue.record("an even LRN window was written")
    } catch {
      #expect("\(error)".contains("even window"), "\(error)")
    }
  }
}
