import Foundation
import ModelConverter

// Convert the bundled digits classifier (8x8 grayscale, trained on pixels / 255).
let source = URL(fileURLWithPath: "Samples/Digits/digits_cnn.h5")
let model = try Converter.convert(
  modelAt: source,
  options: ConversionOptions(
    inputNames: ["image"], outputNames: ["probabilities"], imageInputNames: ["image"],
    classLabels: try ClassLabels.load(fromFile: "Samples/Digits/labels.txt"),
    imageScale: 1 / 255))
print(model.summary.outputs)  // [probabilities: dictionary int64 → double, classLabel: int64]
let output = FileManager.default.temporaryDirectory.appendingPathComponent("Digits.mlmodel")
try model.write(to: output)

// Check the Core ML model against the Keras file, layer by layer, on random inputs.
// The interface is checked too: tell verify the names the conversion gave.
var checks = VerificationOptions(samples: 8)
(checks.inputNames, checks.outputNames) = (["image"], ["probabilities"])
let report = try ParityVerifier.verify(source: source, converted: output, options: checks)
guard report.passed else { fatalError("parity broken: \(report)") }

// Look inside it, classify a photo, and score a folder of labelled images.
let inspection = try ModelInspector.inspect(contentsOf: output)
print(inspection.labels.count, "labels,", inspection.parameterCount, "parameters")
let classifier = try ImageModel.load(contentsOf: output)
let photo = try ImageFile.read(contentsOf: URL(fileURLWithPath: "Samples/Digits/test_images/7/test_1395.png"))
for entry in classifier.classify(photo).top(3) {
  print(entry.label, String(format: "%.1f%%", entry.probability * 100))
}
let folder = try LabelledFolder(url: URL(fileURLWithPath: "Samples/Digits/test_images"))
let evaluation = try Evaluation.run(classifier, on: folder)
print("accuracy", evaluation.model.accuracy, "on", evaluation.evaluated, "images")

do {
  _ = try ImageModel.load(contentsOf: URL(fileURLWithPath: "missing.h5"))
} catch {
  print(error.localizedDescription)  // <current folder>/missing.h5: no such file, or it cannot be read
}
