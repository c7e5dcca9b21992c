import CoreMLCommon
import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import KerasTestSupport
import ModelConverter
import ModelIR
import TestSupport
import Testing

@testable import CoreMLNeuralNetworkWriter

/// The written bytes decode (through protoc-c) into the expected description, layers and weights.
@Suite struct CoreMLWriterTests {
  private func convert(_ model: String, _ options: ConversionOptions = ConversionOptions()) throws -> CoreMLModelSpec {
    let converted = try KerasConverter.convert(modelAt: Fixtures.url(model + ".h5"), options: options)
    return try CoreMLSpecReader.read(converted.bytes)
  }

  /// Keras `[H, W, C]` as Core ML's `[C, H, W]`.
  private func coreMLShape(_ shape: [Int]) -> [Int] { shape.count == 3 ? [shape[2], shape[0], shape[1]] : shape }

  @Test(arguments: Fixtures.models)
  func weightsEqualKerasWeightsInCoreMLLayout(model: String) throws {
    let spec = try convert(model)
    let reference = try ReferenceFile(model: model)
    let expected = try reference.coreMLWeights()
    for (layerName, weights) in expected {
      for (weightName, values) in weights {
        switch weightName {
        case "depthwise_weights":
          #expect(
            spec.layer(named: layerName + "_depthwise")?.namedWeights["weights"] == values, "\(model) \(layerName)")
        case "pointwise_weights":
          #expect(spec.layer(named: layerName)?.namedWeights["weights"] == values, "\(model) \(layerName)")
        default:
          #expect(
            spec.layer(named: layerName)?.namedWeights[weightName] == values, "\(model) \(layerName).\(weightName)")
        }
      }
    }
    #expect(
      spec.outputs.map(\.kind)
        == (try reference.outputShapes()).map { .multiArray(shape: coreMLShape($0), dataType: 65568) })
    #expect(spec.modelType == "neuralNetwork")
  }

  @Test func classifierWiringWithImageInput() throws {
    let labels = try ClassLabels.load(fromFile: Fixtures.url("tfkeras215/dense_classifier.labels.txt").path)
    let spec = try convert(
      "tfkeras215/dense_classifier",
      ConversionOptions(inputNames: ["image"], outputNames: ["probs"], classLabels: labels))
    #expect(spec.modelType == "neuralNetworkClassifier")
    #expect(spec.stringClassLabels == ["cat", "dog", "bird", "fish"])
    #expect(spec.predictedFeatureName == "classLabel")
    #expect(spec.predictedProbabilitiesName == "probs")
    #expect(spec.labelProbabilityLayerName == "probs")
    #expect(
      spec.outputs == [
        .init(name: "probs", kind: .dictionary(keyType: "string")), .init(name: "classLabel", kind: .string),
      ])
    #expect(spec.layers.last?.outputs == ["probs"])
    #expect(spec.layers.last?.kind == "softmax")
    #expect(spec.specificationVersion == 1)
  }

  @Test func teachableMachineLabelsAndIntegerLabels() throws {
    let tm = try ClassLabels.load(fromFile: Fixtures.url("tfkeras215/dense_classifier.tm_labels.txt").path)
    #expect(tm == .strings(["cat", "dog", "bird", "fish"]))
    let digits = try ClassLabels.load(fromFile: Fixtures.digits.appendingPathComponent("labels.txt").path)
    #expect(digits == .integers(Array(0...9)))
    let converted = try KerasConverter.convert(
      modelAt: Fixtures.digits.appendingPathComponent("digits_cnn.h5"),
      options: ConversionOptions(
        inputNames: ["image"], imageInputNames: ["image"], classLabels: digits, imageScale: 1.0 / 255))
    let spec = try CoreMLSpecReader.read(converted.bytes)
    #expect(spec.int64ClassLabels == Array(0...9))
    #expect(spec.inputs == [.init(name: "image", kind: .image(width: 8, height: 8, colorSpace: "GRAYSCALE"))])
    #expect(spec.outputs.last == .init(name: "classLabel", kind: .int64))
    #expect(
      spec.preprocessing == [
        .init(featureName: "image", channelScale: 1.0 / 255, redBias: 0, greenBias: 0, blueBias: 0, grayBias: 0)
      ])
  }

  @Test func colorImageInputWithBiasesAndBGR() throws {
    let spec = try convert(
      "keras3/conv_variants",
      ConversionOptions(inputNames: ["img"], imageInputNames: [], imageScale: 1))
    #expect(spec.inputs.first?.kind == .multiArray(shape: [4, 12, 12], dataType: 65568))
    let rgb = try convert(
      "tfkeras215/depthwise_separable",
      ConversionOptions(
        inputNames: ["img"], imageInputNames: ["img"], imageScale: 1 / 127.5, redBias: -1, greenBias: -2, blueBias: -3,
        isBGR: true))
    #expect(rgb.inputs.first?.kind == .image(width: 10, height: 10, colorSpace: "BGR"))
    #expect(
      rgb.preprocessing.first
        == .init(featureName: "img", channelScale: 1 / 127.5, redBias: -1, greenBias: -2, blueBias: -3, grayBias: 0))
  }

  @Test func labelCountMustMatchProbabilityWidth() {
    #expect(throws: CoreMLWriterError.labelCountMismatch(labels: 3, output: "output1", width: 4)) {
      try convert("tfkeras215/dense_classifier", ConversionOptions(classLabels: .strings(["a", "b", "c"])))
    }
  }

  @Test func unknownImageInputName() {
    #expect(throws: CoreMLWriterError.unknownFeature(kind: "input", name: "photo", available: ["input1"])) {
      try convert("tfkeras215/dense_classifier", ConversionOptions(imageInputNames: ["photo"]))
    }
  }

  @Test func convolutionParametersFollowTheKerasConfig() throws {
    // conv_variants (Samples/make_fixtures.py): same/relu, valid/stride 2/no bias, dilation 2, groups 2, stride 2 same.
    let spec = try convert("tfkeras215/conv_variants")
    let convolutions = spec.layers.filter { $0.kind == "convolution" }
    #expect(convolutions.count == 5)
    #expect(convolutions.map { if case .same? = $0.convolution?.padding { 1 } else { 0 } } == [1, 0, 1, 0, 1])
    #expect(convolutions[1].convolution?.stride == [2, 2])
    #expect(convolutions[1].convolution?.hasBias == false)
    #expect(convolutions[2].convolution?.dilationFactor == [2, 2])
    #expect(convolutions[2].convolution?.kernelSize == [3, 2])
    #expect(convolutions[3].convolution?.nGroups == 2)
    #expect(convolutions[3].convolution?.kernelChannels == 2)
    #expect(spec.layers.contains { $0.kind == "activation.ReLU" })
    #expect(spec.layers.contains { $0.kind == "activation.tanh" })
  }

  @Test func activationsMapToCoreMLActivations() throws {
    // The activations fixture (Samples/make_fixtures.py): LeakyReLU(0.3), ELU(0.7), ThresholdedReLU(0.4), ReLU(max_value=6), ...
    let spec = try convert("tfkeras215/activations")
    let kinds = Set(spec.layers.map(\.kind))
    for kind in [
      "activation.ReLU", "activation.sigmoid", "activation.tanh", "activation.softplus", "activation.softsign",
      "activation.ELU", "softmax", "unary", "multiply",
    ] {
      #expect(kinds.contains(kind), "\(kind)")
    }
    #expect(spec.layers.contains { $0.kind == "activation.leakyReLU" && $0.activation == .leakyReLU(alpha: 0.3) })
    #expect(spec.layers.contains { $0.kind == "activation.ELU" && $0.activation == .elu(alpha: 0.7) })
    #expect(
      spec.layers.contains { $0.kind == "activation.thresholdedReLU" && $0.activation == .thresholdedReLU(alpha: 0.4) })
    #expect(spec.layers.contains { $0.kind == "unary" && $0.unary?.alpha == -6 })
    #expect(
      spec.layers.contains { $0.kind == "activation.sigmoidHard" && $0.activation?.recurrentAlphaBeta?.alpha == 0.2 })
    // GELU from classic layers (abs, inverse, exp, multiply, linear, add): no specification-4 gelu layer,
    // which Core ML refuses in a rank-5 network.
    #expect(!kinds.contains("gelu"))
    #expect(spec.layers.contains { $0.kind == "unary" && $0.unary?.type.rawValue == 6 && $0.name.contains("__gelu") })
    #expect(spec.specificationVersion == 1)
    // Keras 3's hard_sigmoid is relu6(x + 3) / 6.
    let keras3 = try convert("keras3/activations")
    #expect(
      keras3.layers.contains {
        $0.kind == "activation.sigmoidHard" && $0.activation?.recurrentAlphaBeta?.alpha == Float(1.0 / 6)
      })
  }

  @Test func flattenKeepsKerasElementOrder() throws {
    let spec = try convert("tfkeras215/dense_classifier")
    #expect(spec.layers.first { $0.kind == "flatten" }?.flatten?.mode.rawValue == 1)
  }

  @Test func float16WeightsAreHalfPrecisionKerasWeights() throws {
    let spec = try convert("tfkeras215/conv_variants", ConversionOptions(precision: .float16))
    #expect(spec.specificationVersion == 2)
    let expected = try ReferenceFile(model: "tfkeras215/conv_variants").coreMLWeights()
    for (layer, weights) in expected {
      let written = try #require(spec.layer(named: layer))
      #expect(written.usesFloat16)
      #expect(written.namedWeights["weights"] == weights["weights"]!.map { Float(Float16($0)) })
    }
  }

  /// A float16 network stores a layer whose weights float16 cannot hold (70 000 > 65 504) in float32, all
  /// of that layer's weights alike (Core ML reads each layer's weights in the form they are stored); the
  /// other layers stay float16 (issue 35).
  @Test func weightsBeyondFloat16KeepTheirLayerInFloat32() throws {
    var builder = GraphBuilder()
    let input = try builder.addInput(name: "x", type: TensorType([2]))
    let small = try builder.add(
      .dense(Dense(kernel: Constant(shape: [2, 2], values: [1, 2, 3, 4]), bias: nil)), name: "small", inputs: [input])
    let output = try builder.add(
      .dense(Dense(kernel: Constant(shape: [2, 1], values: [1, 70000]), bias: Constant(shape: [1], values: [0.5]))),
      name: "big", inputs: [small])
    let graph = builder.build(outputs: [output])
    let spec = try CoreMLSpecReader.read(
      try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions(precision: .float16)), path: "mixed.mlmodel")
    let big = try #require(spec.layer(named: "big"))
    let smallLayer = try #require(spec.layer(named: "small"))
    #expect(!big.usesFloat16 && big.namedWeights["weights"] == [1, 70000] && big.namedWeights["bias"] == [0.5])
    #expect(smallLayer.usesFloat16)
  }

  @Test func metadataRecordsConverterAndSource() throws {
    let spec = try convert(
      "legacy224/dense_classifier",
      ConversionOptions(author: "Ada", license: "MIT", shortDescription: "Pets", version: "1.2"))
    #expect(spec.author == "Ada")
    #expect(spec.license == "MIT")
    #expect(spec.shortDescription == "Pets")
    #expect(spec.version == "1.2")
    #expect(spec.userDefined["modelconv.source_keras_version"] == "2.2.4")
    #expect(spec.userDefined["modelconv.version"] == ModelConverterVersion.current)
  }

  @Test func shapingLayers() throws {
    let spec = try convert("tfkeras215/reshape_ops")
    // ZeroPadding2D(((1, 2), (0, 1))) and Cropping2D(((1, 0), (2, 1))) in Samples/make_fixtures.py.
    #expect(spec.layers.first { $0.kind == "padding" }?.padding?.paddingAmounts == [1, 2, 0, 1])
    #expect(spec.layers.first { $0.kind == "crop" }?.crop?.cropAmounts == [1, 0, 2, 1])
    let upsamples = spec.layers.filter { $0.kind == "upsample" }
    #expect(upsamples.map { $0.upsample?.mode.rawValue } == [0, 1])
    #expect(upsamples[1].upsample?.linearUpsampleMode.rawValue == 2)
    // Permute((2, 1, 3)) swaps H and W: Core ML axes [Seq, C, W, H].
    #expect(spec.layers.first { $0.kind == "permute" }?.permute?.axis == [0, 1, 3, 2])
  }

  @Test func poolingExcludesPaddingAndGlobalPoolingIsGlobal() throws {
    let spec = try convert("tfkeras215/pooling")
    let pools = spec.layers.filter { $0.kind == "pooling" }
    #expect(pools.allSatisfy { $0.pooling?.avgPoolExcludePadding == true })
    #expect(pools.contains { $0.pooling?.globalPooling == true })
    #expect(pools.contains { $0.pooling?.padding == .same && $0.pooling?.type.rawValue == 0 })
  }
}

/// A classic network larger than one protobuf message may be is refused before anything is written,
/// and a file that large is refused by the reader before it is read.
@Suite struct SpecificationSizeLimitTests {
  private func graph() throws -> Graph {
    var builder = GraphBuilder()
    let input = try builder.addInput(name: "x", type: TensorType([100]))
    let kernel = Constant(shape: [100, 10], values: (0..<1000).map { Float($0) / 1000 })
    let output = try builder.add(.dense(Dense(kernel: kernel, bias: nil)), name: "dense", inputs: [input])
    return builder.build(outputs: [output])
  }

  @Test func theLimitIsProtobufsSignedLength() {
    #expect(CoreMLLimits.maximumSpecificationBytes == 2_147_483_647)
  }

  @Test func aSpecificationOverTheLimitIsRefusedWithItsSize() throws {
    let options = CoreMLWriterOptions(precision: .float32)
    let size = try NeuralNetworkWriter().encode(graph(), options: options).specification.count
    #expect(size > 4000)  // 1000 float32 weights
    // Exactly at the limit it is written; one byte under, refused, naming float16 as the way out.
    #expect(
      try NeuralNetworkWriter(maximumSpecificationBytes: size).encode(graph(), options: options).specification.count
        == size)
    #expect(throws: CoreMLWriterError.specificationTooLarge(bytes: size, limit: size - 1, float32Weights: true)) {
      try NeuralNetworkWriter(maximumSpecificationBytes: size - 1).encode(graph(), options: options)
    }
    // float16 weights halve the weights' bytes and fit.
    let half = try NeuralNetworkWriter(maximumSpecificationBytes: size - 1).encode(
      graph(), options: CoreMLWriterOptions(precision: .float16))
    #expect(half.specification.count < size - 1900)
    let message = CoreMLWriterError.specificationTooLarge(bytes: size, limit: size - 1, float32Weights: false)
      .description
    #expect(message.contains("ML Program") && !message.contains("float16") && !message.contains("--"))
  }

  @Test func theReaderRefusesAFileOverTheLimitBeforeReadingIt() throws {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("huge-\(UUID().uuidString).mlmodel")
    #expect(FileManager.default.createFile(atPath: url.path, contents: nil))
    defer { try? FileManager.default.removeItem(at: url) }
    // A sparse file: its size is past the limit, no disk blocks are used.
    let handle = try FileHandle(forWritingTo: url)
    try handle.truncate(atOffset: UInt64(CoreMLLimits.maximumSpecificationBytes) + 1)
    try handle.close()
    #expect {
      try CoreMLSpecReader.read(contentsOf: url)
    } throws: { error in
      guard case CoreMLReaderError.invalidField(url.path, "Model", let detail) = error else { return false }
      return detail.contains("2147483648 bytes")
    }
    #expect(throws: CoreMLReaderError.self) { try CoreMLModelOutline.read(contentsOf: url) }
  }
}
