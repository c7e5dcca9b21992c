import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ONNXFormat
import TestSupport
import Testing

/// ONNX models as a conversion source: small PyTorch exports made by `Samples/make_onnx_fixtures.py`
/// and tf2onnx exports of Keras fixtures (`make_onnx_tf2onnx.py`), with onnxruntime's outputs saved beside them. Each converts, and
/// `verify` checks the conversion against the source and both against onnxruntime's outputs (the
/// reference file holds the inputs as the model declares them, NCHW).
@Suite struct ONNXSourceTests {
  static func url(_ name: String) -> URL { Fixtures.url("onnx/\(name).onnx") }
  static func reference(_ name: String) -> URL { Fixtures.url("onnx/\(name).reference.h5") }

  static func convert(_ name: String, to format: ModelFormat, options: ConversionOptions = ConversionOptions()) throws
    -> URL
  {
    var options = options
    options.format = format
    let model = try Converter.convert(modelAt: url(name), options: options)
    let output = try Fixtures.temporaryDirectory().appendingPathComponent(
      (name as NSString).lastPathComponent + "." + format.fileExtension)
    try model.write(to: output)
    return output
  }

  /// Every fixture and format that Core ML can express, verified against the source and onnxruntime.
  static let conversions: [(String, ModelFormat)] = [
    ("tiny_cnn", .mlProgram), ("tiny_cnn", .neuralNetwork), ("tiny_cnn_opset18", .mlProgram),
    ("tiny_cnn_opset18", .neuralNetwork),
    ("mobile_block", .mlProgram), ("mobile_block_opset18", .mlProgram), ("mlp", .mlProgram), ("mlp", .neuralNetwork),
    ("tf2onnx/dense_classifier", .mlProgram), ("tf2onnx/dense_classifier", .neuralNetwork),
    // tf2onnx exports of the Keras layer fixtures (make_onnx_tf2onnx.py; the saved outputs match Keras).
    ("tf2onnx/activations", .mlProgram), ("tf2onnx/activations", .neuralNetwork), ("tf2onnx/batchnorm", .mlProgram),
    ("tf2onnx/batchnorm", .neuralNetwork),
    ("tf2onnx/depthwise_separable", .mlProgram), ("tf2onnx/depthwise_separable", .neuralNetwork),
    ("tf2onnx/nested", .mlProgram),
    ("tf2onnx/nested", .neuralNetwork), ("tf2onnx/reshape_ops", .mlProgram), ("tf2onnx/reshape_ops", .neuralNetwork),
    ("tf2onnx/sequential_plain", .mlProgram), ("tf2onnx/sequential_plain", .neuralNetwork),
    ("convnext_block", .mlProgram), ("convnext_block", .neuralNetwork), ("convnext_block_opset18", .mlProgram),
    ("convnext_block_opset18", .neuralNetwork), ("shuffle_block", .mlProgram), ("shuffle_block", .neuralNetwork),
    // A transformer (shifted windows, multi-head attention): the classic format is a rank-N network.
    ("tiny_vit", .mlProgram), ("tiny_vit", .neuralNetwork),
    // LSTMs whose final hidden and cell states (Y_h, Y_c) are outputs: forward over a batch of 2 (its
    // sequence Y [5, 1, 2, 4] has no classic form: refused), bidirectional, reverse (make_onnx_recurrent_states.py).
    ("recurrent/lstm_states", .mlProgram), ("recurrent/bilstm_states", .mlProgram),
    ("recurrent/bilstm_states", .neuralNetwork), ("recurrent/lstm_reverse_cell", .mlProgram),
    ("recurrent/lstm_reverse_cell", .neuralNetwork),
    // If on a size test, and a simple RNN as a Loop of 5 iterations with a scan output (make_onnx_control_flow.py).
    ("control_flow/if_shape_test", .mlProgram), ("control_flow/if_shape_test", .neuralNetwork),
    ("control_flow/loop_rnn", .mlProgram), ("control_flow/loop_rnn", .neuralNetwork),
    // keras2onnx/onnxmltools-era forms at opset 8 (attributes where later opsets take inputs; make_onnx_old_opsets.py).
    ("old_opsets/keras2onnx_opset8", .mlProgram), ("old_opsets/keras2onnx_opset8", .neuralNetwork),
  ]

  /// A transformer as a classic network: specification 4 with `EXACT_ARRAY_MAPPING`, the products of two
  /// computed tensors as two-input `batchedMatmul` layers, the window partition as rank-6 transposes,
  /// layer norms and GELU as their own layers; the interface as the ML Program's (`[1, 3, 16, 16]` in,
  /// `[1, 5]` out).
  @Test func aTransformerIsARankNClassicNetwork() throws {
    let network = try CoreMLSpecReader.read(
      contentsOf: try Self.convert("tiny_vit", to: .neuralNetwork, options: ConversionOptions(precision: .float32)))
    #expect(network.specificationVersion == 4 && network.exactArrayMapping)
    #expect(network.inputs.map(\.kind) == [.multiArray(shape: [1, 3, 16, 16], dataType: 65568)])
    #expect(network.outputs.map(\.kind) == [.multiArray(shape: [1, 5], dataType: 65568)])
    let kinds = network.layers.map(\.kind)
    let products = network.layers.filter {
      if case .batchedMatmul = $0.parameters { return $0.inputs.count == 2 } else { return false }
    }
    #expect(products.count == 4, "\(kinds)")  // two in the windows, two in nn.MultiheadAttention
    let rank6 = network.layers.filter {
      if case .transpose(let p) = $0.parameters { return p.axes.count == 6 } else { return false }
    }
    #expect(rank6.count >= 2, "\(kinds)")
    #expect(
      kinds.filter { $0 == "layerNormalization" }.count == 4 && kinds.contains("gelu") && kinds.contains("softmaxND"),
      "\(kinds)")
  }

  @Test(arguments: conversions)
  func convertsAndMatchesOnnxruntime(_ name: String, _ format: ModelFormat) throws {
    let output = try Self.convert(name, to: format, options: ConversionOptions(precision: .float32))
    let report = try ParityVerifier.verify(
      source: Self.url(name), converted: output,
      options: VerificationOptions(samples: 4, reference: Self.reference(name)))
    #expect(
      report.passed,
      "\(name) -> \(format): \(report.firstMismatch.map { "\($0)" } ?? "") \(report.outputs.filter { !$0.passed })")
    // onnxruntime's outputs were compared, through the source as our runtime reads it and through the conversion.
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputsThroughSource && $0.passed })
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputs && $0.passed })
  }

  /// `verify` compares layer by layer by ONNX value names: every convolution, pooling and normalization
  /// of tiny_cnn (whose results the writers keep, their batch axis dropped, under the ONNX name), in both
  /// formats (an ML Program's under its MIL identifier).
  @Test(arguments: [ModelFormat.mlProgram, .neuralNetwork])
  func layersAreComparedByOnnxNames(format: ModelFormat) throws {
    let output = try Self.convert("tiny_cnn", to: format, options: ConversionOptions(precision: .float32))
    let report = try ParityVerifier.verify(
      source: Self.url("tiny_cnn"), converted: output, options: VerificationOptions(samples: 2))
    #expect(report.passed)
    let compared = Set(report.layers.map(\.sourceLayer))
    for node in [
      "/conv1/Conv_output_0", "/bn1/BatchNormalization_output_0", "/pool/MaxPool_output_0", "/depthwise/Conv_output_0",
      "/pointwise/Conv_output_0", "/res1/Conv_output_0", "/res2/Conv_output_0", "/gap/GlobalAveragePool_output_0",
    ] {
      #expect(compared.contains(node), "\(format): \(node) not compared (compared: \(compared.sorted()))")
    }
  }

  /// The converted model keeps the interface the ONNX model declares: `[1, 3, 32, 32]` in an ML Program,
  /// Core ML's `(3, 32, 32)` in a neural network; the source is recorded.
  @Test func interfaceAndProvenanceAreKept() throws {
    let program = try CoreMLSpecReader.read(contentsOf: try Self.convert("tiny_cnn", to: .mlProgram))
    #expect(program.inputs.map(\.kind) == [.multiArray(shape: [1, 3, 32, 32], dataType: 65568)])
    #expect(program.outputs.map(\.name) == ["logits"])
    #expect(
      program.userDefined["modelconv.source"] == "onnx" && program.userDefined["modelconv.source_onnx_opset"] == "13")
    #expect(program.userDefined["modelconv.source_onnx_producer"] == "pytorch 2.13.0")
    let network = try CoreMLSpecReader.read(contentsOf: try Self.convert("tiny_cnn", to: .neuralNetwork))
    #expect(network.inputs.map(\.kind) == [.multiArray(shape: [3, 32, 32], dataType: 65568)])
  }

  /// A channels-first network keeps no transpose around its convolutions in either format (the
  /// transposes the importer puts around each spatial operator cancel).
  @Test func noTransposesAroundConvolutions() throws {
    for name in ["tiny_cnn", "mobile_block"] {
      let program = try CoreMLSpecReader.read(contentsOf: try Self.convert(name, to: .mlProgram))
      let types = program.program?.operations.map(\.type) ?? []
      #expect(types.contains("conv") && !types.contains("transpose"), "\(name): \(types)")
    }
    let network = try CoreMLSpecReader.read(contentsOf: try Self.convert("tiny_cnn", to: .neuralNetwork))
    #expect(
      !network.layers.contains { $0.kind == "permute" || $0.kind == "transpose" }, "\(network.layers.map(\.kind))")
  }

  /// ConvNeXt's layer norms (reductions at opset 13, LayerNormalization at 18) and ShuffleNet's channel
  /// shuffles in the classic format: no transpose is left around the normalizations (each is a channel
  /// `reduce` and element-wise layers), the Linear layers on NHWC are 1x1 convolutions, and each of the three
  /// shuffles is one permute between two reshapes with the groups on the sequence axis.
  @Test func layerNormsAndShufflesInTheClassicFormat() throws {
    for name in ["convnext_block", "convnext_block_opset18"] {
      let network = try CoreMLSpecReader.read(
        contentsOf: try Self.convert(name, to: .neuralNetwork, options: ConversionOptions(precision: .float32)))
      let kinds = network.layers.map(\.kind)
      // Five layer norms of two channel means each; the stem and the downsampling conv, two blocks of a depthwise
      // conv and two Linears as 1x1 convs; the classifier's Gemm on the pooled vector an innerProduct.
      #expect(kinds.filter { $0 == "reduce" }.count == 10, "\(name): \(kinds)")
      #expect(
        kinds.filter { $0 == "convolution" }.count == 8 && kinds.filter { $0 == "innerProduct" }.count == 1,
        "\(name): \(kinds)")
      #expect(!kinds.contains("permute"), "\(name): \(kinds)")
    }
    let shuffle = try CoreMLSpecReader.read(
      contentsOf: try Self.convert("shuffle_block", to: .neuralNetwork, options: ConversionOptions(precision: .float32))
    )
    let permutes = shuffle.layers.filter { $0.kind == "permute" }
    #expect(
      permutes.count == 3 && permutes.allSatisfy { $0.permute?.axis == [1, 0, 2, 3] }, "\(shuffle.layers.map(\.kind))")
  }

  /// Classifier labels and an image input with PyTorch's normalization, verified with the same
  /// preprocessing applied on the source side.
  @Test func classifierWithImageInput() throws {
    var options = ConversionOptions(precision: .float32)
    options.classLabels = .strings(
      try String(contentsOf: Fixtures.url("onnx/labels_tiny_cnn.txt"), encoding: .utf8).split(separator: "\n").map(
        String.init))
    options.imageInputNames = ["input"]
    (options.imageScale, options.redBias, options.greenBias, options.blueBias) = (1 / 127.5, -1, -1, -1)
    for format in [ModelFormat.mlProgram, .neuralNetwork] {
      let output = try Self.convert("tiny_cnn", to: format, options: options)
      let spec = try CoreMLSpecReader.read(contentsOf: output)
      #expect(spec.stringClassLabels == ["cat", "dog", "bird", "fish", "frog"])
      #expect(spec.inputs.first?.kind == .image(width: 32, height: 32, colorSpace: "RGB"))
      let report = try ParityVerifier.verify(
        source: Self.url("tiny_cnn"), converted: output,
        options: VerificationOptions(
          samples: 4, reference: Self.reference("tiny_cnn"), expectedPreprocessing: options.imagePreprocessing))
      #expect(
        report.passed,
        "\(format): \(report.firstMismatch.map { "\($0)" } ?? "") \(report.outputs.filter { !$0.passed }) \(report.preprocessing)"
      )
    }
  }

  @Test func inspectDescribesTheGraph() throws {
    let inspection = try ModelInspector.inspect(contentsOf: Self.url("tiny_cnn"))
    let onnx = try #require(inspection.graphDetails)
    #expect(
      inspection.format.rawValue == "onnx" && onnx.formatVersion == 7
        && inspection.producer == .init(name: "pytorch", version: "2.13.0"))
    #expect(onnx.operatorSets.map { "\($0.domain) \($0.version)" } == ["ai.onnx 13"])
    #expect(onnx.operators.first { $0.opType == "Conv" }?.count == 5 && onnx.operators.allSatisfy(\.supported))
    #expect(onnx.declaredInputs.map(\.dimensions) == [["1", "3", "32", "32"]])
    #expect(onnx.declaredOutputs.map(\.dimensions) == [["Gemmlogits_dim_0", "5"]])
    #expect(inspection.layers.first { $0.type == "Conv" }?.outputShape == [1, 8, 32, 32])
    // The architecture in make_onnx_fixtures.py: conv1 224 + BN 32 + depthwise 80 + pointwise 144 + two 3x3 16->16 convs 2 x 2320 + fc 85.
    #expect(inspection.parameterCount == 5205 && inspection.shapesUnavailable == nil)
  }

  /// Every operator the importer has no handler for is named at once, with the opset; nothing is written.
  @Test func unsupportedOperatorsAreListed() throws {
    let model = try ONNXModelReader.read(
      contentsOf: URL(
        fileURLWithPath: "/usr/share/libonnx-testdata/data/node/test_argmax_default_axis_example/model.onnx"))
    #expect(ONNXGraphImporter.unsupportedOperators(in: model) == ["ArgMax"])
    #expect {
      _ = try ONNXGraphImporter.importGraph(model, path: "argmax.onnx")
    } throws: { error in
      guard case ONNXImportError.unsupportedOperators(_, let operators, _) = error else { return false }
      return operators == ["ArgMax"] && "\(error)".contains("argmax.onnx: 1 operator is not supported at opset")
    }
  }

  /// Files that are not ONNX models, or broken ones, get a clear error (exit 65) and no output.
  @Test func badFilesAreRefused() throws {
    let directory = try Fixtures.temporaryDirectory()
    for (name, expected) in [("not_really", "an HTML page"), ("truncated", "not a valid ONNX file")] {
      let output = directory.appendingPathComponent("out.mlpackage").path
      let result = try Modelconv.run(["convert", Self.url(name).path, "-o", output])
      #expect(result.status == 65 && result.stderr.contains(expected), "\(name): \(result.status) \(result.stderr)")
      #expect(!FileManager.default.fileExists(atPath: output))
    }
  }

  /// External data beside the model is read (offsets and lengths checked by the reader).
  @Test func externalDataConverts() throws {
    let output = try Self.convert(
      "external_data/mlp_external", to: .mlProgram, options: ConversionOptions(precision: .float32))
    let report = try ParityVerifier.verify(
      source: Self.url("external_data/mlp_external"), converted: output, options: VerificationOptions(samples: 4))
    #expect(report.passed)
    let inline = try ONNXModelReader.read(contentsOf: Self.url("mlp"))
    let external = try ONNXModelReader.read(contentsOf: Self.url("external_data/mlp_external"))
    #expect(inline.graph.initializers.map(\.storage) == external.graph.initializers.map(\.storage))
  }

  /// torchvision's normalization from the command line: a std per channel goes into the first
  /// convolution (no layer of its own), `verify` with the same options passes and with another std fails;
  /// `predict` runs the ONNX file itself with the same preprocessing and agrees with the conversion.
  @Test func imageMeanAndStdFromTheCommandLine() throws {
    let directory = try Fixtures.temporaryDirectory()
    let labels = Fixtures.url("onnx/labels_tiny_cnn.txt").path
    let normalization = ["--image-mean", "0.485,0.456,0.406", "--image-std", "0.229,0.224,0.225"]
    for ext in ["mlpackage", "mlmodel"] {
      let output = directory.appendingPathComponent("TinyCNN." + ext).path
      let converted = try Modelconv.run(
        ["convert", Self.url("tiny_cnn").path, "--image-input", "input"] + normalization + [
          "--labels-file", labels, "-o", output, "--verify",
        ])
      #expect(converted.status == 0, "\(ext): \(converted.stderr)")
      let spec = try CoreMLSpecReader.read(contentsOf: URL(fileURLWithPath: output))
      #expect(
        spec.preprocessing.first.map { abs($0.channelScale - 1 / 255) < 1e-7 } ?? (ext == "mlpackage"),
        "\(ext): the scaler takes pixel / 255")
      if ext == "mlmodel" {
        #expect(
          spec.layers.first?.kind == "convolution",
          "the std is in the first convolution: \(spec.layers.prefix(2).map(\.kind))")
      }
      let verified = try Modelconv.run(
        ["verify", Self.url("tiny_cnn").path, output] + normalization + ["--labels-file", labels])
      #expect(verified.status == 0, "\(ext): \(verified.stderr)")
      let wrong = try Modelconv.run([
        "verify", Self.url("tiny_cnn").path, output, "--image-mean", "0.485,0.456,0.406", "--image-std",
        "0.229,0.224,0.2", "--labels-file", labels,
      ])
      #expect(wrong.status == 1, "\(ext): a wrong std must fail: \(wrong.status)")
    }
    let photo = Fixtures.digits.appendingPathComponent("test_images/7/test_1395.png").path
    let direct = try Modelconv.run(
      ["predict", Self.url("tiny_cnn").path, photo] + normalization + ["--labels-file", labels, "--json"])
    let viaConversion = try Modelconv.run([
      "predict", directory.appendingPathComponent("TinyCNN.mlmodel").path, photo, "--json",
    ])
    #expect(direct.status == 0 && viaConversion.status == 0, "\(direct.stderr) \(viaConversion.stderr)")
    func top(_ json: String) -> String? {
      json.range(of: "\"label\" *: *\"[a-z]+\"", options: .regularExpression).map { String(json[$0]) }
    }
    #expect(
      top(direct.stdout) != nil && top(direct.stdout) == top(viaConversion.stdout),
      "\(direct.stdout.prefix(300)) vs \(viaConversion.stdout.prefix(300))")
  }

  /// A model newer than the operator sets the handlers know is refused, naming the opset.
  @Test func newerOpsetsAreRefused() throws {
    var model = try ONNXModelReader.read(contentsOf: Self.url("mlp"))
    model.opsetImports[""] = ONNXOperatorRegistry.newestOpset + 1
    #expect {
      _ = try ONNXGraphImporter.importGraph(model, path: "mlp.onnx")
    } throws: { error in
      "\(error)".contains("opset \(ONNXOperatorRegistry.newestOpset + 1)") && "\(error)".contains("mlp.onnx")
    }
  }
}
