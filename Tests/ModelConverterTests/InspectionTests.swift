import Foundation
import ModelConverter
import TestSupport
import Testing

/// `ModelInspector` and `modelconv inspect`, against what real Keras and coremltools wrote.
@Suite struct InspectionTests {
  /// `Samples/make_inspect_reference.py`: tf.keras 2.15's `count_params()` and output shapes.
  struct KerasSummary: Decodable {
    struct Layer: Decodable {
      var name: String
      var `class`: String
      var outputShape: [Int]?
      var countParams: Int
      enum CodingKeys: String, CodingKey {
        case name, `class`
        case outputShape = "output_shape"
        case countParams = "count_params"
      }
    }
    struct Model: Decodable {
      var countParams: Int
      var layers: [Layer]
      enum CodingKeys: String, CodingKey {
        case layers
        case countParams = "count_params"
      }
    }
    var models: [String: Model]
  }

  static func kerasSummary() throws -> KerasSummary {
    let data = try Data(contentsOf: Fixtures.url("inspect/keras_summary.json"))
    return try JSONDecoder().decode(KerasSummary.self, from: data)
  }

  @Test func kerasFilesMatchKerasOwnSummary() throws {
    let summary = try Self.kerasSummary()
    #expect(summary.models.count == 8)
    for (path, expected) in summary.models.sorted(by: { $0.key < $1.key }) {
      let inspection = try ModelInspector.inspect(contentsOf: Fixtures.packageRoot.appendingPathComponent(path))
      #expect(inspection.parameterCount == expected.countParams, "\(path)")
      #expect(inspection.shapesUnavailable == nil, "\(path)")
      #expect(inspection.weights.reduce(0) { $0 + $1.count } == expected.countParams, "\(path)")
      for layer in expected.layers {
        let row = try #require(inspection.layers.first { $0.name == layer.name }, "\(path): \(layer.name)")
        #expect(row.type == layer.class, "\(path): \(layer.name)")
        #expect(row.parameterCount == layer.countParams, "\(path): \(layer.name)")
        if let shape = layer.outputShape { #expect(row.outputShape == shape, "\(path): \(layer.name)") }
      }
      // Only InputLayers that Keras does not list (a nested Sequential's) may be extra.
      let extra = inspection.layers.filter { row in !expected.layers.contains { $0.name == row.name } }
      #expect(extra.allSatisfy { $0.type == "InputLayer" && $0.parameterCount == 0 }, "\(path): \(extra.map(\.name))")
    }
  }

  @Test func kerasHeader() throws {
    let inspection = try ModelInspector.inspect(contentsOf: Fixtures.digits.appendingPathComponent("digits_cnn.h5"))
    #expect(inspection.format == .kerasHDF5)
    #expect(inspection.producer?.version == "2.15.0")
    #expect(inspection.inputs.map(\.type.shape) == [[8, 8, 1]])
    #expect(inspection.outputs.map(\.type.shape) == [[10]])
    // Outputs are named after the Keras layers that produce them.
    #expect(inspection.outputs.map(\.name) == ["probabilities"])
    #expect(inspection.specificationVersion == nil && inspection.oldestReleases.isEmpty)
    let archive = try ModelInspector.inspect(contentsOf: Fixtures.url("keras_zip/functional.keras"))
    #expect(archive.format == .kerasArchive)
    #expect(archive.producer?.version?.hasPrefix("3.") == true)
  }

  /// coremltools wrote these from the same Keras model: the classifier facts are the ones it was given.
  @Test func coremltoolsNeuralNetworkClassifier() throws {
    let inspection = try ModelInspector.inspect(contentsOf: Fixtures.url("coremltools/rgb_classifier.mlmodel"))
    #expect(inspection.format == .mlmodel)
    #expect(inspection.kind.rawValue == "neuralNetworkClassifier")
    #expect(inspection.labels == ["cat", "dog", "bird", "fish", "frog"])
    let image = try #require(inspection.imageInputs.first)
    #expect(image.colorSpace == "BGR" && image.width == 16 && image.height == 16)
    #expect(abs(image.scale - 1 / 127.5) < 1e-7)
    #expect(image.redBias == -1 && image.greenBias == -1 && image.blueBias == -1 && image.grayBias == nil)
    #expect(inspection.inputs.first?.type.kind == "image")
    #expect(inspection.outputs.map(\.type.kind).sorted() == ["dictionary", "string"])
    // coremltools 9 writes tf.keras neural networks for its default target, iOS 13: specification 4,
    // which Apple's table puts at iOS 13 / macOS 10.15 (Core ML 3).
    #expect(inspection.specificationVersion == 4)
    #expect(inspection.oldestReleases.map(\.description) == ["iOS 13", "tvOS 13", "macOS 10.15", "watchOS 6"])
    #expect(inspection.weights.map(\.dataType) == ["float32"])
    #expect(inspection.weightBytes == inspection.parameterCount * 4)
    #expect(inspection.shapesUnavailable == nil)
    #expect(inspection.layers.allSatisfy { $0.outputShape != nil })
    // coremltools folds the BatchNormalization into the convolution before it, so only the float16 and
    // quantized variants of the same conversion are compared with it here.
    let half = try ModelInspector.inspect(contentsOf: Fixtures.url("coremltools/rgb_classifier_fp16.mlmodel"))
    #expect(half.parameterCount == inspection.parameterCount)
    #expect(half.weights.map(\.dataType) == ["float16"])
    #expect(half.weightBytes == inspection.parameterCount * 2)
    let lut = try ModelInspector.inspect(contentsOf: Fixtures.url("coremltools/rgb_classifier_lut4.mlmodel"))
    #expect(lut.parameterCount == inspection.parameterCount)
    #expect(lut.weights.contains { $0.dataType == "uint4" }, "\(lut.weights)")

    // The digits network has no BatchNormalization: coremltools keeps exactly Keras' parameters.
    let digits = try ModelInspector.inspect(contentsOf: Fixtures.url("coremltools/digits_cnn.mlmodel"))
    let keras = try ModelInspector.inspect(contentsOf: Fixtures.digits.appendingPathComponent("digits_cnn.h5"))
    #expect(digits.parameterCount == keras.parameterCount)
    #expect(digits.labels == (0..<10).map(String.init))
    #expect(digits.outputs.contains { $0.type == .init(kind: "dictionary", keyType: "int64", valueType: "double") })
  }

  @Test func coremltoolsProgram() throws {
    let keras = try ModelInspector.inspect(contentsOf: Fixtures.digits.appendingPathComponent("digits_cnn.h5"))
    for (name, type) in [("digits_cnn_program", "float32"), ("digits_cnn_program_fp16", "float16")] {
      let inspection = try ModelInspector.inspect(contentsOf: Fixtures.url("coremltools/\(name).mlpackage"))
      #expect(inspection.format == .mlpackage)
      #expect(inspection.kind.rawValue == "mlProgram")
      // minimum_deployment_target=iOS15: specification 6, opset CoreML5.
      #expect(inspection.specificationVersion == 6 && inspection.opset == "CoreML5")
      #expect(inspection.oldestReleases.map(\.description) == ["iOS 15", "tvOS 15", "macOS 12", "watchOS 8"])
      #expect(inspection.labels == (0..<10).map(String.init))
      let image = try #require(inspection.imageInputs.first)
      #expect(image.colorSpace == "GRAYSCALE" && abs(image.scale - 1 / 255) < 1e-7 && image.grayBias == 0)
      #expect(inspection.parameterCount == keras.parameterCount, "\(name)")
      #expect(
        inspection.weights.first { $0.dataType == type }?.count == keras.parameterCount,
        "\(name): \(inspection.weights)")
      #expect(inspection.layers.contains { $0.type == "conv" && $0.outputShape?.count == 4 })
      #expect(!inspection.layers.contains { $0.type == "const" })
    }
    let lut = try ModelInspector.inspect(contentsOf: Fixtures.url("coremltools/rgb_classifier_program_lut4.mlpackage"))
    #expect(lut.weights.contains { $0.dataType == "uint4" }, "\(lut.weights)")
    #expect(!lut.weights.contains { $0.dataType == "uint32" }, "the shape operand is not a weight")
  }

  @Test func ourConversionRoundTrips() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5")
    let keras = try ModelInspector.inspect(contentsOf: source)
    for ext in ["mlmodel", "mlpackage"] {
      let model = try KerasConverter.convert(
        modelAt: source,
        options: ConversionOptions(
          inputNames: ["image"], imageInputNames: ["image"], classLabels: .strings((0..<10).map { "digit \($0)" }),
          imageScale: 1 / 255,
          format: ext == "mlpackage" ? .mlProgram : .neuralNetwork, author: "Tests", license: "MIT"))
      let url = directory.appendingPathComponent("Digits.\(ext)")
      try model.write(to: url)
      let inspection = try ModelInspector.inspect(contentsOf: url)
      #expect(inspection.labels.first == "digit 0" && inspection.labels.count == 10)
      #expect(inspection.metadata.author == "Tests" && inspection.metadata.license == "MIT")
      #expect(inspection.metadata.userDefined.contains { $0.key == "modelconv.version" })
      #expect(inspection.parameterCount == keras.parameterCount)
      #expect(
        inspection.inputs == [
          .init(name: "image", type: .init(kind: "image", width: 8, height: 8, colorSpace: "GRAYSCALE"))
        ])
      #expect(inspection.specificationVersion == model.summary.specificationVersion)
    }
  }

  /// What `convert` reports is what the written file declares, for both formats, images and arrays.
  @Test func conversionSummaryMatchesTheWrittenDescription() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5")
    for format in [ModelFormat.neuralNetwork, .mlProgram] {
      for image in [true, false] {
        let model = try KerasConverter.convert(
          modelAt: source,
          options: ConversionOptions(
            inputNames: ["image"], imageInputNames: image ? ["image"] : [],
            classLabels: image ? .integers(Array(0...9)) : nil,
            imageScale: image ? 1 / 255 : 1, format: format))
        let url = directory.appendingPathComponent("m\(image).\(format.fileExtension)")
        try model.write(to: url)
        let inspection = try ModelInspector.inspect(contentsOf: url)
        #expect(inspection.inputs == model.summary.inputs, "\(format) image \(image)")
        #expect(inspection.outputs == model.summary.outputs, "\(format) image \(image)")
        if !image {
          // Core ML's documented layouts: a neural network's [C, H, W]; a program keeps [1, H, W, C].
          #expect(inspection.inputs.first?.type.shape == (format == .neuralNetwork ? [1, 8, 8] : [1, 8, 8, 1]))
        }
      }
    }
  }

  @Test func commandLine() throws {
    let cli = PredictionCommandTests.Runner()
    let model = Fixtures.url("coremltools/digits_cnn_program_fp16.mlpackage").path
    let text = try cli.run(["inspect", model])
    #expect(text.status == 0, "\(text.stderr)")
    #expect(text.stdout.contains("Image (Grayscale 8 × 8)"))
    #expect(text.stdout.contains("Dictionary (Int64 → Double)"))
    #expect(text.stdout.contains("scale 0.00392157 (1/255)"))
    #expect(text.stdout.contains("iOS 15, tvOS 15, macOS 12, watchOS 8 and later"))
    #expect(text.stdout.contains("9,802"))

    let json = try cli.run(["inspect", Fixtures.digits.appendingPathComponent("digits_cnn.h5").path, "--json"])
    #expect(json.status == 0)
    let document = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
    #expect(document["schema"] as? String == "modelconv.inspect/2")
    #expect(document["format"] as? String == "kerasHDF5")
    #expect(document["specificationVersion"] is NSNull)
    #expect(document["parameterCount"] as? Int == 9802)
    let layers = try #require(document["layers"] as? [[String: Any]])
    #expect(layers.first { $0["name"] as? String == "conv2" }?["outputShape"] as? [Int] == [4, 4, 16])

    let missing = try cli.run(["inspect", "/nonexistent/model.h5"])
    #expect(missing.status == 66)
    let bad = try cli.run(["inspect", Fixtures.url("images/truncated.png").path, "--json"])
    #expect(bad.status == 65)
    #expect(bad.stdout.contains("modelconv.error/1"))
    let help = try cli.run(["help", "inspect"])
    #expect(help.stdout.contains("--json") && help.stdout.contains("EXIT CODES"))
  }

  /// Errors are `LocalizedError`s: `localizedDescription` is the message, not "The operation could not be completed".
  @Test func errorsSayWhatWentWrong() throws {
    do {
      _ = try ModelInspector.inspect(contentsOf: URL(fileURLWithPath: "/nonexistent/model_v6.h5"))
      Issue.record("no error")
    } catch {
      #expect(error.localizedDescription.contains("/nonexistent/model_v6.h5"), "\(error.localizedDescription)")
    }
    do {
      _ = try ImageFile.read(contentsOf: Fixtures.url("images/truncated.png"))
      Issue.record("no error")
    } catch {
      #expect(error.localizedDescription.contains("truncated.png"), "\(error.localizedDescription)")
    }
    let error: Error = ConversionError.nameCountMismatch(kind: "input", given: 2, expected: 1)
    #expect(error.localizedDescription == "\(ConversionError.nameCountMismatch(kind: "input", given: 2, expected: 1))")
  }
}
