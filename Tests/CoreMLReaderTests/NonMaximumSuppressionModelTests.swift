import CoreMLCommon
import CoreMLReader
import Testing

/// The non-maximum suppression model writer, read back by the reader's wire-level outline (independent of
/// protobuf-c's packing): NonMaximumSuppression.proto's fields and the description its rules ask for.
@Suite struct NonMaximumSuppressionModelTests {
  static let parameters = NonMaximumSuppressionModel.Parameters(
    iouThreshold: 0.45, confidenceThreshold: 0.25, perClass: true, labels: .strings(["cat", "dog", "bird"]), boxes: 84,
    classes: 3,
    maximumBoxes: 100)

  @Test func writtenParametersReadBack() throws {
    let encoded = try NonMaximumSuppressionModel.encode(Self.parameters)
    let outline = try CoreMLModelOutline.read(encoded.specification)
    #expect(outline.typeName == "nonMaximumSuppression" && outline.specificationVersion == 3)
    let nms = try #require(outline.suppression)
    #expect(nms.iouThreshold == 0.45 && nms.confidenceThreshold == 0.25 && nms.perClass)
    #expect(nms.confidenceInput == "raw_confidence" && nms.coordinatesInput == "raw_coordinates")
    #expect(nms.iouThresholdInput == "iouThreshold" && nms.confidenceThresholdInput == "confidenceThreshold")
    #expect(nms.confidenceOutput == "confidence" && nms.coordinatesOutput == "coordinates")
    #expect(outline.stringClassLabels == ["cat", "dog", "bird"])
    #expect(outline.inputs.map(\.name) == ["raw_confidence", "raw_coordinates", "iouThreshold", "confidenceThreshold"])
    #expect(outline.inputs[0].kind == .multiArray(shape: [84, 3], dataType: "double"))
    #expect(outline.inputs[1].kind == .multiArray(shape: [84, 4], dataType: "double"))
    #expect(outline.inputs[2].kind == .double && outline.inputs[3].kind == .double)
    #expect(outline.outputs.map(\.name) == ["confidence", "coordinates"])
    // Rows 0 to the maximum, as a range only (Core ML's validator refuses a shape and a range together).
    #expect(outline.outputs[0].kind == .multiArray(shape: [], dataType: "double"))
    #expect(outline.outputs[0].sizeRanges == [.init(lower: 0, upper: 100), .init(lower: 3, upper: 3)])
    #expect(outline.inputs[2].isOptional && !outline.inputs[0].isOptional)
  }

  /// Not a network: the full reader says what it is instead of converting it.
  @Test func theReaderDoesNotConvertIt() throws {
    let bytes = try NonMaximumSuppressionModel.encode(Self.parameters).specification
    #expect(throws: CoreMLReaderError.unsupportedModelType(path: "<memory>", type: "nonMaximumSuppression")) {
      try CoreMLSpecReader.read(bytes)
    }
  }

  @Test func impossibleParametersAreRefused() {
    var bad = Self.parameters
    bad.iouThreshold = 1.5
    #expect(throws: CoreMLWriterError.self) { try NonMaximumSuppressionModel.encode(bad) }
    bad = Self.parameters
    bad.labels = .strings(["cat"])
    #expect(throws: CoreMLWriterError.self) { try NonMaximumSuppressionModel.encode(bad) }
  }
}
