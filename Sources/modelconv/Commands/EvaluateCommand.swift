import Foundation
import ModelConverter
import ModelFormats

/// `modelconv evaluate`: accuracy on a labelled folder, and agreement with a second model.
enum EvaluateCommand: Subcommand {
  static let name = "evaluate"
  static let abstract =
    "Accuracy, per-class metrics and confusion matrix on a folder of labelled images; mAP for an object detector"
  static let synopsis = "modelconv evaluate <model> <folder> [--against <other model>] [--report report.html] [options]"
  static let discussion = """
    FOLDER holds one subfolder per label with PNG or JPEG images, as Create ML and Turi Create lay it
    out. Each image is classified as `predict` does (same --crop and preprocessing options). Prints
    accuracy, top-K accuracy, per-class precision, recall and F1, and the confusion matrix. With
    --against, a second model (for example the source file and its conversion) runs on the same images:
    both accuracies, their agreement and the images where they disagree. --labels and --labels-file apply
    to both models (default: a Core ML classifier's own labels, else class indices). Folder labels the
    model does not have, and model labels without images, are listed. Images are classified on every
    core. --json prints the report as one document, schema modelconv.evaluate/1.

    An object detector (a pipeline written by convert --detector, or a source network with --detector
    yolo) is scored on a dataset laid out as Ultralytics reads one: FOLDER/images/ with the photos and
    FOLDER/labels/ with one text file per photo (same path, .txt), a line 'class cx cy w h' per object,
    normalized to the photo. Prints mAP@0.5 and mAP@0.5:0.95, and per class the objects, detections,
    precision, recall and AP, computed as COCO does (--map-method ultralytics: as its validator does).
    The suppression runs at IoU 0.7 and confidence 0.001 unless --iou-threshold and
    --confidence-threshold say otherwise, as Ultralytics validates. With --against, a second detector
    (the source network) runs on the same photos: its mAP and how many detections pair (same class,
    IoU >= 0.98). --json: schema modelconv.evaluate-detection/1.
    """

  static let specs: [OptionSpec] =
    [Options.against, Options.report, Options.topK, Options.crop] + Options.labels + Options.shapes + [
      Options.threads, Options.json,
    ]
    + PredictCommand.preprocessingSpecs + Options.detectorSettings.inSection(PredictCommand.detectorSection) + [
      Options.mapMethod.inSection(PredictCommand.detectorSection)
    ]

  static let examples = [
    "modelconv evaluate Digits.mlmodel Samples/Digits/test_images --against Samples/Digits/digits_cnn.h5 --image-scale 1/255",
    "modelconv evaluate Emotion.mlpackage faces/ --report faces.html",
    "modelconv evaluate Detector.mlpackage dataset/ --against yolov8n.onnx --detector yolo --image-scale 1/255",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 2 else { throw UsageError(message: "expected a model and a folder\n\n" + usage) }
    if try PredictCommand.isDetector(parsed.positionals[0], parsed) { return try runDetector(parsed) }
    try PredictCommand.refuseDetectorOptions(parsed, model: parsed.positionals[0])
    if let report = parsed.value(Options.report) {
      try ConvertCommand.checkOutput(
        report,
        inputs: [parsed.positionals[0], parsed.positionals[1]] + [parsed.value(Options.against)].compactMap { $0 })
    }
    let model = try PredictCommand.loadModel(parsed.positionals[0], parsed)
    let other = try parsed.value(Options.against).map { try PredictCommand.loadModel($0, parsed) }
    PredictCommand.warnIfPreprocessingUnused([model] + [other].compactMap { $0 }, parsed)
    let folder = try LabelledFolder(url: URL(fileURLWithPath: parsed.positionals[1]))
    var options = EvaluationOptions(
      topK: try parsed.integer(Options.topK, minimum: 1) ?? 3, cropAndScale: try PredictCommand.cropOption(parsed))
    options.threads = try parsed.integer(Options.threads, minimum: 1, maximum: 1024) ?? 0
    let progress = ProgressLine(enabled: isatty(STDERR_FILENO) == 1)
    let report = try Evaluation.run(model, on: folder, against: other, options: options) { done, total in
      progress.update(done, total)
    }
    progress.finish()
    if let path = parsed.value(Options.report) {
      let html = EvaluationPage.html(report, folder: folder)
      try writeOutput(Array(html.utf8), to: path)
    }
    if parsed.flag(Options.json) {
      Console.out(json(report).rendered)
    } else {
      Console.out(text(report))
    }
    return .success
  }

  static func percent(_ value: Double?) -> String { value.map { String(format: "%.1f%%", $0 * 100) } ?? "-" }

  static func text(_ report: EvaluationReport) -> String {
    var lines = [
      "Evaluated \(report.model.path) on \(report.evaluated) images in \(report.folder) (\(String(format: "%.1f", report.imagesPerSecond)) images/s, \(report.threads) threads)"
    ]
    lines.append(
      "  accuracy \(percent(report.model.accuracy)), top-\(report.topK) \(percent(report.model.topKAccuracy))")
    if let other = report.other {
      lines.append(
        "  against \(other.path): accuracy \(percent(other.accuracy)), top-\(report.topK) \(percent(other.topKAccuracy))"
      )
      lines.append(
        "  agreement \(percent(report.agreement)) (same top label); \(report.disagreements.count) images differ")
      for item in report.disagreements.prefix(20) {
        lines.append("    \(item.path): \(item.predicted) vs \(item.otherPredicted ?? "-") (true \(item.trueLabel))")
      }
    }
    func pad(_ text: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - text.count)) + text }
    let width = max(5, report.labels.map(\.count).max() ?? 5)
    lines.append("")
    lines.append(
      "  " + "label".padding(toLength: width, withPad: " ", startingAt: 0) + "  precision  recall      F1  images")
    for row in report.classes {
      lines.append(
        "  " + row.label.padding(toLength: width, withPad: " ", startingAt: 0)
          + "  " + pad(percent(row.precision), 9) + "  " + pad(percent(row.recall), 6) + "  " + pad(percent(row.f1), 6)
          + "  " + pad(String(row.support), 6))
    }
    lines.append("")
    lines.append("  confusion matrix (rows: true label, columns: predicted)")
    let cell = max(4, report.labels.map(\.count).max() ?? 4, String(report.confusion.flatMap { $0 }.max() ?? 0).count)
    lines.append("  " + String(repeating: " ", count: width) + report.labels.map { " " + pad($0, cell) }.joined())
    for (label, row) in zip(report.labels, report.confusion) {
      lines.append(
        "  " + label.padding(toLength: width, withPad: " ", startingAt: 0)
          + row.map { " " + pad(String($0), cell) }.joined())
    }
    if !report.folderLabelsNotInModel.isEmpty {
      lines.append(
        "  folders whose label the model does not have (not evaluated): \(report.folderLabelsNotInModel.joined(separator: ", "))"
      )
    }
    if !report.labelsMatchedIgnoringCase.isEmpty {
      lines.append(
        "  folders matched to model labels ignoring case: "
          + report.labelsMatchedIgnoringCase.map { "\($0.folder) → \($0.model)" }.joined(separator: ", "))
    }
    if !report.modelLabelsWithoutImages.isEmpty {
      lines.append(
        "  model labels without a folder of images: \(report.modelLabelsWithoutImages.joined(separator: ", "))")
    }
    for (path, reason) in report.unreadable.sorted(by: { $0.key < $1.key }) {
      lines.append("  unreadable \(path): \(reason)")
    }
    if !report.skippedFiles.isEmpty {
      lines.append("  skipped (not PNG or JPEG, or outside a label folder): \(report.skippedFiles.count) files")
    }
    return lines.joined(separator: "\n")
  }

  static func json(_ report: EvaluationReport) -> JSONValue {
    func prediction(_ p: EvaluationReport.Prediction) -> JSONValue {
      .object([
        ("path", .string(p.path)), ("trueLabel", .string(p.trueLabel)), ("predicted", .string(p.predicted)),
        ("probability", .number(Double(p.probability))), ("otherPredicted", .optional(p.otherPredicted)),
      ])
    }
    func model(_ m: EvaluationReport.ModelResult?) -> JSONValue {
      guard let m else { return .null }
      return .object([
        ("path", .string(m.path)), ("kind", .string(m.kind)), ("accuracy", .number(m.accuracy)),
        ("topKAccuracy", .number(m.topKAccuracy)),
      ])
    }
    return .object([
      ("schema", .string("modelconv.evaluate/1")), ("folder", .string(report.folder)),
      ("evaluated", .number(Double(report.evaluated))),
      ("topK", .number(Double(report.topK))), ("crop", .string(report.cropAndScale.rawValue)),
      ("model", model(report.model)),
      ("against", model(report.other)), ("agreement", .optional(report.agreement)),
      ("disagreements", report.other == nil ? .null : .array(report.disagreements.map(prediction))),
      ("labels", .array(report.labels.map { .string($0) })),
      ("confusion", .array(report.confusion.map { .integers($0) })),
      (
        "classes",
        .array(
          report.classes.map {
            .object([
              ("label", .string($0.label)), ("support", .number(Double($0.support))),
              ("precision", .optional($0.precision)),
              ("recall", .optional($0.recall)), ("f1", .optional($0.f1)),
            ])
          })
      ),
      ("misclassified", .array(report.misclassified.map(prediction))),
      ("folderLabelsNotInModel", .array(report.folderLabelsNotInModel.map { .string($0) })),
      ("modelLabelsWithoutImages", .array(report.modelLabelsWithoutImages.map { .string($0) })),
      (
        "labelsMatchedIgnoringCase",
        .array(
          report.labelsMatchedIgnoringCase.map {
            .object([("folder", .string($0.folder)), ("model", .string($0.model))])
          })
      ),
      (
        "unreadable",
        .array(
          report.unreadable.sorted { $0.key < $1.key }.map {
            .object([("path", .string($0.key)), ("error", .string($0.value))])
          })
      ),
      ("skippedFiles", .array(report.skippedFiles.map { .string($0) })),
      ("imagesPerSecond", .number(report.imagesPerSecond)), ("threads", .number(Double(report.threads))),
    ])
  }
}

/// `count/total, rate, time left` on one rewritten terminal line; silent when output is not a terminal.
final class ProgressLine: @unchecked Sendable {
  let enabled: Bool
  let start = ContinuousClock.now
  private let lock = NSLock()
  private var last = ContinuousClock.now - .seconds(1)
  private var shown = false

  init(enabled: Bool) { self.enabled = enabled }

  func update(_ done: Int, _ total: Int) {
    guard enabled else { return }
    lock.withLock {
      let now = ContinuousClock.now
      guard now - last >= .milliseconds(200) || done == total else { return }
      last = now
      let elapsed = (now - start).components
      let seconds = Double(elapsed.seconds) + Double(elapsed.attoseconds) * 1e-18
      let rate = seconds > 0 ? Double(done) / seconds : 0
      let left = rate > 0 ? Double(total - done) / rate : 0
      let line = String(format: "\r%d/%d images, %.1f/s, %.0f s left   ", done, total, rate, left)
      FileHandle.standardError.write(Data(line.utf8))
      shown = true
    }
  }

  func finish() {
    lock.withLock { if shown { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) } }
  }
}
