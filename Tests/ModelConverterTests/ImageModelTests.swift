import Foundation
import ImageFormat
import KerasFormat
import ModelConverter
import TestSupport
import Testing

/// Photos through a model: the Digits sample's labelled folder, classified from the Keras file and from
/// its conversion, against the probabilities real Keras computed (`Samples/make_digits_folder.py`).
@Suite struct ImageModelTests {
  static let digits = Fixtures.digits
  static let folder = digits.appendingPathComponent("test_images")

  /// The folder's files in the reference file's order (sorted relative paths).
  static func files() throws -> [String] {
    try FileManager.default.subpathsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".png") }.sorted()
  }

  static func reference() throws -> (labels: [Int], outputs: [[Float]]) {
    let file = try HDF5File(path: digits.appendingPathComponent("test_images.reference.h5").path)
    let labels = try file.root.floatDataset("labels").values.map { Int($0) }
    let outputs = try file.root.floatDataset("outputs")
    let width = outputs.shape[1]
    return (labels, stride(from: 0, to: outputs.values.count, by: width).map { Array(outputs.values[$0..<$0 + width]) })
  }

  static let labels = ClassLabels.integers(Array(0...9))

  static func check(_ model: ImageModel) throws {
    let files = try Self.files()
    let reference = try Self.reference()
    #expect(files.count == reference.outputs.count)
    for (index, file) in files.enumerated() {
      let photo = try ImageFile.read(contentsOf: Self.folder.appendingPathComponent(file))
      let result = model.classify(photo, cropAndScale: .scaleFill)
      let expected = reference.outputs[index]
      let ours = zip(result.classIndices, result.ranked).sorted { $0.0 < $1.0 }.map(\.1.probability)
      let worst = zip(ours, expected).map { abs($0 - $1) }.max() ?? 0
      #expect(worst <= 1e-5 + 1e-3 * (expected.max() ?? 0), "\(file): max difference \(worst)")
      #expect(result.ranked[0].label == String(expected.indices.max { expected[$0] < expected[$1] }!), "\(file)")
    }
  }

  @Test func kerasFileWithItsTrainingPreprocessing() throws {
    let model = try ImageModel.load(
      contentsOf: Self.digits.appendingPathComponent("digits_cnn.h5"),
      options: ImageModelOptions(preprocessing: ImagePreprocessing(scale: 1 / 255), labels: Self.labels))
    #expect(model.kind == "keras")
    #expect(model.input.colorSpace == "GRAYSCALE" && model.input.width == 8 && model.input.height == 8)
    try Self.check(model)
  }

  @Test func convertedModelUsesItsOwnScaler() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let converted = try KerasConverter.convert(
      modelAt: Self.digits.appendingPathComponent("digits_cnn.h5"),
      options: ConversionOptions(
        inputNames: ["image"], imageInputNames: ["image"], classLabels: Self.labels, imageScale: 1 / 255))
    let url = directory.appendingPathComponent("Digits.mlmodel")
    try converted.write(to: url)
    let model = try ImageModel.load(contentsOf: url)
    #expect(model.kind == "neuralNetwork")
    #expect(model.labels == (0...9).map(String.init))
    #expect(abs(model.input.scale - 1 / 255) < 1e-9)
    try Self.check(model)
  }

  @Test func modelsWithoutAnImageInputAreRefused() throws {
    #expect(throws: PredictionError.self) {
      try ImageModel.load(contentsOf: Fixtures.url("tfkeras215/dense_classifier.h5"))
    }
    #expect(throws: PredictionError.self) {
      try ImageModel.load(
        contentsOf: Self.digits.appendingPathComponent("digits_cnn.h5"),
        options: ImageModelOptions(labels: .strings(["a", "b"])))
    }
  }
}
