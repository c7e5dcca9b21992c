import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelFormats
import ONNXFormat
import ONNXTestSupport
import Testing

/// Sizes an ONNX file leaves open, in every spelling exporters use (issue 35): -1 (paddle2onnx), 0, a
/// symbolic name, or no size at all. The batch axis becomes 1 and says so; an Ultralytics export's `imgsz`
/// metadata gives height and width; every other open size is reported at once, for every input.
@Suite struct OpenSizesTests {
  /// A model `y = Relu(x)` (and `w = Relu(z)` for a second input) with the dimensions as given
  /// (Int64 sizes, String names).
  static func model(_ inputs: [(String, [Any])], metadata: [(String, String)] = []) throws -> ONNXModel {
    let nodes = inputs.map { ONNXProtos.node("Relu", name: "relu_" + $0.0, inputs: [$0.0], outputs: [$0.0 + "_out"]) }
    let graph = ONNXProtos.graph(
      nodes: nodes, inputs: inputs.map { ONNXProtos.valueInfo($0.0, shape: $0.1) },
      outputs: inputs.map { ONNXProtos.valueInfo($0.0 + "_out", shape: $0.1) })
    return try ONNXModelReader.read(
      bytes: ONNXProtos.model(graph: graph, metadata: metadata), path: "/models/open.onnx")
  }

  static func openSizes(_ model: ONNXModel, options: SourceOptions = SourceOptions()) throws -> UnknownInputSizes? {
    do {
      _ = try ONNXFrontend.source(model, path: "open.onnx", options: options)
      return nil
    } catch let error as UnknownInputSizes {
      return error
    }
  }

  @Test func minusOneAndZeroAreOpenSizes() throws {
    let model = try Self.model([("x", [Int64(-1), Int64(3), Int64(-1), Int64(0)])])
    // Read (inspect reads it too): the file is valid, its sizes open.
    #expect(model.graph.inputs[0].shape == [.unknown, .value(3), .unknown, .unknown])
    let open = try #require(try Self.openSizes(model))
    #expect(open.kind == .usage)
    #expect(open.inputs == [.init(name: "x", dimensions: [.size(1), .size(3), .open(nil), .open(nil)])])
    #expect(open.inputs[0].template == "1,3,N2,N3")
    #expect("\(open)".contains("input 'x' [1, 3, ?, ?] (axis 2, 3)"), "\(open)")
  }

  @Test func everyOpenInputIsListedAtOnce() throws {
    let model = try Self.model([
      ("image", ["batch", Int64(3), "height", "width"]), ("tokens", [Int64(1), "sequence", Int64(4)]),
    ])
    let open = try #require(try Self.openSizes(model))
    #expect(open.inputs.map(\.name) == ["image", "tokens"])
    #expect(open.inputs.map(\.template) == ["1,3,HEIGHT,WIDTH", "1,SEQUENCE,4"])
    // Given, the sizes convert.
    var options = SourceOptions()
    options.inputShapes = ["image": [1, 3, 8, 6], "tokens": [1, 5, 4]]
    let source = try ONNXFrontend.source(model, path: "open.onnx", options: options)
    #expect(source.graph.inputs.map { source.graph[$0].type.shape.reduce(1, *) } == [144, 20])
    #expect(source.notes.isEmpty, "every size was given, none decided: \(source.notes)")
  }

  @Test func givenSizesMayNotContradictTheFile() throws {
    let model = try Self.model([("x", [Int64(-1), Int64(3), Int64(-1), Int64(-1)])])
    var options = SourceOptions()
    options.inputShapes = ["x": [1, 4, 8, 8]]
    #expect(throws: ONNXImportError.self) { try ONNXFrontend.source(model, path: "open.onnx", options: options) }
  }

  @Test func ultralyticsRecordsItsImageSize() throws {
    let model = try Self.model(
      [("images", [Int64(-1), Int64(3), "height", "width"])], metadata: [("imgsz", "[32, 48]"), ("stride", "32")])
    let source = try ONNXFrontend.source(model, path: "open.onnx", options: SourceOptions())
    #expect(source.graph.inputs.map { source.graph[$0].type.shape } == [[32, 48, 3]])
    #expect(source.notes.contains { $0.contains("32x48") && $0.contains("imgsz") }, "\(source.notes)")
  }

  @Test func anOpenBatchConvertsAndVerifiesWithTheNoteInTheSummary() throws {
    let model = try Self.model([("x", [Int64(-1), Int64(4)])])
    let source = try ONNXFrontend.source(model, path: "open.onnx", options: SourceOptions())
    let converted = try Converter.convert(source, options: ConversionOptions(format: .mlProgram, precision: .float32))
    #expect(converted.summary.inputs.map(\.type.shape) == [[1, 4]])
    #expect(converted.summary.notes?.contains { $0.contains("batch 1") } == true, "\(converted.summary)")
    try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
  }
}
