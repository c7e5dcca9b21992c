import CoreMLFormat
import Foundation
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// `ConversionOptions.detector`: Ultralytics' YOLOv8 export becomes a pipeline of the network with its
/// decoding and Core ML's non-maximum suppression, laid out as Core ML's validator requires
/// (NonMaximumSuppressionValidator, PipelineValidator in coremltools' mlmodel/src/Validation) and as
/// Ultralytics' own `nms=True` pipelines are.
@Suite struct DetectorConversionTests {
  static let fixture = Fixtures.url("onnx/exporters/ultralytics/yolov8_tiny_det_dynamic.onnx")

  static func options(_ format: ModelFormat, detector: DetectorOptions = DetectorOptions()) -> ConversionOptions {
    var options = ConversionOptions(imageInputNames: ["images"], imageScale: 1 / 255, format: format)
    options.detector = detector
    return options
  }

  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func ultralyticsExportBecomesAPipeline(format: ModelFormat) throws {
    let model = try Converter.convert(modelAt: Self.fixture, options: Self.options(format))
    // 3 classes; an ML Program's confidence is padded to 80 columns (Ultralytics' workaround), a neural
    // network's is not.
    let columns = format == .mlProgram ? 80 : 3
    let summary = model.summary
    #expect(summary.modelType == "pipeline")
    #expect(summary.inputs.map(\.name) == ["images", "iouThreshold", "confidenceThreshold"])
    #expect(summary.inputs[1].type.optional == true && summary.inputs[1].type.kind == "double")
    #expect(summary.outputs.map(\.name) == ["confidence", "coordinates"])
    #expect(summary.outputs.map(\.type.shapeRange) == [[[0, -1], [columns, columns]], [[0, -1], [4, 4]]])
    // The labels a user sees: the names Ultralytics stored in the metadata, without the padding.
    #expect(summary.labels == ["0", "1", "2"])
    let detector = try #require(model.detector)
    #expect(detector.head.anchors == 84 && detector.head.classes == 3 && detector.head.writtenClasses == columns)
    #expect(detector.suppression.labels?.count == columns)

    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Detector." + format.fileExtension)
    try model.write(to: url)
    let outline = try CoreMLModelOutline.read(contentsOf: url)
    #expect(outline.typeName == "pipeline")
    // Float32 arrays into the suppression need specification 5 (iOS 14).
    #expect(outline.specificationVersion == (format == .mlProgram ? 6 : 5))
    #expect(outline.subModels.map(\.name) == ["detector", "nonMaximumSuppression"])
    let network = outline.subModels[0].model
    let nms = outline.subModels[1].model
    // The pipeline rule: each stage input is a pipeline input or an earlier stage's output of the same type.
    let written = Dictionary(uniqueKeysWithValues: network.outputs.map { ($0.name, $0.kind) })
    for input in nms.inputs where input.kind != .double {
      #expect(written[input.name] == input.kind, "\(input.name)")
    }
    #expect(
      network.outputs.map(\.kind) == [
        .multiArray(shape: [84, columns], dataType: "float32"), .multiArray(shape: [84, 4], dataType: "float32"),
      ])
    let suppression = try #require(nms.suppression)
    #expect(suppression.iouThreshold == 0.45 && suppression.confidenceThreshold == 0.25 && suppression.perClass)
    #expect(suppression.iouThresholdInput == "iouThreshold")
    // The suppression's outputs give their two dimensions as a range only (the validator refuses both).
    #expect(
      nms.outputs.map(\.kind) == [
        .multiArray(shape: [], dataType: "float32"), .multiArray(shape: [], dataType: "float32"),
      ])
    #expect(
      nms.outputs.map(\.sizeRanges) == [
        [.init(lower: 0, upper: nil), .init(lower: columns, upper: columns)],
        [.init(lower: 0, upper: nil), .init(lower: 4, upper: 4)],
      ])
    #expect(outline.inputs.map(\.isOptional) == [false, true, true])
    #expect(outline.userDefined[DetectorPipeline.previewTypeKey] == "objectDetector")

    // The reader reads the network stage, with the pipeline around it, only when asked to.
    #expect(throws: CoreMLReaderError.unsupportedModelType(path: url.path, type: "pipeline")) {
      try CoreMLSpecReader.read(contentsOf: url)
    }
    let spec = try CoreMLSpecReader.read(contentsOf: url, detectorPipelines: true)
    #expect(spec.modelType == (format == .mlProgram ? "mlProgram" : "neuralNetwork"))
    #expect(spec.outputs.map(\.name) == ["raw_confidence", "raw_coordinates"])
    let pipeline = try #require(spec.pipeline)
    #expect(pipeline.stageNames == ["detector", "nonMaximumSuppression"])
    #expect(pipeline.inputs.map(\.name) == ["images", "iouThreshold", "confidenceThreshold"])
    #expect(pipeline.inputs.map(\.isOptional) == [false, true, true])
    #expect(pipeline.suppression.labels.prefix(3) == ["0", "1", "2"] && pipeline.suppression.labels.count == columns)
    #expect(pipeline.suppression.perClass == true && pipeline.suppression.iouThreshold == 0.45)
    #expect(pipeline.outputs.map(\.sizeRanges) == nms.outputs.map(\.sizeRanges))
    // Apple's pipeline and suppression rules hold.
    #expect(CoreMLSpecificationRules.violations(in: spec) == [])
  }

  /// Each rule Core ML's validators apply to a detector pipeline, broken one at a time in the reading of a
  /// converted one (NonMaximumSuppressionValidator, PipelineValidator).
  @Test func brokenPipelineRulesAreFound() throws {
    let model = try Converter.convert(modelAt: Self.fixture, options: Self.options(.neuralNetwork))
    let url = try Fixtures.temporaryDirectory().appendingPathComponent("Detector.mlmodel")
    try model.write(to: url)
    let spec = try CoreMLSpecReader.read(contentsOf: url, detectorPipelines: true)
    func rules(_ change: (inout CoreMLModelSpec) -> Void) -> [String] {
      var changed = spec
      change(&changed)
      return CoreMLSpecificationRules.violations(in: changed).map(\.rule)
    }
    #expect(rules { _ in } == [])
    // float32 arrays before specification 5.
    #expect(rules { $0.pipeline?.suppression.specificationVersion = 4 } == ["NMS-FEATURES"])
    // An output with a fixed shape and ranges.
    #expect(
      rules {
        $0.pipeline?.suppression.outputs[0].kind = .multiArray(shape: [0, 3], dataType: 65568)
        $0.pipeline?.outputs[0].kind = .multiArray(shape: [0, 3], dataType: 65568)
      } == ["NMS-FEATURES"])
    // Labels for other columns.
    #expect(rules { $0.pipeline?.suppression.stringClassLabels = ["a", "b"] } == ["NMS-FEATURES"])
    // The network writes another shape than the suppression reads.
    #expect(rules { $0.outputs[0].kind = .multiArray(shape: [84, 2], dataType: 65568) } == ["PIPELINE"])
    // An IoU threshold out of range; a threshold input that is not a double.
    #expect(rules { $0.pipeline?.suppression.iouThreshold = 1.5 } == ["NMS-FEATURES"])
    #expect(
      rules {
        $0.pipeline?.suppression.inputs[2].kind = .int64
        $0.pipeline?.inputs[1].kind = .int64
      } == ["NMS-FEATURES"])
    // Threshold inputs named in the parameters but not listed by the suppression (as Ultralytics 8.4's own
    // pipelines have them): Apple's validator allows it (the stored thresholds hold).
    #expect(rules { $0.pipeline?.suppression.inputs.removeLast(2) } == [])
  }

  @Test func settingsReachTheSuppression() throws {
    var settings = DetectorOptions(iouThreshold: 0.6, confidenceThreshold: 0.1, agnostic: true, maximumDetections: 20)
    settings.padsProgramClasses = false
    var options = Self.options(.mlProgram, detector: settings)
    options.classLabels = .strings(["cat", "dog", "bird"])
    let model = try Converter.convert(modelAt: Self.fixture, options: options)
    let nms = try #require(model.detector?.suppression)
    #expect(nms.iouThreshold == 0.6 && nms.confidenceThreshold == 0.1 && !nms.perClass && nms.maximumBoxes == 20)
    #expect(nms.labels == .strings(["cat", "dog", "bird"]) && nms.classes == 3)
  }

  @Test func wrongLabelCountsAndThresholdsAreUsageErrors() throws {
    var options = Self.options(.neuralNetwork)
    options.classLabels = .strings(["cat", "dog"])
    #expect(throws: ConversionError.self) { try Converter.convert(modelAt: Self.fixture, options: options) }
    do {
      _ = try Converter.convert(modelAt: Self.fixture, options: options)
    } catch let error as ConversionError {
      #expect(error.kind == .usage && error.description.contains("2 labels for a detector of 3 classes"))
    }
    #expect(throws: ConversionError.self) {
      try Converter.convert(
        modelAt: Self.fixture, options: Self.options(.neuralNetwork, detector: DetectorOptions(iouThreshold: 1.5)))
    }
  }

  @Test func aClassifierIsNotADetector() throws {
    var options = Self.options(.neuralNetwork)
    options.imageInputNames = ["images"]
    let classifier = Fixtures.url("onnx/exporters/ultralytics/yolov8_tiny_cls_64.onnx")
    #expect(throws: ConversionError.self) { try Converter.convert(modelAt: classifier, options: options) }
  }

  /// An export that ends in its own suppression (Ultralytics' `end2end` heads, `nms=True`) has finished
  /// detections for rows: refused by what its metadata says, not decoded as a raw head.
  @Test(arguments: [("end2end", "True"), ("args", "{'batch': 1, 'nms': True, 'opset': 17}")])
  func endToEndExportsAreRefused(key: String, value: String) throws {
    let url = Fixtures.url("onnx/detectors/yolov8_shapes.onnx")
    var source = try Frontends.frontend(for: url).importSource(at: url, options: SourceOptions())
    source.metadata.userDefined[key] = value
    let error = #expect(throws: ConversionError.self) {
      try Converter.convert(source, options: Self.options(.neuralNetwork))
    }
    #expect(error.map { "\($0)".contains("already ends in its own suppression") } == true)
    #expect(throws: PredictionError.self) { try ObjectDetector.load(source) }
  }

  @Test func ultralyticsNamesAreRead() {
    #expect(DetectorClassNames.parse("{0: 'person', 1: 'bicycle', 2: \"it's\"}") == ["person", "bicycle", "it's"])
    #expect(DetectorClassNames.parse("{1: 'b', 0: 'a'}") == ["a", "b"])
    #expect(DetectorClassNames.parse("{0: 'a\\'s'}") == ["a's"])
    // Gaps, repeated keys, unclosed strings and trailing text are not names.
    #expect(DetectorClassNames.parse("{0: 'a', 2: 'c'}") == nil)
    #expect(DetectorClassNames.parse("{0: 'a', 0: 'b'}") == nil)
    #expect(DetectorClassNames.parse("{0: 'a}") == nil)
    #expect(DetectorClassNames.parse("{0: 'a'} x") == nil)
    #expect(DetectorClassNames.parse("{}") == nil)
    #expect(DetectorClassNames.parse("['a', 'b']") == nil)
  }
}
