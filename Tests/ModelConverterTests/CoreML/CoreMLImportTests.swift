import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelFormats
import ReferenceRuntime
import TestSupport
import Testing

/// The Core ML reader, checked against files written by coremltools and by our own writer: both, run by
/// the reference runtime, reproduce the outputs real Keras saved.
@Suite struct CoreMLImportTests {
  static let golden = Fixtures.url("coremltools")

  /// Golden models converted by coremltools 9 with float32 or float16 weights.
  static let goldenModels = [
    "activations", "batchnorm", "dense_classifier", "depthwise_separable", "digits_cnn", "pooling", "reshape_ops",
    "rgb_classifier", "rgb_classifier_fp16", "sequential_plain", "conv2d_transpose", "conv2d_transpose_output_padding",
    "layer_norm", "layer_norm_image", "unit_norm", "time_distributed", "nd_layers",
  ]

  static func goldenSource(_ name: String) throws -> URL {
    let reference = try HDF5File(path: golden.appendingPathComponent(name + ".reference.h5").path)
    let source = try #require(try reference.root.stringAttribute("source"))
    return Fixtures.root.appendingPathComponent(source)
  }

  static func verify(golden name: String, options: VerificationOptions = VerificationOptions(samples: 4)) throws
    -> ParityReport
  {
    var options = options
    options.reference = golden.appendingPathComponent(name + ".reference.h5")
    // The names make_coreml_golden.py gave coremltools.
    (options.inputNames, options.outputNames) = try Fixtures.coremltoolsNames(
      golden.appendingPathComponent(name + ".mlmodel"))
    return try ParityVerifier.verify(
      source: goldenSource(name), converted: golden.appendingPathComponent(name + ".mlmodel"), options: options)
  }

  @Test(arguments: goldenModels)
  func coremltoolsFileReproducesKerasOutputs(_ name: String) throws {
    let report = try Self.verify(golden: name)
    let failures = report.outputs.filter { !$0.passed }.map {
      "\($0.name) vs \($0.comparedWith): max abs \($0.maxAbsoluteError)"
    }
    #expect(
      report.passed,
      "\(name): \(failures) \(report.classifier.map { "top-1 \($0.top1Agreement), labels \(String(describing: $0.labelsMatch))" } ?? "")"
    )
    // The comparison with real Keras really ran on every reference sample.
    #expect(
      report.outputs.contains { $0.inputs == "reference" && $0.comparedWith == .referenceOutputs && $0.elements > 0 })
  }

  /// A coremltools file with the layers it emits for sequence tensors (batchedMatmul, expandDims, tile,
  /// broadcast min/max, transposes, reductions), checked against the saved Keras outputs directly: its
  /// Keras source uses layers the Keras reader does not read yet.
  @Test func ndLayersReproduceKerasOutputs() throws {
    let spec = try CoreMLSpecReader.read(contentsOf: Self.golden.appendingPathComponent("nd_layers.mlmodel"))
    #expect(
      Set(spec.layers.map(\.kind)).isSuperset(of: [
        "batchedMatmul", "expandDims", "tile", "reduceMean", "minBroadcastable", "transpose",
      ]))
    let model = try CoreMLGraphImporter.importModel(spec, path: "nd_layers.mlmodel")
    let reference = try HDF5File(path: Self.golden.appendingPathComponent("nd_layers.reference.h5").path)
    let inputs = try reference.root.floatDataset("inputs/0")
    let outputs = try reference.root.floatDataset("outputs/0")
    let (inSize, outSize) = (inputs.shape.dropFirst().reduce(1, *), outputs.shape.dropFirst().reduce(1, *))
    let interpreter = Interpreter(graph: model.graph)
    for sample in 0..<inputs.shape[0] {
      let input = Tensor(
        shape: model.inputs[0].shape, values: Array(inputs.values[sample * inSize..<(sample + 1) * inSize]))
      let actual = interpreter.run([input])[0].values
      let expected = outputs.values[sample * outSize..<(sample + 1) * outSize]
      #expect(actual.count == outSize)
      let worst = zip(actual, expected).map { abs($0 - $1) - (1e-5 + 1e-3 * abs($1)) }.max() ?? 0
      #expect(worst <= 0, "sample \(sample): beyond atol 1e-5 + rtol 1e-3 by \(worst)")
    }
  }

  @Test func goldenFilesUseTheNewerLayersAndMappings() throws {
    let spec = try CoreMLSpecReader.read(contentsOf: Self.golden.appendingPathComponent("rgb_classifier.mlmodel"))
    #expect(spec.exactArrayMapping && spec.rank4ImageMapping)
    #expect(Set(spec.layers.map(\.kind)).isSuperset(of: ["transpose", "reshapeStatic", "softmaxND", "innerProduct"]))
    #expect(spec.inputs.first?.kind == .image(width: 16, height: 16, colorSpace: "BGR"))
    #expect(spec.stringClassLabels == ["cat", "dog", "bird", "fish", "frog"])
    let fp16 = try CoreMLSpecReader.read(contentsOf: Self.golden.appendingPathComponent("rgb_classifier_fp16.mlmodel"))
    #expect(fp16.layers.contains { $0.usesFloat16 })
  }

  /// The importer's image input: its colour space and the scaler as one `ImagePreprocessing`, whose biases
  /// come back in the network's channel order.
  @Test func imageInputIsOnePreprocessing() throws {
    let model = try CoreMLGraphImporter.importModel(
      contentsOf: Self.golden.appendingPathComponent("rgb_classifier.mlmodel"))
    let input = try #require(model.inputs.first)
    let image = try #require(input.image)
    #expect(input.colorSpace == .bgr && image.isBGR && image.colorSpace(channels: 3) == .bgr)
    #expect(input.networkBiases == [image.blueBias, image.greenBias, image.redBias])
    #expect(
      image == ImagePreprocessing(colorSpace: .bgr, scale: image.scale, networkBiases: image.networkBiases(channels: 3))
    )
  }

  /// A scaler given by colour space and network-order biases is the same type users give by name.
  @Test func imagePreprocessingFromNetworkOrderBiases() {
    let bgr = ImagePreprocessing(colorSpace: .bgr, scale: 0.5, networkBiases: [1, 2, 3])
    #expect(bgr == ImagePreprocessing(scale: 0.5, redBias: 3, greenBias: 2, blueBias: 1, isBGR: true))
    #expect(bgr.colorSpace(channels: 3) == .bgr && bgr.networkBiases(channels: 3) == [1, 2, 3])
    let rgb = ImagePreprocessing(colorSpace: .rgb, scale: 1, networkBiases: [1, 2, 3])
    #expect(rgb == ImagePreprocessing(redBias: 1, greenBias: 2, blueBias: 3) && rgb.colorSpace(channels: 3) == .rgb)
    let gray = ImagePreprocessing(colorSpace: .grayscale, scale: 1 / 255, networkBiases: [4])
    #expect(gray == ImagePreprocessing(scale: 1 / 255, grayBias: 4) && gray.networkBiases(channels: 1) == [4])
    #expect(
      bgr.colorSpace(channels: 1) == .grayscale && ImageColorSpace.grayscale.channels == 1
        && ImageColorSpace.rgb.channels == 3)
  }

  @Test(arguments: [("rgb_classifier_linear8", 8), ("rgb_classifier_lut4", 4)])
  func quantizedWeightsDequantizeAsCoremltoolsDoes(_ name: String, bits: Int) throws {
    let spec = try CoreMLSpecReader.read(contentsOf: Self.golden.appendingPathComponent(name + ".mlmodel"))
    let reference = try HDF5File(path: Self.golden.appendingPathComponent(name + ".reference.h5").path)
    let dequantized = try #require(reference.root.group("dequantized"))
    var checked = 0
    for index in dequantized.childNames() {
      let group = try #require(dequantized.group(index))
      let layerName = try #require(try group.stringAttribute("layer"))
      let layer = try #require(spec.layer(named: layerName))
      #expect(layer.quantizationBits == bits)
      for field in group.childNames() {
        let expected = try group.floatDataset(field).values
        let actual = try #require(layer.namedWeights[field])
        #expect(actual.count >= expected.count)
        let worst = zip(actual, expected).map { abs($0 - $1) }.max() ?? 0
        #expect(
          worst <= 1e-6 * (expected.map(abs).max() ?? 1),
          "\(name) \(layerName).\(field): differs from coremltools by \(worst)")
        checked += 1
      }
    }
    #expect(checked >= 4)
  }

  @Test(arguments: ["rgb_classifier_linear8", "rgb_classifier_lut4"])
  func quantizedModelsKeepTheirPredictions(_ name: String) throws {
    // Quantization moves the outputs beyond the float32 element rule, but not beyond the default for
    // quantized weights (a relative RMS error bound from the bit width), nor the predicted labels.
    let strict = try Self.verify(
      golden: name, options: VerificationOptions(samples: 4, absoluteTolerance: 1e-5, relativeTolerance: 1e-3))
    #expect(!strict.passed, "\(name): quantized weights should not match float Keras at atol 1e-5")
    let defaults = try Self.verify(golden: name, options: VerificationOptions(samples: 4))
    #expect(defaults.passed)
    #expect(defaults.maximumRelativeRMSError != nil)
    #expect(defaults.toleranceBasis == .quantizedWeights)
    #expect(defaults.classifier?.top1Agreement == 1)
  }

  @Test(arguments: Fixtures.models)
  func ourConversionReproducesKerasOutputs(_ model: String) throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let source = Fixtures.url(model + ".h5")
    let output = directory.appendingPathComponent("model.mlmodel")
    try KerasConverter.convert(modelAt: source).write(to: output)
    let report = try ParityVerifier.verify(
      source: source, converted: output,
      options: VerificationOptions(samples: 2, reference: Fixtures.url(model + ".reference.h5")))
    let failures = report.outputs.filter { !$0.passed }.map {
      "\($0.name) [\($0.inputs)] vs \($0.comparedWith): max abs \($0.maxAbsoluteError)"
    }
    #expect(
      report.passed,
      "\(model): \(failures) \(report.violations) \(report.firstMismatch.map { "first mismatch \($0.sourceLayer)" } ?? "")"
    )
  }

  /// The same as ML Programs (float32), layer by layer: values whose shape both layouts fit (a `[1, C, H, W]`
  /// blob with C, H and W alike, as pooling's `avgpool3_valid` [3, 3, 3]) are compared in the layout that
  /// computed them, not guessed (they failed verify before).
  @Test(arguments: Fixtures.models)
  func ourProgramReproducesKerasOutputsLayerByLayer(_ model: String) throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let source = Fixtures.url(model + ".h5")
    let output = directory.appendingPathComponent("model.mlpackage")
    try Converter.convert(modelAt: source, options: ConversionOptions(format: .mlProgram, precision: .float32)).write(
      to: output)
    let report = try ParityVerifier.verify(
      source: source, converted: output,
      options: VerificationOptions(samples: 2, reference: Fixtures.url(model + ".reference.h5")))
    #expect(
      report.passed,
      "\(model): \(report.outputs.filter { !$0.passed }.map(\.name)) \(report.firstMismatch.map { "first mismatch \($0.sourceLayer)" } ?? "")"
    )
  }

  @Test func mlpackageHoldingANeuralNetworkIsRead() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let package = directory.appendingPathComponent("Digits.mlpackage")
    let bytes = [UInt8](try Data(contentsOf: Self.golden.appendingPathComponent("digits_cnn.mlmodel")))
    try ModelPackage.write(model: bytes, weights: nil, to: package)
    let model = try CoreMLGraphImporter.importModel(contentsOf: package)
    #expect(model.classLabels == (0..<10).map(String.init))
  }

  /// coremltools' ML Program of the same model (computing in float16, coremltools' default) is read and
  /// reproduces the saved Keras outputs within the float16 tolerance.
  @Test func mlProgramIsReadAndReproducesKeras() throws {
    let model = try CoreMLGraphImporter.importModel(
      contentsOf: Self.golden.appendingPathComponent("sequential_plain.mlpackage"))
    #expect(model.spec.modelType == "mlProgram" && model.spec.usesFloat16)
    let limit = try #require(VerificationTolerance.defaults(for: model.spec).maximumRelativeRMS)
    let reference = try HDF5File(path: Self.golden.appendingPathComponent("sequential_plain.reference.h5").path)
    let inputs = try reference.root.floatDataset("inputs/0")
    let outputs = try reference.root.floatDataset("outputs/0")
    let (inSize, outSize) = (inputs.shape.dropFirst().reduce(1, *), outputs.shape.dropFirst().reduce(1, *))
    let interpreter = Interpreter(graph: model.graph)
    var noise = 0.0
    var signal = 0.0
    for sample in 0..<inputs.shape[0] {
      let input = Tensor(
        shape: model.inputs[0].shape, values: Array(inputs.values[sample * inSize..<(sample + 1) * inSize]))
      let actual = interpreter.run([input])[0].values
      let expected = outputs.values[sample * outSize..<(sample + 1) * outSize]
      #expect(actual.count == outSize)
      for (a, e) in zip(actual, expected) {
        noise += Double(a - e) * Double(a - e)
        signal += Double(e) * Double(e)
      }
    }
    #expect(noise <= Double(limit * limit) * max(signal, 1))
  }

  /// Our own files with recurrent, embedding, deconvolution and normalization layers survive the same.
  @Test(arguments: ["text_bilstm", "bidirectional_modes", "conv2d_transpose", "layer_norm", "gru_default_variants"])
  func everyFlippedByteOfOurLayersIsAnErrorOrAModel(_ name: String) throws {
    let bytes = try KerasConverter.convert(modelAt: Fixtures.url("layers/tfkeras215/\(name).h5")).bytes
    var (refused, read) = (0, 0)
    for offset in bytes.indices where bytes.count < 6000 || offset % 7 == 0 {
      var damaged = bytes
      damaged[offset] ^= offset % 2 == 0 ? 0xA5 : 0x7F
      do {
        let spec = try CoreMLSpecReader.read(damaged, path: "damaged")
        _ = try CoreMLGraphImporter.importModel(spec, path: "damaged", sequenceLengths: ["input1": 7])
        read += 1
      } catch {
        // A clear error: the reader's own, about the model (exit 65), never another kind of failure.
        #expect(
          error is CoreMLReaderError && (error as? any KindedError)?.kind == .badModel, "offset \(offset): \(error)")
        refused += 1
      }
    }
    // Flipped bytes hit both structure (refused) and weight values (still a model).
    #expect(refused > 0 && read > 0, "\(name): \(refused) refused, \(read) read")
  }

  @Test func truncatedAndCorruptFilesGiveClearErrors() throws {
    let bytes = [UInt8](try Data(contentsOf: Self.golden.appendingPathComponent("rgb_classifier.mlmodel")))
    for cut in [bytes.count / 3, bytes.count - 7] {
      #expect(throws: CoreMLReaderError.malformed(path: "cut")) {
        try CoreMLSpecReader.read(Array(bytes.prefix(cut)), path: "cut")
      }
    }
    #expect(throws: CoreMLReaderError.malformed(path: "junk")) {
      try CoreMLSpecReader.read([0xFF, 0xFF, 0xFF, 0x0F, 0x01], path: "junk")
    }
    #expect(throws: CoreMLReaderError.unreadable(path: "/nonexistent/model.mlmodel")) {
      try CoreMLSpecReader.read(contentsOf: URL(fileURLWithPath: "/nonexistent/model.mlmodel"))
    }
  }

  @Test(arguments: ["sequential_plain", "depthwise_separable", "digits_cnn"])
  func everyFlippedByteIsAnErrorOrAModelNeverACrash(_ name: String) throws {
    let bytes = [UInt8](try Data(contentsOf: Self.golden.appendingPathComponent(name + ".mlmodel")))
    var (refused, read) = (0, 0)
    for offset in bytes.indices where bytes.count < 8000 || offset % 5 == 0 {
      var damaged = bytes
      damaged[offset] ^= offset % 2 == 0 ? 0xA5 : 0x7F
      // Either outcome is fine as long as it is a model or the reader's own error about the model.
      do {
        _ = try CoreMLGraphImporter.importModel(try CoreMLSpecReader.read(damaged, path: "damaged"), path: "damaged")
        read += 1
      } catch {
        #expect(
          error is CoreMLReaderError && (error as? any KindedError)?.kind == .badModel, "offset \(offset): \(error)")
        refused += 1
      }
    }
    #expect(refused > 0 && read > 0, "\(name): \(refused) refused, \(read) read")
  }
}
