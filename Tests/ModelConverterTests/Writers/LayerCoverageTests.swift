import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// Every model of `Samples/Fixtures/layers` (made by `make_layer_fixtures.py` with real Keras, as
/// tf.keras 2.15 and Keras 3 write them): converted, read back and run, it reproduces the Keras outputs; or it fails with the
/// documented error.
@Suite struct LayerCoverageTests {
  /// Models the Keras reader must refuse, with text its message must contain; every other model must
  /// convert and verify.
  static let importErrors: [String: String] = [
    "resizing_error": "Resizing belongs before the model",
    "center_crop_error": "CenterCrop belongs before the model",
    "lambda_error": "Lambda layers hold Python code",
    "custom_layer": "scale_shift (ScaleShift)",
  ]

  static let dialects = ["tfkeras215", "keras3"]

  /// `dialect/model` for every layer fixture with a reference file.
  static var models: [String] {
    dialects.flatMap { dialect -> [String] in
      let folder = Fixtures.url("layers/\(dialect)")
      let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
      return files.filter { $0.hasSuffix(".reference.h5") }.sorted().map {
        "\(dialect)/" + $0.replacingOccurrences(of: ".reference.h5", with: "")
      }
    }
  }

  static func name(of model: String) -> String { String(model.split(separator: "/").last!) }

  @Test(arguments: models)
  func layerFixture(_ model: String) throws {
    let source = Fixtures.url("layers/\(model).h5")
    let reference = Fixtures.url("layers/\(model).reference.h5")
    if let text = Self.importErrors[Self.name(of: model)] {
      do {
        _ = try KerasConverter.convert(modelAt: source)
        Issue.record("\(model): expected an import error")
      } catch let error as KerasReaderError {
        #expect(String(describing: error).contains(text), "\(model): \(error)")
      }
    } else {
      let directory = try Fixtures.temporaryDirectory()
      defer { try? FileManager.default.removeItem(at: directory) }
      let output = directory.appendingPathComponent("model.mlmodel")
      try KerasConverter.convert(modelAt: source).write(to: output)
      let report = try ParityVerifier.verify(
        source: source, converted: output, options: VerificationOptions(samples: 2, reference: reference))
      let failures = report.outputs.filter { !$0.passed }.map {
        "\($0.name) [\($0.inputs)] vs \($0.comparedWith): max abs \($0.maxAbsoluteError)"
      }
      #expect(report.passed, "\(model): \(failures)")
      #expect(report.outputs.contains { $0.comparedWith == .referenceOutputs && $0.elements > 0 })
    }
  }

  /// `--custom-layers`: the unknown ScaleShift becomes a Core ML custom layer with its config and weights.
  @Test(arguments: dialects)
  func customLayerBecomesCoreMLCustomLayer(_ dialect: String) throws {
    let source = Fixtures.url("layers/\(dialect)/custom_layer.h5")
    let model = try KerasConverter.convert(modelAt: source, options: ConversionOptions(unknownLayersAsCustom: true))
    let spec = try CoreMLSpecReader.read(model.bytes)
    let layer = try #require(spec.layers.first { $0.kind == "custom" })
    #expect(layer.custom?.className == "ScaleShift")
    #expect(spec.specificationVersion >= 2)
  }

  /// A conversion registered for a class name (coremltools' `custom_conversion_functions`) decides the
  /// custom layer's class, parameters and weights.
  @Test func registeredConversionShapesTheCustomLayer() throws {
    let source = Fixtures.url("layers/tfkeras215/custom_layer.h5")
    var options = ConversionOptions()
    options.frontendSettings[KerasCustomLayers.self] = KerasCustomLayers(conversions: [
      "ScaleShift": { layer in
        CustomLayer(
          className: "ScaleShiftLayer", parameters: ["shift": .double(layer.config["shift"]?.double ?? 0)],
          weights: layer.weights,
          outputShape: layer.inputShapes[0])
      }
    ])
    let spec = try CoreMLSpecReader.read(try KerasConverter.convert(modelAt: source, options: options).bytes)
    let layer = try #require(spec.layers.first { $0.kind == "custom" })
    #expect(layer.custom?.className == "ScaleShiftLayer")
  }

  /// Keras 1 architecture JSON (Convolution2D, AtrousConvolution2D, Merge, Embedding, per-gate LSTM/GRU and
  /// SimpleRNN weights, BatchNormalization's `running_std`, Deconvolution2D) with its weights file converts and
  /// reproduces the outputs of the same model built in tf.keras.
  @Test(arguments: ["keras1_sequential", "keras1_merge", "keras1_lstm", "keras1_gru_rnn", "keras1_bn_deconv"])
  func keras1ArchitectureConverts(_ name: String) throws {
    let base = Fixtures.url("layers/keras1/\(name)")
    let weights = base.appendingPathExtension("h5")
    let json = base.appendingPathExtension("json")
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("model.mlmodel")
    try KerasConverter.convert(architectureAt: json, weightsAt: weights).write(to: output)
    let report = try ParityVerifier.verify(
      source: weights, converted: output,
      options: VerificationOptions(
        samples: 2, reference: Fixtures.url("layers/keras1/\(name).reference.h5"), architecture: json))
    #expect(report.passed, "\(name): \(report.outputs.filter { !$0.passed }.map(\.name))")
  }
}
