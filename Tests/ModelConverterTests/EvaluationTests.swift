import Foundation
import ModelConverter
import TestSupport
import Testing

/// `Evaluation` on the Digits sample's labelled folder: accuracy, confusion and agreement as real Keras'
/// probabilities (`test_images.reference.h5`) say they must be.
@Suite struct EvaluationTests {
  static func kerasModel() throws -> ImageModel {
    try ImageModel.load(
      contentsOf: Fixtures.digits.appendingPathComponent("digits_cnn.h5"),
      options: ImageModelOptions(preprocessing: ImagePreprocessing(scale: 1 / 255), labels: .integers(Array(0...9))))
  }

  /// What real Keras predicts for each file of the folder, by relative path.
  static func kerasPredictions() throws -> [String: (truth: Int, predicted: Int)] {
    let files = try ImageModelTests.files()
    let reference = try ImageModelTests.reference()
    var result: [String: (Int, Int)] = [:]
    for (index, file) in files.enumerated() {
      let outputs = reference.outputs[index]
      result[file] = (reference.labels[index], outputs.indices.max { outputs[$0] < outputs[$1] }!)
    }
    return result
  }

  @Test func kerasFileAndItsConversionAgree() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("Digits.mlmodel")
    try KerasConverter.convert(
      modelAt: Fixtures.digits.appendingPathComponent("digits_cnn.h5"),
      options: ConversionOptions(
        inputNames: ["image"], imageInputNames: ["image"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    ).write(to: url)
    let folder = try LabelledFolder(url: ImageModelTests.folder)
    #expect(folder.labels == (0...9).map(String.init))
    let report = try Evaluation.run(
      try Self.kerasModel(), on: folder, against: try ImageModel.load(contentsOf: url),
      options: EvaluationOptions(topK: 2, cropAndScale: .scaleFill, threads: 2))

    let keras = try Self.kerasPredictions()
    let expectedAccuracy = Double(keras.values.filter { $0.truth == $0.predicted }.count) / Double(keras.count)
    #expect(report.evaluated == keras.count)
    #expect(report.model.accuracy == expectedAccuracy)
    #expect(report.other?.accuracy == expectedAccuracy)
    #expect(report.agreement == 1)
    #expect(report.disagreements.isEmpty)
    for label in 0...9 {
      for predicted in 0...9 {
        let count = keras.values.filter { $0.truth == label && $0.predicted == predicted }.count
        #expect(report.confusion[label][predicted] == count, "confusion[\(label)][\(predicted)]")
      }
    }
    #expect(
      Set(report.misclassified.map(\.path)) == Set(keras.filter { $0.value.truth != $0.value.predicted }.map(\.key)))
    for row in report.classes where row.support > 0 {
      let hits = Double(report.confusion[Int(row.label)!][Int(row.label)!])
      #expect(row.recall == hits / Double(row.support))
    }
    #expect(report.model.topKAccuracy >= report.model.accuracy)
  }

  @Test func unknownLabelsAndUnreadableImagesAreReported() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let manager = FileManager.default
    for label in ["3", "7"] {
      try manager.copyItem(
        at: ImageModelTests.folder.appendingPathComponent(label), to: directory.appendingPathComponent(label))
    }
    try manager.createDirectory(at: directory.appendingPathComponent("cats"), withIntermediateDirectories: true)
    try manager.copyItem(
      at: ImageModelTests.folder.appendingPathComponent("3/test_213.png"),
      to: directory.appendingPathComponent("cats/a.png"))
    try Data("not a png".utf8).write(to: directory.appendingPathComponent("7/broken.png"))
    try Data().write(to: directory.appendingPathComponent("notes.txt"))
    let folder = try LabelledFolder(url: directory)
    let report = try Evaluation.run(try Self.kerasModel(), on: folder, options: EvaluationOptions(threads: 1))
    #expect(report.folderLabelsNotInModel == ["cats"])
    #expect(report.modelLabelsWithoutImages == ["0", "1", "2", "4", "5", "6", "8", "9"])
    #expect(Array(report.unreadable.keys) == ["7/broken.png"])
    #expect(report.skippedFiles == ["notes.txt"])
    #expect(report.evaluated == 10)
  }

  /// Folders named `Three` and `Seven` for a model labelled `three` and `seven` (Create ML folders are
  /// often capitalized); a folder matching no label at all is an error, not an empty report.
  @Test func foldersMatchLabelsIgnoringCaseAndNoMatchIsAnError() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let manager = FileManager.default
    for (digit, name) in [("3", "Three"), ("7", "Seven")] {
      try manager.copyItem(
        at: ImageModelTests.folder.appendingPathComponent(digit), to: directory.appendingPathComponent(name))
    }
    let names = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
    let words = try ImageModel.load(
      contentsOf: Fixtures.digits.appendingPathComponent("digits_cnn.h5"),
      options: ImageModelOptions(preprocessing: ImagePreprocessing(scale: 1 / 255), labels: .strings(names)))
    let report = try Evaluation.run(
      words, on: try LabelledFolder(url: directory), against: try Self.kerasModel(),
      options: EvaluationOptions(threads: 1))
    #expect(report.evaluated == 10)
    #expect(report.labelsMatchedIgnoringCase.map { "\($0.folder)→\($0.model)" } == ["Seven→seven", "Three→three"])
    #expect(report.folderLabelsNotInModel.isEmpty)
    // The second model's labels are digits, which match no word: every image is a disagreement.
    #expect(report.agreement == 0 && report.disagreements.count == 10)
    let expected = try Self.kerasPredictions()
    let correct = report.misclassified.count
    #expect(
      10 - correct
        == expected.filter {
          ($0.key.hasPrefix("3/") || $0.key.hasPrefix("7/")) && $0.value.truth == $0.value.predicted
        }.count)

    let other = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: other) }
    try manager.copyItem(
      at: ImageModelTests.folder.appendingPathComponent("3"), to: other.appendingPathComponent("cats"))
    #expect(throws: PredictionError.self) { try Evaluation.run(words, on: try LabelledFolder(url: other)) }
  }
}
