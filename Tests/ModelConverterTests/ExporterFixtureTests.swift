import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelFormats
import TestSupport
import Testing

/// Models as other exporters write them (issue 35): tiny networks exported by PyTorch's dynamo exporter
/// (opsets 18 and 21, optimized and raw), paddle2onnx (opsets 11 and 16, open batch axes), Ultralytics
/// (a YOLOv8 detector and classifier from its yaml files, fixed and dynamic sizes) and tf2onnx from
/// SavedModels, made by `Samples/make_exporter_fixtures_*.py` with onnxruntime's outputs saved beside
/// them. Each converts as given (plus `--input-shape` only where the file leaves a size open) and verifies
/// against the source and against onnxruntime, in both formats.
@Suite struct ExporterFixtureTests {
  static func url(_ name: String) -> URL { Fixtures.url("onnx/exporters/\(name).onnx") }
  static func reference(_ name: String) -> URL { Fixtures.url("onnx/exporters/\(name).reference.h5") }

  /// Fixture, and the input sizes the file leaves open (the sizes its reference was computed at).
  static let fixtures: [(String, [String: [Int]])] = [
    ("dynamo/small_cnn_opset18", [:]), ("dynamo/small_cnn_opset18_raw", [:]), ("dynamo/small_cnn_opset21", [:]),
    ("dynamo/tiny_block_opset18", [:]), ("dynamo/tiny_block_opset18_raw", [:]), ("dynamo/tiny_block_opset21", [:]),
    ("dynamo/tiny_block_opset18_dynamic", ["x": [1, 8, 16]]),
    ("paddle/paddle_cnn", [:]), ("paddle/paddle_cnn_opset16", [:]), ("paddle/paddle_seg", [:]),
    ("paddle/paddle_seg_opset16", [:]),
    ("ultralytics/yolov8_tiny_cls_64", [:]), ("ultralytics/yolov8_tiny_det_dynamic", [:]),
  ]

  /// tf2onnx from SavedModels: a one-channel NHWC image model, and text models whose int32 token ids go
  /// through Gather, a TensorFlow while loop (`Loop` without a trip count), GRU, LSTM and a bidirectional
  /// LSTM tagger with Tensordot's ReduceProd, and float ids cast to integers before the lookup (Keras' default
  /// Input dtype); in a classic network the ids become Core ML's sequence axis.
  static let savedModel = [
    "tf_savedmodel/sm_gray_cnn", "tf_savedmodel/sm_text_lstm", "tf_savedmodel/sm_text_rnn_gru",
    "tf_savedmodel/sm_text_bilstm_seq", "tf_savedmodel/sm_text_float_ids",
  ]

  static let cases: [(String, [String: [Int]], ModelFormat)] = (fixtures + savedModel.map { ($0, [:]) }).flatMap {
    name, shapes in
    [ModelFormat.mlProgram, .neuralNetwork].map { (name, shapes, $0) }
  }

  static func convert(_ name: String, _ shapes: [String: [Int]], to format: ModelFormat) throws -> (ConvertedModel, URL)
  {
    var options = ConversionOptions(format: format, precision: .float32)
    options.inputShapes = shapes
    let model = try Converter.convert(modelAt: url(name), options: options)
    let output = try Fixtures.temporaryDirectory().appendingPathComponent(
      (name as NSString).lastPathComponent + "." + format.fileExtension)
    try model.write(to: output)
    return (model, output)
  }

  @Test(arguments: cases)
  func convertsAndMatchesOnnxruntime(_ name: String, _ shapes: [String: [Int]], _ format: ModelFormat) throws {
    let (_, output) = try Self.convert(name, shapes, to: format)
    let report = try ParityVerifier.verify(
      source: Self.url(name), converted: output,
      options: VerificationOptions(samples: 3, reference: Self.reference(name), inputShapes: shapes))
    #expect(
      report.passed,
      "\(name) -> \(format): \(report.firstMismatch.map { "\($0)" } ?? "") \(report.outputs.filter { !$0.passed }) \(report.interface?.differences ?? [])"
    )
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputs && $0.passed })
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputsThroughSource && $0.passed })
  }

  /// What the files leave open is filled as documented, and said: paddle2onnx's -1 batch axis becomes 1,
  /// an Ultralytics dynamic export takes its size from its `imgsz` metadata; a size nothing records
  /// (the dynamo export's token count) is asked for with a ready `--input-shape`.
  @Test func openSizesAreFilledAndSaid() throws {
    let (paddle, _) = try Self.convert("paddle/paddle_cnn", [:], to: .mlProgram)
    #expect(paddle.sourceNotes.contains { $0.contains("batch") }, "\(paddle.sourceNotes)")
    let (yolo, _) = try Self.convert("ultralytics/yolov8_tiny_det_dynamic", [:], to: .mlProgram)
    #expect(yolo.sourceNotes.contains { $0.contains("imgsz") }, "\(yolo.sourceNotes)")
    #expect(yolo.graph.inputs.map { yolo.graph[$0].type.shape } == [[64, 64, 3]])
    #expect {
      _ = try Self.convert("dynamo/tiny_block_opset18_dynamic", [:], to: .mlProgram)
    } throws: { error in
      guard let open = error as? UnknownInputSizes else { return false }
      return open.inputs.map(\.name) == ["x"] && open.inputs[0].openAxes == [1]
    }
  }

  /// `--image-output` (coremltools' `ImageType` outputs): paddle2onnx's segmentation mask `[1, 1, 32, 64]`
  /// becomes a GRAYSCALE image whose pixels are the mask times 255 (the input's `1/255` undone), and verify
  /// compares its pixels with onnxruntime's mask made pixels; a scale it was not made with fails.
  @Test func segmentationMaskAsImageOutput() throws {
    let name = "paddle/paddle_seg"
    var options = ConversionOptions(
      imageInputNames: ["image"], imageScale: 1 / 255, format: .mlProgram, precision: .float32)
    options.imageOutputNames = ["fetch_name_0"]
    let model = try Converter.convert(modelAt: Self.url(name), options: options)
    let output = try Fixtures.temporaryDirectory().appendingPathComponent("mask.mlpackage")
    try model.write(to: output)
    let spec = try CoreMLSpecReader.read(contentsOf: output)
    #expect(spec.outputs.map(\.kind) == [.image(width: 64, height: 32, colorSpace: "GRAYSCALE")])
    #expect(spec.specificationVersion >= 7)  // an ML Program's image output: iOS 16
    let expected = ImagePreprocessing(scale: 1 / 255)
    let report = try ParityVerifier.verify(
      source: Self.url(name), converted: output,
      options: VerificationOptions(samples: 3, reference: Self.reference(name), expectedPreprocessing: expected))
    #expect(report.passed, "\(report.outputs.filter { !$0.passed })")
    let againstOnnxruntime = report.outputs.filter { $0.name == "fetch_name_0" && $0.comparedWith == .referenceOutputs }
    #expect(againstOnnxruntime.count == 1)
    #expect(againstOnnxruntime.allSatisfy { $0.passed && $0.maxAbsoluteError <= 1 })

    // Pixels made with another scale than the one expected: the output's pixels differ.
    let wrong = try ParityVerifier.verify(
      source: Self.url(name), converted: output,
      options: VerificationOptions(samples: 3, expectedPreprocessing: ImagePreprocessing(scale: 2 / 255)))
    #expect(!wrong.passed)
    #expect(wrong.outputs.contains { $0.name == "fetch_name_0" && !$0.passed })

    // Asked of an output that is not an image-shaped one, or of no output: usage errors naming it.
    for (asked, source) in [("fetch_name_0", "paddle/paddle_cnn"), ("mask", name)] {
      var bad = options
      bad.imageOutputNames = [asked]
      #expect {
        _ = try Converter.convert(modelAt: Self.url(source), options: bad)
      } throws: { error in
        guard case ConversionError.invalidImageOutput(let output, _) = error else { return false }
        return output == asked && (error as? any KindedError)?.kind == .usage
      }
    }
  }
}
