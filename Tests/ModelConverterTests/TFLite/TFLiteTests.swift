import Foundation
import KerasTestSupport
import ModelConverter
import ModelIR
import ReferenceRuntime
import TFLiteFormat
import TestSupport
import Testing

/// TensorFlow Lite sources (Samples/make_tflite_fixtures.py: tf_keras models converted by TensorFlow's own
/// converter in float32, dynamic-range, float16 and full-integer forms, with LiteRT's outputs and what LiteRT's
/// interpreter reads of each file).
@Suite struct TFLiteTests {
  static let folder = Fixtures.url("tflite")
  static let files = [
    "small_cnn_float32", "small_cnn_dynamic", "small_cnn_float16", "small_cnn_int8", "mixed_ops_float32",
    "lstm_float32", "classifier_with_metadata", "space_sparse_sparse", "upsample_embed_float32", "elementwise_float32",
    "trig_float32", "spectrogram_float32", "transpose_bias_custom", "columns_float32", "prelu_pad_float32",
  ]

  struct Expected: Decodable {
    struct Tensor: Decodable {
      var name: String
      var shape: [Int]
      var type: String
      var scale: Float
      var zeroPoint: Int64
    }
    struct Model: Decodable {
      var operators: [String]
      var inputs: [Tensor]
      var outputs: [Tensor]
    }
    var models: [String: Model]
  }

  static let expected: Expected = {
    let data = FileManager.default.contents(atPath: folder.appendingPathComponent("expected.json").path) ?? Data()
    return (try? JSONDecoder().decode(Expected.self, from: data)) ?? Expected(models: [:])
  }()

  /// The reader reads what LiteRT's interpreter reads: the operators in order, each input's and output's
  /// name, shape, type and quantization.
  @Test(arguments: files)
  func theReaderReadsWhatLiteRTReads(_ name: String) throws {
    let model = try TFLiteReader.read(contentsOf: Self.folder.appendingPathComponent(name + ".tflite"))
    let want = try #require(Self.expected.models[name + ".tflite"])
    #expect(model.subgraph.operators.map { model.operatorCodes[$0.opcodeIndex].name } == want.operators)
    for (indices, tensors) in [(model.subgraph.inputs, want.inputs), (model.subgraph.outputs, want.outputs)] {
      #expect(indices.count == tensors.count)
      for (index, tensor) in zip(indices, tensors) {
        let read = model.subgraph.tensors[index]
        #expect(read.name == tensor.name)
        #expect(read.shape == tensor.shape)
        #expect(read.type.name == tensor.type)
        #expect((read.quantization?.scales.first ?? 0) == tensor.scale)
        #expect((read.quantization?.zeroPoints.first ?? 0) == tensor.zeroPoint)
      }
    }
  }

  /// Each fixture converts to both formats and matches LiteRT's outputs: float models within the format's
  /// float rule, the full-integer model within the integer-activation bound.
  @Test(arguments: files, [ModelFormat.neuralNetwork, .mlProgram])
  func convertsAndMatchesLiteRT(_ name: String, _ format: ModelFormat) throws {
    let source = Self.folder.appendingPathComponent(name + ".tflite")
    let model = try Converter.convert(modelAt: source, options: ConversionOptions(format: format))
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try model.write(to: url)
    let report = try ParityVerifier.verify(
      source: source, converted: url,
      options: VerificationOptions(samples: 2, reference: Self.folder.appendingPathComponent(name + ".reference.h5")))
    #expect(report.passed, "\(report.outputs) \(report.interface?.differences ?? [])")
    // LiteRT's own outputs, and our reading of the source against them.
    let againstLiteRT = report.outputs.filter { $0.comparedWith != .sourceModel }
    #expect(againstLiteRT.count == 2 && againstLiteRT.allSatisfy(\.passed))
    if name.hasSuffix("int8") {
      #expect(report.toleranceBasis == .quantizedActivations)
    }
    // The interface keeps the signature's names and the file's shapes.
    let want = try #require(Self.expected.models[name + ".tflite"])
    #expect(model.graph.inputs.map { model.graph[$0].type.shape } == want.inputs.map { Array($0.shape.dropFirst()) })
  }

  /// Every prefix of a file, and the file with seeded bytes changed, is refused with an error or read; none
  /// crashes or hangs the reader.
  @Test(arguments: ["small_cnn_int8", "streaming_int8", "spectrogram_float32"])
  func damagedFilesAreRefusedWithoutCrashing(_ name: String) throws {
    let bytes = [UInt8](try Data(contentsOf: Self.folder.appendingPathComponent(name + ".tflite")))
    var refused = 0
    for length in stride(from: 0, to: bytes.count, by: 61) {
      do { _ = try TFLiteReader.read(bytes: Array(bytes.prefix(length)), path: "cut.tflite") } catch { refused += 1 }
    }
    #expect(refused > 0)
    for damaged in Fixtures.damagedCopies(of: bytes, count: 200, changes: 4, seed: 39, from: 8) {
      if let model = try? TFLiteReader.read(bytes: damaged, path: "damaged.tflite") {
        _ = try? TFLiteGraphImporter.importGraph(model)
      }
    }
  }

  @Test func aFileThatIsNotTFLiteSaysSo() throws {
    #expect(throws: TFLiteFormatError.self) {
      try TFLiteReader.read(bytes: Array("not a model at all".utf8), path: "x.tflite")
    }
  }

  /// Operators no handler converts are all named at once, before anything is written (exit 65).
  @Test func unsupportedOperatorsAreNamedAtOnce() throws {
    do {
      _ = try Converter.convert(modelAt: Self.folder.appendingPathComponent("unsupported_ops.tflite"))
      Issue.record("converted")
    } catch TFLiteFormatError.unsupportedOperators(_, let operators) {
      #expect(operators == ["CUMSUM", "TOPK_V2"])
    }
  }

  /// FLOOR is a step function: an ML Program with one computes in float32 unless float16 is asked for, and
  /// says why (float16's rounding of its input would move results by 1 near every integer).
  @Test func aFloorKeepsAnMLProgramInFloat32() throws {
    let source = Self.folder.appendingPathComponent("trig_float32.tflite")
    let model = try Converter.convert(modelAt: source, options: ConversionOptions(format: .mlProgram))
    #expect(model.writerOptions.precision == .float32)
    #expect(model.precisionNotes.contains { $0.contains("'Floor'") && $0.contains("float32") })
    let asked = try Converter.convert(
      modelAt: source, options: ConversionOptions(format: .mlProgram, precision: .float16))
    #expect(asked.writerOptions.precision == .float16)
    #expect(asked.precisionNotes.contains { $0.contains("'Floor'") && $0.contains("float16 was asked for") })
  }

  /// A streaming full-integer model (microWakeWord's form: VAR_HANDLE ring buffers read, concatenated with the
  /// new frames and assigned back; CALL_ONCE initializing them; SPLIT_V): each variable becomes an input
  /// (`<variable>_in`) and an output (`<variable>_out`) of the converted model. Fed back step after step from
  /// zeros, the written model (as the Core ML reader reads it) follows LiteRT's stream of 6 invocations within
  /// the integer-activation bound, and closer than the same steps each run from the start would.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func aStreamingModelCarriesItsVariablesAsInputsAndOutputs(_ format: ModelFormat) throws {
    let source = Self.folder.appendingPathComponent("streaming_int8.tflite")
    let model = try Converter.convert(modelAt: source, options: ConversionOptions(format: format))
    let graph = model.graph
    let states = ["stream_input/states", "stream_mix/states", "stream_out/states"]
    // In the order the graph first reads them; an ML Program's names have '_' for '/'.
    func plain(_ name: String) -> String { name.replacingOccurrences(of: "/", with: "_") }
    let inputs = graph.inputs.map { plain(graph[$0].name) }
    let outputs = graph.outputs.map { plain(graph[$0].name) }
    #expect(inputs.first == "input_audio" && Set(inputs.dropFirst()) == Set(states.map { plain($0 + "_in") }))
    #expect(outputs.count == 4 && outputs.dropFirst().map { $0.dropLast(4) + "_in" } == Array(inputs.dropFirst()))
    #expect(model.sourceNotes.contains { $0.contains("'stream_mix/states' is kept between invocations") })
    let inspection = try ModelInspector.inspect(contentsOf: source)
    let variables = try #require(inspection.presentation.fields.first { $0.name == "Variables" })
    #expect(variables.values.first?.hasPrefix("3 kept between invocations") == true)
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try model.write(to: url)
    // Random inputs and states, then LiteRT's saved stream (the file holds no states: each model carries its
    // own from step to step): the written model computes what the source does, and what LiteRT did.
    let referenceURL = Self.folder.appendingPathComponent("streaming_int8.reference.h5")
    let report = try ParityVerifier.verify(
      source: source, converted: url, options: VerificationOptions(samples: 2, reference: referenceURL))
    #expect(report.passed, "\(report.outputs)")
    let againstLiteRT = report.outputs.filter { $0.comparedWith == .referenceOutputs }
    #expect(againstLiteRT.count == 1 && againstLiteRT.allSatisfy(\.passed))
    // LiteRT's stream: inputs/0 [6, 3, 8] int8 values, outputs/0 [6, 1] uint8 values.
    let reference = try KerasTestSupport.ReferenceFile(url: referenceURL)
    let (frames, expected) = (try reference.dataset("inputs/0"), try reference.dataset("outputs/0"))
    let written = try CoreMLFrontend().readBack(at: url, source: graph).graph
    let interpreter = Interpreter(graph: written)
    let stateShapes = written.inputs.dropFirst().map { written[$0].type.shape }
    func run(_ steps: [Int], carrying: Bool) -> [Float] {
      var carried = stateShapes.map { Tensor(shape: $0, values: [Float](repeating: 0, count: $0.reduce(1, *))) }
      var outputs: [Float] = []
      for step in steps {
        let frame = Tensor(
          shape: written[written.inputs[0]].type.shape, values: Array(frames.values[step * 24..<(step + 1) * 24]))
        let result = interpreter.run([frame] + carried)
        outputs.append(result[0].values[0])
        if carrying { carried = Array(result.dropFirst()) }
      }
      return outputs
    }
    let stream = run(Array(0..<6), carrying: true)
    let alone = run(Array(0..<6), carrying: false)
    func relativeRMS(_ a: [Float]) -> Float {
      let error = zip(a, expected.values).map { ($0 - $1) * ($0 - $1) }.reduce(0, +)
      return (error / expected.values.map { $0 * $0 }.reduce(0, +)).squareRoot()
    }
    let bound = try #require(report.maximumRelativeRMSError)
    #expect(relativeRMS(stream) <= bound, "stream \(stream), LiteRT \(expected.values)")
    #expect(relativeRMS(stream) < relativeRMS(alone) / 2, "stream \(stream), each alone \(alone)")
  }

  /// A Teachable Machine-style file: its metadata's labels (a labels.txt zipped onto the file) make a Core ML
  /// classifier, its image input with normalization (pixel - 127.5) / 127.5 an image input of scale 1/127.5
  /// and bias -1, each said in a note; verify agrees with LiteRT on the same pixels and labels.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func metadataLabelsAndNormalizationMakeAnImageClassifier(_ format: ModelFormat) throws {
    let source = Self.folder.appendingPathComponent("classifier_with_metadata.tflite")
    let model = try Converter.convert(modelAt: source, options: ConversionOptions(format: format))
    #expect(model.writerOptions.classifier?.labels.descriptions == ["cat", "dog", "bird"])
    let image = try #require(model.writerOptions.imageInputs["image"])
    #expect(abs(image.scale - 1 / 127.5) < 1e-9)
    #expect([image.redBias, image.greenBias, image.blueBias] == [-1, -1, -1])
    #expect(model.sourceNotes.contains { $0.contains("class labels from the file's metadata") })
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try model.write(to: url)
    let report = try ParityVerifier.verify(
      source: source, converted: url,
      options: VerificationOptions(
        samples: 2, reference: Self.folder.appendingPathComponent("classifier_with_metadata.reference.h5")))
    #expect(report.passed)
    #expect(report.classifier?.labelsMatch == true)
  }
}
