import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import TestSupport
import Testing

/// `inspect` on Core ML model types other than neural networks, against what coremltools reads back from
/// the files `Samples/make_coreml_model_types.py` wrote (`Samples/Fixtures/model_types/expected.json`).
@Suite struct ModelTypeInspectionTests {
  struct Expected: Decodable {
    struct Feature: Decodable {
      var name: String
      var kind: String
      var shape: [Int]?
      var dataType: String?
      var width: Int?
      var height: Int?
      var colorSpace: String?
      var keyType: String?
      var valueType: String?

      /// The same feature in `inspect`'s terms (dictionary values are always doubles in Core ML).
      var summary: ConversionSummary.Feature {
        .init(
          name: name,
          type: .init(
            kind: kind, width: width, height: height, colorSpace: colorSpace, shape: shape, dataType: dataType,
            keyType: keyType,
            valueType: kind == "dictionary" ? "double" : valueType))
      }
    }
    struct SubModel: Decodable {
      var type: String
      var name: String?
      var specificationVersion: Int
      var inputs: [Feature]
      var outputs: [Feature]
      var labels: [String]
      var subModels: [SubModel]
    }
    struct Metadata: Decodable {
      var author: String
      var license: String
      var shortDescription: String
      var version: String
      var userDefined: [String: String]
    }
    struct Model: Decodable {
      var type: String
      var specificationVersion: Int
      var inputs: [Feature]
      var outputs: [Feature]
      var labels: [String]
      var subModels: [SubModel]
      var metadata: Metadata
    }
    var coremltools: String
    var models: [String: Model]
  }

  static let folder = Fixtures.url("model_types")

  static func expected() throws -> Expected {
    try JSONDecoder().decode(Expected.self, from: Data(contentsOf: folder.appendingPathComponent("expected.json")))
  }

  static func check(_ sub: ModelInspection.SubModel, _ expected: Expected.SubModel, _ at: String) {
    #expect(sub.kind.rawValue == expected.type, "\(at)")
    #expect(sub.name == expected.name, "\(at)")
    #expect(sub.specificationVersion == expected.specificationVersion, "\(at)")
    #expect(sub.inputs == expected.inputs.map(\.summary), "\(at)")
    #expect(sub.outputs == expected.outputs.map(\.summary), "\(at)")
    #expect(sub.labels == expected.labels, "\(at)")
    #expect(sub.subModels.count == expected.subModels.count, "\(at)")
    for (index, (a, b)) in zip(sub.subModels, expected.subModels).enumerated() { check(a, b, "\(at).\(index + 1)") }
  }

  @Test func everyModelTypeMatchesCoremltools() throws {
    let expected = try Self.expected()
    #expect(expected.coremltools == "9.0")
    let files = try FileManager.default.contentsOfDirectory(atPath: Self.folder.path).filter {
      $0.hasSuffix(".mlmodel")
    }
    #expect(files.count == 35)
    #expect(Set(files) == Set(expected.models.keys))
    // The fixtures cover many types, pipelines of every flavour among them.
    let types = Set(expected.models.values.map(\.type) + expected.models.values.flatMap { $0.subModels.map(\.type) })
    #expect(types.count >= 30, "\(types.sorted())")
    for (file, model) in expected.models.sorted(by: { $0.key < $1.key }) {
      let inspection = try ModelInspector.inspect(contentsOf: Self.folder.appendingPathComponent(file))
      #expect(inspection.format == .mlmodel, "\(file)")
      #expect(inspection.kind.rawValue == model.type, "\(file)")
      #expect(!inspection.isRunnable, "\(file)")
      #expect(inspection.specificationVersion == model.specificationVersion, "\(file)")
      #expect(!inspection.oldestReleases.isEmpty, "\(file)")
      #expect(inspection.inputs == model.inputs.map(\.summary), "\(file)")
      #expect(inspection.outputs == model.outputs.map(\.summary), "\(file)")
      #expect(inspection.labels == model.labels, "\(file)")
      #expect(
        inspection.layers.isEmpty && inspection.parameterCount == 0 && inspection.shapesUnavailable == nil, "\(file)")
      #expect(inspection.metadata.author == (model.metadata.author.isEmpty ? nil : model.metadata.author), "\(file)")
      #expect(inspection.metadata.license == (model.metadata.license.isEmpty ? nil : model.metadata.license), "\(file)")
      #expect(inspection.metadata.version == (model.metadata.version.isEmpty ? nil : model.metadata.version), "\(file)")
      #expect(
        inspection.metadata.shortDescription
          == (model.metadata.shortDescription.isEmpty ? nil : model.metadata.shortDescription), "\(file)")
      #expect(
        Dictionary(uniqueKeysWithValues: inspection.metadata.userDefined.map { ($0.key, $0.value) })
          == model.metadata.userDefined, "\(file)")
      #expect(inspection.subModels.count == model.subModels.count, "\(file)")
      for (index, (a, b)) in zip(inspection.subModels, model.subModels).enumerated() {
        Self.check(a, b, "\(file) #\(index + 1)")
      }
      // The text report names the type, says it is not run, and lists every sub-model.
      let text = inspection.description
      #expect(text.contains(model.type) && text.contains("is not a neural network"), "\(file)")
      for sub in model.subModels { #expect(text.contains(". \(sub.type)"), "\(file): \(sub.type)") }
    }
  }

  /// Converting such a model is still refused with a clear message (and the Core ML reader still says why).
  @Test func otherModelTypesAreStillNotConverted() throws {
    let url = Self.folder.appendingPathComponent("glm_classifier_string.mlmodel")
    #expect(throws: CoreMLReaderError.self) { try CoreMLSpecReader.read(contentsOf: url) }
    let scaler = Self.folder.appendingPathComponent("scaler.mlmodel")
    #expect(throws: CoreMLReaderError.unsupportedModelType(path: scaler.path, type: "scaler")) {
      try CoreMLSpecReader.read(contentsOf: scaler)
    }
    let result = try Modelconv.run([
      "convert", url.path, "-o", try Fixtures.temporaryDirectory().appendingPathComponent("o.mlmodel").path,
    ])
    #expect(result.status == 65, "\(result.stderr)")
  }

  @Test func commandLineInspectsAPipeline() throws {
    let url = Self.folder.appendingPathComponent("vision_feature_print_pipeline.mlmodel")
    let text = try Modelconv.run(["inspect", url.path])
    #expect(text.status == 0, "\(text.stderr)")
    #expect(text.stdout.contains("pipelineClassifier, specification version 4"))
    #expect(text.stdout.contains("image: Image (Color BGR 299 × 299)"))
    #expect(
      text.stdout.contains(
        "1. visionFeaturePrint: image (Image (Color BGR 299 × 299)) → sceneFeatures (MultiArray (Double 2048))"))
    #expect(text.stdout.contains("2. glmClassifier: sceneFeatures"))
    #expect(text.stdout.contains("Labels         2: corgi, husky"))
    #expect(!text.stdout.contains("Output shapes unknown"))

    let json = try Modelconv.run(["inspect", url.path, "--json"])
    #expect(json.status == 0, "\(json.stderr)")
    let object = try #require(try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any])
    #expect(object["schema"] as? String == "modelconv.inspect/2")
    #expect(object["kind"] as? String == "pipelineClassifier")
    #expect(object["labels"] as? [String] == ["corgi", "husky"])
    let subModels = try #require(object["subModels"] as? [[String: Any]])
    #expect(subModels.map { $0["kind"] as? String } == ["visionFeaturePrint", "glmClassifier"])
    #expect(subModels[1]["labels"] as? [String] == ["corgi", "husky"])
    #expect(subModels.allSatisfy { $0.keys.contains("name") && $0["subModels"] is [Any] })
    // A decoded ModelInspection round-trips.
    let decoded = try JSONDecoder().decode(ModelInspection.self, from: Data(json.stdout.utf8))
    #expect(decoded == (try ModelInspector.inspect(contentsOf: url)))
  }

  /// Truncated and bit-flipped pipelines: the outline reader either describes them or throws a reader error,
  /// in process (no crash, no hang); through the command line they exit 0 or 65.
  @Test func hostilePipelinesNeverCrash() throws {
    let bytes = try [UInt8](Data(contentsOf: Self.folder.appendingPathComponent("pipeline_classifier.mlmodel")))
    var described = 0
    var refused = 0
    func attempt(_ candidate: [UInt8]) {
      do {
        _ = try CoreMLModelOutline.read(candidate, path: "hostile.mlmodel")
        described += 1
      } catch let error as CoreMLReaderError {
        #expect("\(error)".hasPrefix("hostile.mlmodel: "))
        refused += 1
      } catch {
        Issue.record("unexpected error \(error)")
      }
    }
    for length in 0..<bytes.count { attempt(Array(bytes.prefix(length))) }
    var seeded = SplitMix64(seed: 19)
    for index in 0..<bytes.count * 8 {
      var flipped = bytes
      flipped[index / 8] ^= 1 << UInt8(index % 8)
      attempt(flipped)
    }
    for _ in 0..<500 {
      var mangled = bytes
      for _ in 0..<4 { mangled[Int(seeded.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: seeded.next()) }
      attempt(mangled)
    }
    #expect(described > 0 && refused > 0)

    let folder = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let cuts = [0, 1, 7, 40, bytes.count / 3, bytes.count / 2, bytes.count - 30, bytes.count - 1]
    var candidates = cuts.map { Array(bytes.prefix($0)) }
    for index in stride(from: 3, to: bytes.count, by: bytes.count / 12) {
      var flipped = bytes
      flipped[index] ^= 0x80
      candidates.append(flipped)
    }
    for (index, candidate) in candidates.enumerated() {
      let url = folder.appendingPathComponent("hostile\(index).mlmodel")
      try Data(candidate).write(to: url)
      let result = try Modelconv.run(["inspect", url.path])
      #expect(result.status == 0 || result.status == 65, "\(index): \(result.status) \(result.stderr)")
      if result.status == 65 { #expect(result.stderr.contains(url.path), "\(index): \(result.stderr)") }
    }
  }

  /// Hand-made wire bytes: nesting past the depth limit, lengths past the end, over-long varints.
  @Test func wireFormatLimits() throws {
    func varint(_ value: UInt64) -> [UInt8] {
      var v = value
      var out: [UInt8] = []
      repeat {
        out.append(UInt8(v & 0x7F) | (v > 0x7F ? 0x80 : 0))
        v >>= 7
      } while v > 0
      return out
    }
    func field(_ number: UInt64, _ body: [UInt8]) -> [UInt8] {
      varint(number << 3 | 2) + varint(UInt64(body.count)) + body
    }
    // Model { specificationVersion = 1; pipeline (202) { models (1) = Model ... } }
    func nested(_ depth: Int) -> [UInt8] {
      var model: [UInt8] = [0x08, 0x04] + field(900, [])
      for _ in 0..<depth { model = [0x08, 0x04] + field(202, field(1, model) + field(2, Array("p".utf8))) }
      return model
    }
    let fine = try CoreMLModelOutline.read(nested(CoreMLModelOutline.maximumDepth), path: "deep.mlmodel")
    #expect(fine.typeName == "pipeline" && fine.subModels.first?.name == "p")
    var innermost = fine
    while let next = innermost.subModels.first?.model { innermost = next }
    #expect(innermost.typeName == "identity")
    #expect(throws: CoreMLReaderError.self) {
      try CoreMLModelOutline.read(nested(CoreMLModelOutline.maximumDepth + 1), path: "deep.mlmodel")
    }
    #expect(throws: CoreMLReaderError.self) { try CoreMLModelOutline.read(nested(10_000), path: "deep.mlmodel") }

    // A description whose length runs past the file, and a varint of 11 bytes.
    #expect(throws: CoreMLReaderError.self) {
      try CoreMLModelOutline.read([0x12] + varint(1 << 40) + [0, 0], path: "long.mlmodel")
    }
    #expect(throws: CoreMLReaderError.self) {
      try CoreMLModelOutline.read([0x08] + [UInt8](repeating: 0xFF, count: 10) + [0x01], path: "v.mlmodel")
    }
    // Unknown type fields are named as such; a model without a type is "none".
    #expect(try CoreMLModelOutline.read([0x08, 0x01] + field(4321, []), path: "u.mlmodel").typeName == "unknown")
    #expect(try CoreMLModelOutline.read([0x08, 0x01], path: "n.mlmodel").typeName == "none")
  }
}

/// A non-maximum suppression model (a detector pipeline's last stage) shows its parameters as
/// `Samples/make_coreml_model_types.py` set them through coremltools' protobuf classes.
@Suite struct SuppressionInspectionTests {
  @Test func nonMaximumSuppressionParameters() throws {
    let inspection = try ModelInspector.inspect(contentsOf: Fixtures.url("model_types/non_maximum_suppression.mlmodel"))
    let suppression = try #require(inspection.suppression)
    #expect(suppression.iouThreshold == 0.5 && suppression.confidenceThreshold == 0.1 && !suppression.perClass)
    #expect(suppression.confidenceInput == "confidence" && suppression.coordinatesInput == "coordinates")
    #expect(suppression.confidenceOutput == "confidence_kept" && suppression.coordinatesOutput == "coordinates_kept")
    #expect(suppression.iouThresholdInput.isEmpty && suppression.confidenceThresholdInput.isEmpty)
    #expect(inspection.labels == ["7", "11"])
    #expect(inspection.description.contains("IoU above 0.5 suppressed across classes; confidence below 0.1 dropped"))
    // Every other model type has none.
    #expect(try ModelInspector.inspect(contentsOf: Fixtures.url("model_types/scaler.mlmodel")).suppression == nil)
  }
}
