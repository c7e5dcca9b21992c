import Foundation
import ModelConverter
import ModelIR
import TFLiteFormat
import TestSupport
import Testing

/// MediaPipe's landmark operators (Landmarks2TransformMatrix, TransformTensorBilinear, TransformLandmarks,
/// version 2, as face_landmark_with_attention.tflite holds them), which LiteRT does not implement: the fixture
/// `landmark_ops_custom.tflite` and its reference come from Samples/make_mediapipe_fixtures.py, the outputs
/// computed by MediaPipe's own kernels in a MediaPipe graph.
@Suite struct TFLiteMediaPipeTests {
  static let source = Fixtures.url("tflite").appendingPathComponent("landmark_ops_custom.tflite")
  static let reference = Fixtures.url("tflite").appendingPathComponent("landmark_ops_custom.reference.h5")

  /// The file converts to both formats and the written models match MediaPipe's outputs (the crop's sampling
  /// points partly outside the map, a rotation target of 0.3, a crop 4 wide and 5 high) within float32's rule.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func landmarkOperatorsMatchMediaPipe(_ format: ModelFormat) throws {
    let model = try Converter.convert(modelAt: Self.source, options: ConversionOptions(format: format))
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try model.write(to: url)
    let report = try ParityVerifier.verify(
      source: Self.source, converted: url, options: VerificationOptions(samples: 2, reference: Self.reference))
    #expect(report.passed, "\(report.outputs.filter { !$0.passed }.map { "\($0.name) vs \($0.comparedWith)" })")
    let againstMediaPipe = report.outputs.filter { $0.comparedWith != .sourceModel }
    #expect(againstMediaPipe.count == 8 && againstMediaPipe.allSatisfy(\.passed))
    // Each comparison with MediaPipe's outputs measured how far the source's own rounding moves the output.
    #expect(againstMediaPipe.allSatisfy { $0.roundoffSensitivity != nil })
    #expect(report.toleranceBasis == .float32Weights)
    #expect(model.graph.outputs.map { model.graph[$0].type.shape } == [[4, 4], [5, 4, 3], [5, 2], [10, 3]])
  }

  /// The rotation comes from the difference of two landmarks' coordinates: an ML Program computes in float32
  /// unless float16 is asked for, and says why.
  @Test func theRotationKeepsAnMLProgramInFloat32() throws {
    let model = try Converter.convert(modelAt: Self.source, options: ConversionOptions(format: .mlProgram))
    #expect(model.writerOptions.precision == .float32)
    #expect(model.precisionNotes.contains { $0.contains("Landmarks2TransformMatrix") && $0.contains("float32") })
    let asked = try Converter.convert(
      modelAt: Self.source, options: ConversionOptions(format: .mlProgram, precision: .float16))
    #expect(asked.writerOptions.precision == .float16)
  }

  /// The custom options are FlexBuffers maps: read as Python's flexbuffers.Builder wrote them (the values
  /// Samples/make_mediapipe_fixtures.py gives; subset_idxs a typed vector of 7 integers).
  @Test func flexBufferOptionsReadAsWritten() throws {
    let model = try TFLiteReader.read(contentsOf: Self.source)
    let names = model.subgraph.operators.map { model.operatorCodes[$0.opcodeIndex].name }
    #expect(
      names == [
        "STRIDED_SLICE", "RESHAPE", "MUL", "STRIDED_SLICE", "RESHAPE", "MUL", "CUSTOM(Landmarks2TransformMatrix)",
        "CUSTOM(TransformTensorBilinear)", "CUSTOM(TransformLandmarks)", "CUSTOM(TransformLandmarks)",
      ])
    let options = try FlexBufferMap(Array(model.file.bytes[try #require(model.subgraph.operators[6].customOptions)]))
    #expect(options["left_rotation_idx"] == .int(0))
    #expect(options["right_rotation_idx"] == .int(1))
    #expect(options["output_width"] == .int(4))
    #expect(options["output_height"] == .int(5))
    #expect(options["scale_x"] == .float(1.5))
    #expect(options["scale_y"] == .float(1.25))
    #expect(options["subset_idxs"] == .ints([2, 3, 4, 5, 6, 7, 8]))
    guard case .float(let target) = options["target_rotation_radians"] else {
      Issue.record("target_rotation_radians is \(String(describing: options["target_rotation_radians"]))")
      return
    }
    #expect(abs(target - 0.3) < 1e-7)
    let sampling = try FlexBufferMap(
      Array(model.file.bytes[try #require(model.subgraph.operators[7].customOptions)]))
    #expect(sampling.entries == ["output_height": .int(5), "output_width": .int(4)])
  }

  /// Every prefix of the options and the options with seeded bytes changed are read or refused with an error;
  /// none crashes or hangs the reader.
  @Test func damagedFlexBufferOptionsAreRefusedWithoutCrashing() throws {
    let model = try TFLiteReader.read(contentsOf: Self.source)
    let bytes = Array(model.file.bytes[try #require(model.subgraph.operators[6].customOptions)])
    var refused = 0
    for length in 0..<bytes.count {
      do { _ = try FlexBufferMap(Array(bytes.prefix(length))) } catch is FlexBufferMap.Failure { refused += 1 }
    }
    #expect(refused > 0)
    for damaged in Fixtures.damagedCopies(of: bytes, count: 2000, changes: 3, seed: 41) {
      _ = try? FlexBufferMap(damaged)
    }
  }

  /// Options out of range are refused naming the operator and the option, before anything is written.
  @Test func aSubsetIndexBeyondTheLandmarksIsRefusedByName() throws {
    var bytes = [UInt8](try Data(contentsOf: Self.source))
    let model = try TFLiteReader.read(bytes: bytes, path: "bad.tflite")
    let range = try #require(model.subgraph.operators[6].customOptions)
    // subset_idxs is a typed vector of one-byte integers 2...8 in the options: make its first element 10 (the
    // landmarks are 10).
    let start = try #require(
      (range.lowerBound..<(range.upperBound - 6)).first { at in (0..<7).allSatisfy { bytes[at + $0] == UInt8(2 + $0) } }
    )
    bytes[start] = 10
    let damaged = try TFLiteReader.read(bytes: bytes, path: "bad.tflite")
    do {
      _ = try TFLiteGraphImporter.importGraph(damaged)
      Issue.record("imported")
    } catch TFLiteFormatError.unsupportedOperator(_, let op, let index, let detail) {
      #expect(op == "CUSTOM(Landmarks2TransformMatrix)" && index == 6 && detail.contains("subset_idxs"))
    }
  }
}
