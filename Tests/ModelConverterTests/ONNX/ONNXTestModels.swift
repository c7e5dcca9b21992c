import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ONNXFormat
import ONNXTestSupport
import Testing

/// Small ONNX models built field by field (`ONNXProtos`), and their conversion checked end to end.
enum ONNXTestModels {
  static func floats(_ name: String, _ dims: [Int], _ values: [Float]) -> [UInt8] {
    ONNXProtos.tensor(
      name: name, dims: dims.map(Int64.init), dataType: 1,
      raw: values.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v.bitPattern >> (8 * $0)) } })
  }

  static func int64s(_ name: String, _ dims: [Int], _ values: [Int]) -> [UInt8] {
    ONNXProtos.tensor(
      name: name, dims: dims.map(Int64.init), dataType: 7,
      raw: values.flatMap { v in (0..<8).map { UInt8(truncatingIfNeeded: Int64(v) >> (8 * $0)) } })
  }

  static func stringAttribute(_ name: String, _ value: String) -> [UInt8] {
    ONNXProtos.attribute(name, type: 3) { $0.string(4, value) }
  }
  static func intsAttribute(_ name: String, _ values: [Int]) -> [UInt8] {
    ONNXProtos.attribute(name, type: 7) { $0.packed(8, values.map(Int64.init)) }
  }
  static func intAttribute(_ name: String, _ value: Int) -> [UInt8] {
    ONNXProtos.attribute(name, type: 2) { $0.int(3, Int64(value)) }
  }

  static func model(
    nodes: [[UInt8]], inputs: [(String, [Int])], outputs: [(String, [Int])], initializers: [[UInt8]] = [],
    opset: Int64 = 18
  ) throws -> ONNXModel {
    let graph = ONNXProtos.graph(
      nodes: nodes, initializers: initializers,
      inputs: inputs.map { ONNXProtos.valueInfo($0.0, shape: $0.1.map { Int64($0) as Any }) },
      outputs: outputs.map { ONNXProtos.valueInfo($0.0, shape: $0.1.map { Int64($0) as Any }) })
    return try ONNXModelReader.read(
      bytes: ONNXProtos.model(opsets: [("", opset)], graph: graph), path: "/models/m.onnx")
  }

  /// Converts `model` to `format`, writes it to a new temporary folder and verifies it against the model
  /// (random samples, the Core ML side read back as Apple documents it); returns the written file.
  @discardableResult
  static func convertAndVerify(
    _ model: ONNXModel, format: ModelFormat, sourceLocation: SourceLocation = #_sourceLocation
  ) throws -> URL {
    let source = try ONNXFrontend.source(model, path: "m.onnx", options: SourceOptions(), constants: [:])
    let converted = try Converter.convert(source, options: ConversionOptions(format: format, precision: .float32))
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("onnx-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    let output = directory.appendingPathComponent("m." + format.fileExtension)
    try converted.write(to: output)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 3))
    #expect(report.passed, "\(report.outputs) \(report.violations)", sourceLocation: sourceLocation)
    return output
  }
}
