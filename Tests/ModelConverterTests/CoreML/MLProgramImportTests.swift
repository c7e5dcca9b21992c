import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelFormats
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// The ML Program reader and importer, checked against `.mlpackage` files coremltools 9 wrote
/// (`Samples/make_mlpackage_golden.py`): run by the reference runtime, each reproduces the outputs real
/// Keras saved beside it.
@Suite struct MLProgramImportTests {
  static let golden = Fixtures.url("coremltools")

  /// Every float32 program `make_mlpackage_golden.py` listed in the fixtures' manifest.
  static let float32Programs: [String] = {
    guard let data = FileManager.default.contents(atPath: golden.appendingPathComponent("manifest.json").path),
      let manifest = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
      let programs = manifest["programs"] as? [[String: Any]]
    else { return [] }
    return programs.filter { $0["precision"] as? String == "float32" && $0["compression"] == nil }
      .compactMap { ($0["name"] as? String)?.replacingOccurrences(of: ".mlpackage", with: "") }
  }()

  /// coremltools writes a rolled Keras LSTM as a `while_loop` over tensor lists: it is unrolled (its
  /// outputs match Keras in `float32ProgramReproducesKerasOutputs`). A loop whose condition depends on
  /// the data (here: the counter compared with the model's input) is refused, naming the loop.
  @Test func loopsThatStopOnTheDataAreRefused() throws {
    let url = Self.package("time_distributed_pooling_program")
    let unrolled = try CoreMLGraphImporter.importModel(contentsOf: url)
    #expect(unrolled.graph.nodes.count > 20)
    var spec = try CoreMLSpecReader.read(contentsOf: url)
    var program = try #require(spec.program)
    let index = try #require(program.operations.firstIndex { $0.type == "while_loop" })
    var condition = program.operations[index].blocks[0]
    condition.operations[0].inputs["y"] = [.name("input")]
    program.operations[index].blocks[0] = condition
    spec.program = program
    #expect {
      _ = try CoreMLGraphImporter.importModel(spec, path: "loop.mlpackage")
    } throws: { error in
      guard case CoreMLReaderError.unsupportedOperation(_, let type, _, let detail) = error else { return false }
      return type == "while_loop" && detail.contains("computed from the data")
    }

    // A bound of a million iterations (a hostile edit): refused with an error, never run that long.
    var endless = try CoreMLSpecReader.read(contentsOf: url)
    var endlessProgram = try #require(endless.program)
    let bound = try #require(
      endlessProgram.operations.firstIndex {
        $0.outputs.first?.name == "time_distributed_pooling_lstm_PartitionedCall_strided_slice"
      })
    endlessProgram.operations[bound].value?.integers = [1_000_000]
    endless.program = endlessProgram
    #expect(throws: CoreMLReaderError.self) {
      _ = try CoreMLGraphImporter.importModel(endless, path: "endless.mlpackage")
    }
  }
  /// The reader keeps a control-flow operation's nested blocks (the first step towards running them):
  /// coremltools' `while_loop` for the rolled LSTM has a condition block (`less` of the counter, one output)
  /// and a body block (four loop values in and out: the counter, the output list, h and c), as the file
  /// holds them (read with coremltools' own protobuf classes when this test was written).
  @Test func nestedBlocksAreRead() throws {
    let spec = try CoreMLSpecReader.read(contentsOf: Self.package("time_distributed_pooling_program"))
    let loop = try #require(spec.program?.operations.first { $0.type == "while_loop" })
    #expect(loop.hasBlocks && loop.blocks.count == 2)
    let (condition, body) = (loop.blocks[0], loop.blocks[1])
    #expect(condition.inputs.count == 4 && body.inputs.count == 4)
    #expect(condition.operations.map(\.type) == ["less"])
    #expect(condition.outputs == condition.operations.map { $0.outputs[0].name })
    #expect(body.outputs.count == 4)
    let bodyTypes = Set(body.operations.map(\.type))
    #expect(
      bodyTypes.isSuperset(of: ["list_read", "matmul", "split", "sigmoid", "tanh", "list_write"]),
      "\(bodyTypes.sorted())")
    #expect(loop.inputs["loop_vars"]?.count == 4)
  }

  static let reducedPrecisionPrograms = [
    "digits_cnn_program_fp16", "rgb_classifier_program_fp16", "rgb_classifier_program_lut4",
    "rgb_classifier_program_linear8",
    "rgb_classifier_program_linear8_ios18", "sequential_plain",
  ]

  static func package(_ name: String) -> URL { golden.appendingPathComponent(name + ".mlpackage") }

  /// The network input of one reference sample: `inputs/<i>`, or for an image the saved 0-255 RGB pixels
  /// in the model's channel order, channels first.
  static func input(_ reference: HDF5File, _ model: CoreMLModel, sample: Int) throws -> Tensor {
    let input = model.inputs[0]
    if input.image != nil {
      let pixels = try reference.root.floatDataset("pixels/0")
      let (h, w, c) = (pixels.shape[1], pixels.shape[2], pixels.shape[3])
      var values = [Float](repeating: 0, count: h * w * c)
      for y in 0..<h {
        for x in 0..<w {
          for k in 0..<c {
            let source = input.colorSpace == .bgr ? c - 1 - k : k
            values[(k * h + y) * w + x] = pixels.values[((sample * h + y) * w + x) * c + source]
          }
        }
      }
      return Tensor(shape: input.shape, values: values)
    }
    let inputs = try reference.root.floatDataset("inputs/0")
    let size = inputs.shape.dropFirst().reduce(1, *)
    return Tensor(shape: input.shape, values: Array(inputs.values[sample * size..<(sample + 1) * size]))
  }

  /// Runs every reference sample; returns (actual, expected) per sample for output 0.
  static func run(_ name: String) throws -> (model: CoreMLModel, pairs: [([Float], [Float])]) {
    let model = try CoreMLGraphImporter.importModel(contentsOf: package(name))
    let reference = try HDF5File(path: golden.appendingPathComponent(name + ".reference.h5").path)
    let outputs = try reference.root.floatDataset("outputs/0")
    let outSize = outputs.shape.dropFirst().reduce(1, *)
    let interpreter = Interpreter(graph: model.graph)
    var pairs: [([Float], [Float])] = []
    for sample in 0..<outputs.shape[0] {
      let actual = interpreter.run([try input(reference, model, sample: sample)])[0].values
      pairs.append((actual, Array(outputs.values[sample * outSize..<(sample + 1) * outSize])))
    }
    return (model, pairs)
  }

  @Test func everyFloat32ProgramIsTested() {
    #expect(Self.float32Programs.count >= 20)
    #expect(
      Self.float32Programs.contains("lstm_classifier_program")
        && Self.float32Programs.contains("conv2d_transpose_program"))
  }

  @Test(arguments: float32Programs)
  func float32ProgramReproducesKerasOutputs(_ name: String) throws {
    let (model, pairs) = try Self.run(name)
    #expect(!model.spec.usesFloat16 && model.spec.quantizationBits == 0)
    #expect(pairs.count >= 3)
    for (sample, (actual, expected)) in pairs.enumerated() {
      #expect(actual.count == expected.count)
      let worst = zip(actual, expected).map { abs($0 - $1) - (1e-5 + 1e-3 * abs($1)) }.max() ?? 0
      #expect(worst <= 0, "\(name) sample \(sample): beyond atol 1e-5 + rtol 1e-3 by \(worst)")
    }
  }

  @Test(arguments: reducedPrecisionPrograms)
  func reducedPrecisionProgramStaysWithinItsTolerance(_ name: String) throws {
    let (model, pairs) = try Self.run(name)
    let tolerance = VerificationTolerance.defaults(for: model.spec)
    let limit = try #require(tolerance.maximumRelativeRMS)
    #expect(model.spec.usesFloat16 || model.spec.quantizationBits > 0)
    var noise = 0.0
    var signal = 0.0
    var strictFailures = 0
    for (actual, expected) in pairs {
      #expect(actual.count == expected.count)
      for (a, e) in zip(actual, expected) {
        noise += Double(a - e) * Double(a - e)
        signal += Double(e) * Double(e)
        if abs(a - e) > 1e-5 + 1e-3 * abs(e) { strictFailures += 1 }
      }
      // Top-1 agreement with Keras.
      #expect(
        actual.indices.max { actual[$0] < actual[$1] } == expected.indices.max { expected[$0] < expected[$1] },
        "\(name): top-1 differs")
    }
    #expect(
      noise <= Double(limit * limit) * max(signal, 1),
      "\(name): relative RMS error \((noise / signal).squareRoot()) beyond \(limit) (\(tolerance.basis))")
    // The reduced precision really shows: the outputs differ from the float32 program's (or, without one,
    // from Keras beyond the float32 element rule).
    if let baseline = name.hasPrefix("rgb_")
      ? "rgb_classifier_program" : name.hasPrefix("digits_") ? "digits_cnn_program" : nil
    {
      let float32 = try Self.run(baseline).pairs.flatMap(\.0)
      #expect(
        float32 != pairs.flatMap(\.0),
        "\(name): computes exactly as the float32 program; is float16/quantization emulated?")
    } else {
      #expect(strictFailures > 0, "\(name): no element differs beyond the float32 rule; is float16 emulated?")
    }
  }

  /// Parameters given as inline values (as our writer writes small constants) read like `const` operations:
  /// every `const` output inlined into the operations reading it, the program still reproduces Keras.
  @Test(arguments: [
    "digits_cnn_program", "ops_zoo_program", "writer_ops_program", "lstm_fused_program", "conv1d_classifier_program",
  ])
  func inlinedConstantsReadLikeConstOperations(_ name: String) throws {
    var spec = try CoreMLSpecReader.read(contentsOf: Self.package(name))
    var program = try #require(spec.program)
    var constants: [String: MILValue] = [:]
    for op in program.operations where op.type == "const" { constants[op.outputs[0].name] = op.value }
    program.operations = program.operations.filter { $0.type != "const" }.map { op in
      var op = op
      for (key, arguments) in op.inputs {
        op.inputs[key] = arguments.map { argument in
          if case .name(let name) = argument, let value = constants[name] { return .value(value) }
          return argument
        }
      }
      return op
    }
    #expect(
      program.operations.allSatisfy {
        $0.inputs.values.allSatisfy {
          $0.allSatisfy { if case .name(let n) = $0 { return constants[n] == nil } else { return true } }
        }
      })
    spec.program = program
    let model = try CoreMLGraphImporter.importModel(spec, path: name)
    let reference = try HDF5File(path: Self.golden.appendingPathComponent(name + ".reference.h5").path)
    let outputs = try reference.root.floatDataset("outputs/0")
    let outSize = outputs.shape.dropFirst().reduce(1, *)
    let interpreter = Interpreter(graph: model.graph)
    for sample in 0..<outputs.shape[0] {
      let actual = interpreter.run([try Self.input(reference, model, sample: sample)])[0].values
      let expected = outputs.values[sample * outSize..<(sample + 1) * outSize]
      let worst = zip(actual, expected).map { abs($0 - $1) - (1e-5 + 1e-3 * abs($1)) }.max() ?? 0
      #expect(actual.count == outSize && worst <= 0, "\(name) sample \(sample): \(worst)")
    }
  }

  @Test func precisionAndCompressionAreRead() throws {
    #expect(try CoreMLSpecReader.read(contentsOf: Self.package("digits_cnn_program_fp16")).usesFloat16)
    #expect(try !CoreMLSpecReader.read(contentsOf: Self.package("digits_cnn_program")).usesFloat16)
    let lut = try CoreMLSpecReader.read(contentsOf: Self.package("rgb_classifier_program_lut4"))
    #expect(
      lut.quantizationBits == 4 && lut.program?.operations.contains { $0.type == "constexpr_lut_to_dense" } == true)
    let linear = try CoreMLSpecReader.read(contentsOf: Self.package("rgb_classifier_program_linear8"))
    #expect(
      linear.quantizationBits == 8
        && linear.program?.operations.contains { $0.type == "constexpr_affine_dequantize" } == true)
    let ios18 = try CoreMLSpecReader.read(contentsOf: Self.package("rgb_classifier_program_linear8_ios18"))
    #expect(ios18.quantizationBits == 8 && ios18.program?.opset == "CoreML8")
    #expect(ios18.program?.operations.contains { $0.type == "constexpr_blockwise_shift_scale" } == true)
    #expect(VerificationTolerance.defaults(for: lut).basis == .quantizedWeights)
    #expect(
      VerificationTolerance.defaults(
        for: try CoreMLSpecReader.read(contentsOf: Self.package("rgb_classifier_program_fp16"))
      ).basis == .float16Weights)
    #expect(
      VerificationTolerance.defaults(for: try CoreMLSpecReader.read(contentsOf: Self.package("rgb_classifier_program")))
        == .float32)
  }

  @Test func labelsAndImagePreprocessingAreRead() throws {
    let rgb = try CoreMLGraphImporter.importModel(contentsOf: Self.package("rgb_classifier_program"))
    #expect(rgb.spec.modelType == "mlProgram" && rgb.spec.program?.opset == "CoreML5")
    #expect(rgb.classLabels == ["cat", "dog", "bird", "fish", "frog"])
    #expect(rgb.spec.stringClassLabels == rgb.classLabels)
    #expect(rgb.spec.predictedFeatureName == "classLabel" && rgb.probabilitiesOutput == "classLabel_probs")
    let photo = try #require(rgb.inputs.first)
    let image = try #require(photo.image)
    #expect(photo.colorSpace == .bgr && image.isBGR)
    #expect(abs(image.scale - 1 / 127.5) < 1e-7)
    #expect(photo.networkBiases == [-1, -1, -1])
    #expect(rgb.inputs.first?.shape == [1, 3, 16, 16])
    // The input blob is the value after the scale and bias operations, which run in the graph.
    let preprocessed = try #require(rgb.blobs["photo"])
    #expect(rgb.graph.nodes.contains { $0.output == preprocessed && $0.origin?.type == "add" })

    let digits = try CoreMLGraphImporter.importModel(contentsOf: Self.package("digits_cnn_program"))
    #expect(digits.classLabels == (0..<10).map(String.init) && digits.spec.int64ClassLabels == Array(0..<10))
    #expect(digits.inputs.first?.colorSpace == .grayscale)
    #expect(digits.inputs.first?.image == .init(colorSpace: .grayscale, scale: 1 / 255.0, networkBiases: [0]))
    // Every node knows the MIL operation it came from.
    #expect(digits.graph.nodes.allSatisfy { $0.origin != nil })
    let types = Set(digits.graph.nodes.compactMap { node -> String? in node.origin?.type })
    #expect(types.isSuperset(of: ["conv", "relu", "max_pool", "linear", "softmax"]))
  }

  @Test func fp16ProgramCastsToFloat16() throws {
    let model = try CoreMLGraphImporter.importModel(contentsOf: Self.package("digits_cnn_program_fp16"))
    #expect(model.graph.nodes.contains { $0.operation == .cast(.float16) })
    #expect(model.graph.nodes.contains { $0.operation == .cast(.float32) })
  }

  @Test(arguments: [
    "digits_cnn_program", "rgb_classifier_program", "rgb_classifier_program_fp16", "conv1d_classifier_program",
  ])
  func verifyComparesProgramsWithKeras(_ name: String) throws {
    let reference = try HDF5File(path: Self.golden.appendingPathComponent(name + ".reference.h5").path)
    let source = Fixtures.root.appendingPathComponent(try #require(try reference.root.stringAttribute("source")))
    var options = VerificationOptions(samples: 2, reference: Self.golden.appendingPathComponent(name + ".reference.h5"))
    // The names make_mlpackage_golden.py gave coremltools.
    (options.inputNames, options.outputNames) = try Fixtures.coremltoolsNames(Self.package(name))
    let report = try ParityVerifier.verify(source: source, converted: Self.package(name), options: options)
    let failures = report.outputs.filter { !$0.passed }.map {
      "\($0.name) vs \($0.comparedWith): max abs \($0.maxAbsoluteError)"
    }
    #expect(report.passed, "\(name): \(failures)")
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputs && $0.elements > 0 })
    // coremltools names its values after TensorFlow ops, so only the inputs and outputs pair by name.
    #expect(!report.layers.isEmpty)
  }

  // MARK: Rules

  @Test func coremltoolsProgramsBreakNoRule() throws {
    for name in Self.float32Programs + Self.reducedPrecisionPrograms {
      let spec = try CoreMLSpecReader.read(contentsOf: Self.package(name))
      #expect(
        CoreMLSpecificationRules.violations(in: spec).isEmpty,
        "\(name): \(CoreMLSpecificationRules.violations(in: spec))")
    }
  }

  @Test func editedProgramsReportTheirRules() throws {
    var spec = try CoreMLSpecReader.read(contentsOf: Self.package("rgb_classifier_program_lut4"))
    var program = try #require(spec.program)
    spec.specificationVersion = 6
    program.opset = "CoreML5"
    let conv = try #require(program.operations.firstIndex { $0.type == "conv" })
    program.operations[conv].inputs["x"] = [.name("not_defined_yet")]
    program.operations[conv + 1].outputs[0].name = program.operations[conv].outputs[0].name
    program.outputs.append("missing_output")
    spec.program = program
    let rules = Set(CoreMLSpecificationRules.violations(in: spec).map(\.rule))
    #expect(rules == ["MIL-OPSET", "MIL-ORDER", "MIL-SSA", "MIL-BLOCK-OUTPUTS"], "\(rules)")
    spec.specificationVersion = 5
    #expect(CoreMLSpecificationRules.violations(in: spec).contains { $0.rule == "MLPROGRAM-SPEC" })
    spec.predictedFeatureName = "label"
    #expect(CoreMLSpecificationRules.violations(in: spec).contains { $0.rule == "MLPROGRAM-CLASSIFIER" })
  }

  // MARK: Corrupt packages

  /// A copy of a golden package in a temporary folder, to damage.
  static func copy(_ name: String) throws -> (directory: URL, package: URL) {
    let directory = try Fixtures.temporaryDirectory()
    let package = directory.appendingPathComponent(name + ".mlpackage")
    try FileManager.default.copyItem(at: Self.package(name), to: package)
    return (directory, package)
  }

  static func weightFile(_ package: URL) -> URL {
    package.appendingPathComponent("Data/com.apple.CoreML/weights/weight.bin")
  }
  static func modelFile(_ package: URL) -> URL { package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel") }

  static func expectReaderError(_ package: URL, containing text: String) {
    do {
      let model = try CoreMLGraphImporter.importModel(contentsOf: package)
      Issue.record("read a damaged package: \(model.graph.nodes.count) nodes")
    } catch let error as CoreMLReaderError {
      #expect(error.description.contains(text), "\(error)")
    } catch {
      Issue.record("not a CoreMLReaderError: \(error)")
    }
  }

  @Test func truncatedWeightFileIsAnError() throws {
    let (directory, package) = try Self.copy("digits_cnn_program")
    defer { try? FileManager.default.removeItem(at: directory) }
    let bytes = try Data(contentsOf: Self.weightFile(package))
    try bytes.prefix(bytes.count / 2).write(to: Self.weightFile(package))
    Self.expectReaderError(package, containing: "weight.bin")
  }

  @Test func badBlobOffsetAndWrongBlobSizeAreErrors() throws {
    let (directory, package) = try Self.copy("digits_cnn_program")
    defer { try? FileManager.default.removeItem(at: directory) }
    var bytes = [UInt8](try Data(contentsOf: Self.weightFile(package)))
    // The first record's data offset pointing past the end of the file.
    bytes[64 + 16] = 0xFF
    bytes[64 + 17] = 0xFF
    try Data(bytes).write(to: Self.weightFile(package))
    Self.expectReaderError(package, containing: "weight.bin")

    // A record claiming fewer bytes than its declared tensor needs.
    bytes = [UInt8](try Data(contentsOf: Self.weightFile(Self.package("digits_cnn_program"))))
    bytes[64 + 8] &-= 4
    try Data(bytes).write(to: Self.weightFile(package))
    Self.expectReaderError(package, containing: "the value it is read for needs")
  }

  @Test func missingManifestItemIsAnError() throws {
    let (directory, package) = try Self.copy("digits_cnn_program")
    defer { try? FileManager.default.removeItem(at: directory) }
    let manifestURL = package.appendingPathComponent("Manifest.json")
    var manifest = try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: manifestURL)) as? [String: Any])
    manifest["rootModelIdentifier"] = "no-such-item"
    try JSONSerialization.data(withJSONObject: manifest).write(to: manifestURL)
    Self.expectReaderError(package, containing: "names no item")
    try FileManager.default.removeItem(at: manifestURL)
    Self.expectReaderError(package, containing: "Manifest.json")
  }

  /// [rule MIL-OPSET] a compressed constant of iOS 16 in an iOS 15 (CoreML5) program is an error.
  @Test func operationNewerThanTheOpsetIsAnError() throws {
    let (directory, package) = try Self.copy("rgb_classifier_program_lut4")
    defer { try? FileManager.default.removeItem(at: directory) }
    var bytes = [UInt8](try Data(contentsOf: Self.modelFile(package)))
    let needle = Array("CoreML6".utf8)
    var replaced = 0
    for start in 0..<(bytes.count - needle.count) where Array(bytes[start..<start + needle.count]) == needle {
      bytes[start + 6] = UInt8(ascii: "5")
      replaced += 1
    }
    #expect(replaced >= 2)
    try Data(bytes).write(to: Self.modelFile(package))
    Self.expectReaderError(package, containing: "needs opset CoreML6")
  }

  @Test func programInABareModelFileIsAnError() throws {
    let file = Self.modelFile(Self.package("digits_cnn_program"))
    #expect(throws: CoreMLReaderError.self) { try CoreMLSpecReader.read(contentsOf: file) }
  }

  @Test func unknownOperationIsAnErrorNamingIt() throws {
    let (directory, package) = try Self.copy("digits_cnn_program")
    defer { try? FileManager.default.removeItem(at: directory) }
    var bytes = [UInt8](try Data(contentsOf: Self.modelFile(package)))
    // Rename every "max_pool" operation type to "max_poox" (same length, so the protobuf stays valid).
    let needle = Array("max_pool".utf8)
    var replaced = 0
    for start in 0..<(bytes.count - needle.count)
    where Array(bytes[start..<start + needle.count]) == needle && bytes[start - 1] == UInt8(needle.count) {
      bytes[start + 7] = UInt8(ascii: "x")
      replaced += 1
    }
    #expect(replaced >= 1)
    try Data(bytes).write(to: Self.modelFile(package))
    Self.expectReaderError(package, containing: "max_poox")
  }

  /// Flipped bytes of a small golden's model file and weight file give an error or a model, never a crash.
  @Test(arguments: [
    "rnn_classifier_program", "rgb_classifier_program_lut4", "rgb_classifier_program_linear8_ios18",
    "gru_fused_program",
  ])
  func everyFlippedByteOfAProgramIsAnErrorOrAModel(_ name: String) throws {
    let (directory, package) = try Self.copy(name)
    defer { try? FileManager.default.removeItem(at: directory) }
    for file in [Self.modelFile(package), Self.weightFile(package)] {
      let original = [UInt8](try Data(contentsOf: file))
      var (refused, read) = (0, 0)
      for offset in original.indices where original.count < 4000 || offset % (original.count / 2000) == 0 {
        var damaged = original
        damaged[offset] ^= offset % 2 == 0 ? 0xA5 : 0x7F
        try Data(damaged).write(to: file)
        do {
          _ = try CoreMLGraphImporter.importModel(contentsOf: package)
          read += 1
        } catch {
          // The reader's own error about the model (exit 65), never another kind of failure.
          #expect(
            error is CoreMLReaderError && (error as? any KindedError)?.kind == .badModel,
            "\(file.lastPathComponent) offset \(offset): \(error)")
          refused += 1
        }
      }
      // A flipped weight byte is still a model (another number); the model file's structure is refused somewhere.
      #expect(read > 0, "\(name) \(file.lastPathComponent): every flip refused")
      if file == Self.modelFile(package) { #expect(refused > 0, "\(name): no flip of the model file refused") }
      try Data(original).write(to: file)
    }
  }
}
