import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// Classic Core ML networks as 2017-2019 converters wrote them (rank-5 mapping, specification 1 and 4,
/// DOUBLE multiarrays, GRU/LSTM with state inputs and outputs, gray/RGB/BGR images, an updatable
/// model), made with coremltools' old `NeuralNetworkBuilder` by `Samples/make_legacy_coreml.py`, as a
/// conversion source: each converts to both formats and verifies against itself in our runtime.
@Suite struct LegacyCoreMLSourceTests {
  static let folder = Fixtures.url("legacy_coreml")

  static let convertible = [
    "gray_cnn", "rgb_cnn", "bgr_cnn", "double_arrays", "gru_text", "lstm_text", "recurrent_stack", "regressor",
    "updatable", "image_to_image",
    "top_left_conv",
  ]

  static func url(_ name: String) -> URL { folder.appendingPathComponent(name + ".mlmodel") }

  static func convert(
    _ source: URL, to format: ModelFormat, precision: WeightPrecision = .float32, name: String = "converted"
  ) throws -> URL {
    let model = try Converter.convert(modelAt: source, options: ConversionOptions(format: format, precision: precision))
    let output = try Fixtures.temporaryDirectory().appendingPathComponent(name + "." + format.fileExtension)
    try model.write(to: output)
    return output
  }

  static func describe(_ report: ParityReport) -> String {
    "\(report.firstMismatch.map { "\($0)" } ?? "") \(report.outputs.filter { !$0.passed }) \(report.violations)"
  }

  @Test func fixturesAreClassicNetworks() throws {
    for name in Self.convertible + ["lstm_cell_state"] {
      let spec = try CoreMLSpecReader.read(contentsOf: Self.url(name))
      #expect(!spec.exactArrayMapping && !spec.rank4ImageMapping, "\(name)")
      #expect(spec.specificationVersion == (name == "updatable" ? 4 : 1), "\(name)")
    }
    let double = try CoreMLSpecReader.read(contentsOf: Self.url("double_arrays"))
    #expect(
      double.inputs.map(\.kind) == [
        .multiArray(shape: [3, 8, 8], dataType: 65600), .multiArray(shape: [5], dataType: 65600),
      ])
    let gru = try CoreMLSpecReader.read(contentsOf: Self.url("gru_text"))
    #expect(gru.inputs.map(\.isOptional) == [false, true])
    #expect(try CoreMLSpecReader.read(contentsOf: Self.url("regressor")).modelType == "neuralNetworkRegressor")
  }

  @Test(arguments: convertible.flatMap { name in [ModelFormat.neuralNetwork, .mlProgram].map { (name, $0) } })
  func convertsAndVerifies(_ name: String, _ format: ModelFormat) throws {
    let source = Self.url(name)
    let output = try Self.convert(source, to: format)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 8))
    #expect(report.passed, "\(name) -> \(format): \(Self.describe(report)) \(report.interface?.differences ?? [])")
    #expect(!report.outputs.isEmpty)

    // The interface stays: image colour space and size, labels, predicted feature name, outputs.
    let (before, after) = (try CoreMLSpecReader.read(contentsOf: source), try CoreMLSpecReader.read(contentsOf: output))
    // Every input stays, in order, equally optional (recurrent state inputs included).
    let kept = before.inputs
    #expect(after.inputs.map(\.name) == kept.map(\.name), "\(name)")
    #expect(after.inputs.map(\.isOptional) == kept.map(\.isOptional), "\(name)")
    // An ML Program's optional input carries a default of zero (what Core ML's recurrent layers read for a missing state).
    if format == .mlProgram {
      #expect(after.inputs.filter(\.isOptional).allSatisfy { $0.defaultValue == 0 }, "\(name)")
    }
    // Images keep their kind, size and colour space; multiarrays the shapes the source declared.
    for (a, b) in zip(kept, after.inputs) {
      switch (a.kind, b.kind) {
      case (.image, _): #expect(a.kind == b.kind, "\(name)")
      case (.multiArray(let shape, _), .multiArray(let written, _)):
        #expect(shape == written, "\(name) input \(a.name)")
      default: Issue.record("\(name): input \(a.name) changed kind: \(a.kind) -> \(b.kind)")
      }
    }
    for output in before.outputs {
      guard case .multiArray(let shape, _) = output.kind,
        let written = after.outputs.first(where: { $0.name == output.name })
      else { continue }
      guard case .multiArray(let writtenShape, _) = written.kind else { continue }
      #expect(shape == writtenShape, "\(name) output \(output.name)")
    }
    #expect(after.stringClassLabels == before.stringClassLabels && after.int64ClassLabels == before.int64ClassLabels)
    #expect(after.predictedFeatureName == before.predictedFeatureName)
    #expect(Set(after.outputs.map(\.name)) == Set(before.outputs.map(\.name)))
    #expect(after.userDefined["modelconv.source_specification_version"] == String(before.specificationVersion))
    let classifier = !before.stringClassLabels.isEmpty || !before.int64ClassLabels.isEmpty
    #expect(
      after.modelType == (format == .mlProgram ? "mlProgram" : classifier ? "neuralNetworkClassifier" : "neuralNetwork")
    )
  }

  @Test func imageInterfacesAreKept() throws {
    for (name, colorSpace, size, labels) in [
      ("gray_cnn", "GRAYSCALE", 28, 10), ("rgb_cnn", "RGB", 16, 5), ("bgr_cnn", "BGR", 12, 3),
    ] {
      for format in [ModelFormat.neuralNetwork, .mlProgram] {
        let spec = try CoreMLSpecReader.read(contentsOf: try Self.convert(Self.url(name), to: format))
        #expect(
          spec.inputs.first?.kind == .image(width: size, height: size, colorSpace: colorSpace), "\(name) -> \(format)")
        #expect(spec.stringClassLabels.count + spec.int64ClassLabels.count == labels)
        // A neural network keeps the scaler in its preprocessing (an ML Program computes it in the program).
        let source = try CoreMLSpecReader.read(contentsOf: Self.url(name))
        if format == .neuralNetwork {
          #expect(spec.preprocessing.map(\.channelScale) == source.preprocessing.map(\.channelScale), "\(name)")
        }
      }
    }
    #expect(
      try CoreMLSpecReader.read(contentsOf: try Self.convert(Self.url("bgr_cnn"), to: .mlProgram)).int64ClassLabels == [
        7, 11, 42,
      ])
    #expect(
      try CoreMLSpecReader.read(contentsOf: try Self.convert(Self.url("gray_cnn"), to: .neuralNetwork))
        .predictedFeatureName == "digit")
  }

  /// Image outputs stay images (issue 35, part 6): a BGR image and a GRAYSCALE mask, of the source's
  /// size, in both formats (an ML Program from iOS 16, specification 7, where FeatureTypes.proto allows
  /// them); an ML Program for iOS 15 is refused rather than written with arrays.
  @Test func imageOutputsStayImages() throws {
    let source = Self.url("image_to_image")
    let expected: [CoreMLModelSpec.Feature.Kind] = [
      .image(width: 8, height: 8, colorSpace: "BGR"), .image(width: 8, height: 8, colorSpace: "GRAYSCALE"),
    ]
    #expect(try CoreMLSpecReader.read(contentsOf: source).outputs.map(\.kind) == expected)
    for format in [ModelFormat.neuralNetwork, .mlProgram] {
      let converted = try Converter.convert(modelAt: source, options: ConversionOptions(format: format))
      #expect(converted.summary.outputs.map(\.type.kind) == ["image", "image"], "\(format)")
      let output = try Fixtures.temporaryDirectory().appendingPathComponent("styled." + format.fileExtension)
      try converted.write(to: output)
      let spec = try CoreMLSpecReader.read(contentsOf: output)
      #expect(spec.outputs.map(\.name) == ["styled", "mask"])
      #expect(spec.outputs.map(\.kind) == expected, "\(format)")
      #expect(spec.specificationVersion == (format == .mlProgram ? 7 : 1))
      let report = try ParityVerifier.verify(
        source: source, converted: output, options: VerificationOptions(samples: 3))
      #expect(
        report.passed && report.interface?.passed == true,
        "\(format): \(Self.describe(report)) \(report.interface?.differences ?? [])")
    }
    var old = ConversionOptions(format: .mlProgram)
    old.target = DeploymentTarget.parse("iOS15")
    #expect {
      _ = try Converter.convert(modelAt: source, options: old)
    } throws: { error in
      guard case .targetTooOld(_, let needs, _)? = error as? CoreMLWriterError else { return false }
      return needs == 7
    }
  }

  /// An ML Program in float16, and NN -> ML Program -> NN: each verifies against the original.
  @Test(arguments: convertible)
  func roundTripVerifiesAgainstTheOriginal(_ name: String) throws {
    let source = Self.url(name)
    let half = try Self.convert(source, to: .mlProgram, precision: .float16, name: "half")
    #expect(try CoreMLSpecReader.read(contentsOf: half).usesFloat16)
    let halfReport = try ParityVerifier.verify(
      source: source, converted: half, options: VerificationOptions(samples: 8))
    #expect(halfReport.passed, "\(name) float16: \(Self.describe(halfReport))")

    let program = try Self.convert(source, to: .mlProgram, name: "program")
    // Recurrent layers MIL computes exactly are its own operations (a classic GRU's reset-before formula is not).
    let types = Set(try CoreMLSpecReader.read(contentsOf: program).program?.operations.map(\.type) ?? [])
    let recurrent = ["gru_text": "", "lstm_text": "lstm", "recurrent_stack": "rnn lstm"][name, default: ""].split(
      separator: " "
    ).map(String.init)
    #expect(recurrent.allSatisfy(types.contains), "\(name): \(types.sorted())")
    let back = try Self.convert(program, to: .neuralNetwork, name: "back")
    let report = try ParityVerifier.verify(source: source, converted: back, options: VerificationOptions(samples: 8))
    #expect(
      report.passed, "\(name) NN -> ML Program -> NN: \(Self.describe(report)) \(report.interface?.differences ?? [])")
  }

  /// An LSTM whose description declares its final cell state: the converted model keeps `lstm_c_out` as
  /// an output, in place, computed (Core ML's LSTM layer's third output; MIL lstm's `output_cell`).
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func cellStateOutputStays(_ format: ModelFormat) throws {
    let source = Self.url("lstm_cell_state")
    let output = try Self.convert(source, to: format)
    let written = try CoreMLSpecReader.read(contentsOf: output)
    #expect(written.outputs.map(\.name) == ["scores", "lstm_h_out", "lstm_c_out"])
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 8))
    #expect(report.outputs.map(\.name).contains("lstm_c_out"))
    #expect(
      report.outputs.allSatisfy(\.passed) && report.layers.allSatisfy(\.passed), "\(format): \(Self.describe(report))")
    if format == .mlProgram {
      #expect(written.program?.operations.contains { $0.type == "lstm" } == true)
    }
  }

  /// A state input is the recurrent layer's initial state whether optional or required (Core ML reads a
  /// missing optional one as zeros); an optional input with a default other than zero is refused.
  @Test func stateInputsAreTheInitialStates() throws {
    var spec = try CoreMLSpecReader.read(contentsOf: Self.url("gru_text"))
    spec.inputs[1].isOptional = false
    let required = try CoreMLGraphImporter.importModel(spec, path: "gru_text.mlmodel")
    #expect(required.graph.inputs.map { required.graph[$0].isOptional } == [false, false])
    #expect(
      required.graph.nodes.contains { node in
        guard case .recurrent = node.operation else { return false }
        return node.inputs.count == 2
      })
    spec.inputs[1].isOptional = true
    spec.inputs[1].defaultValue = 0.5
    #expect {
      _ = try CoreMLGraphImporter.importModel(spec, path: "gru_text.mlmodel")
    } throws: { error in
      guard case CoreMLReaderError.invalidNetwork(_, let detail) = error else { return false }
      return detail.contains("gru_h_in") && detail.contains("0.5")
    }
  }

  /// The source side, and each converted model as verify reads it back: our reader and runtime reproduce
  /// the outputs numpy computed from the same weights in `make_legacy_coreml.py` (float32 error); the
  /// recurrent fixtures' samples leave the optional states out (zeros) or give them.
  @Test(
    arguments: ["gray_cnn", "gru_text", "lstm_cell_state", "top_left_conv"].flatMap { name in
      [nil, ModelFormat.neuralNetwork, .mlProgram].map { (name, $0) }
    })
  func matchesNumpyForwardPass(_ name: String, _ format: ModelFormat?) throws {
    struct Reference: Decodable {
      struct Sample: Decodable {
        var inputs: [String: [Double]]
        var outputs: [String: [Double]]
      }
      var computedBy: String
      var samples: [Sample]
    }
    let reference = try JSONDecoder().decode(
      Reference.self, from: Data(contentsOf: Self.folder.appendingPathComponent(name + ".reference.json")))
    let withStates = ["gru_text": 3, "lstm_cell_state": 3][name] ?? 0
    #expect(reference.computedBy == "numpy" && reference.samples.count == 3 + withStates)
    #expect(reference.samples.filter { $0.inputs.count > 1 }.count == withStates)
    let url = try format.map { try Self.convert(Self.url(name), to: $0) } ?? Self.url(name)
    let model = try CoreMLGraphImporter.importModel(contentsOf: url)
    let interpreter = Interpreter(graph: model.graph)
    let outputNames = model.graph.outputs.map { model.graph[$0].name }
    for sample in reference.samples {
      // Inputs the sample does not give (the optional state) are zeros, as in Core ML.
      let inputs = model.inputs.map { input in
        Tensor(
          shape: input.shape,
          values: sample.inputs[input.name].map { $0.map(Float.init) }
            ?? [Float](repeating: 0, count: input.shape.reduce(1, *)))
      }
      let results = interpreter.run(inputs)
      for (expectedName, expected) in sample.outputs {
        let index = try #require(
          outputNames.firstIndex(of: expectedName), "\(name): no output \(expectedName) in \(outputNames)")
        let actual = results[index].values
        #expect(actual.count == expected.count)
        let worst = zip(actual, expected).map { abs(Double($0) - $1) - (1e-6 + 1e-4 * abs($1)) }.max() ?? 0
        #expect(worst <= 0, "\(name) \(expectedName): beyond atol 1e-6 + rtol 1e-4 by \(worst)")
      }
    }
  }
}
