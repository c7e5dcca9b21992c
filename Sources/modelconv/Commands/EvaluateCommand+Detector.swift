import Foundation
import ModelConverter
import ModelFormats

/// `evaluate` with an object detector: mAP on a dataset laid out as Ultralytics reads one.
extension EvaluateCommand {
  static func runDetector(_ parsed: ParsedArguments) throws -> ExitCode {
    if let classifierOnly = [Options.report, Options.topK, Options.crop].first(where: parsed.isGiven) {
      throw UsageError(
        message:
          "\(classifierOnly.key) applies to classifiers; a detector is scored by mAP (photos are stretched to its input, as Vision's scaleFill)"
      )
    }
    let detector = try PredictCommand.loadDetector(parsed.positionals[0], parsed)
    let other = try parsed.value(Options.against).map { try PredictCommand.loadDetector($0, parsed) }
    let dataset = try DetectionDataset(url: URL(fileURLWithPath: parsed.positionals[1]), classes: detector.labels.count)
    var options = DetectionEvaluationOptions()
    (options.iouThreshold, options.confidenceThreshold) = try ConvertCommand.detectorThresholds(parsed)
    if let text = parsed.value(Options.mapMethod) {
      guard let method = AveragePrecisionMethod(rawValue: text.lowercased()) else {
        throw UsageError(message: "--map-method takes coco or ultralytics, got '\(text)'")
      }
      options.method = method
    }
    options.threads = try parsed.integer(Options.threads, minimum: 1, maximum: 1024) ?? 0
    let progress = ProgressLine(enabled: isatty(STDERR_FILENO) == 1)
    let report = try DetectionEvaluation.run(detector, on: dataset, against: other, options: options) { done, total in
      progress.update(done, total)
    }
    progress.finish()
    Console.out(parsed.flag(Options.json) ? json(report).rendered : text(report))
    return .success
  }

  static func text(_ report: DetectionEvaluationReport) -> String {
    let method = report.method == .coco ? "COCO (pycocotools)" : "Ultralytics' validator"
    var lines = [
      "Evaluated \(report.model.path) on \(report.evaluated) photos with \(report.instances) labelled objects in \(report.folder)",
      "  mAP computed as \(method); suppression IoU threshold \(report.iouThreshold), confidence threshold \(report.confidenceThreshold) (\(String(format: "%.1f", report.imagesPerSecond)) photos/s, \(report.threads) threads)",
      "  mAP@0.5 \(String(format: "%.4f", report.model.map50)), mAP@0.5:0.95 \(String(format: "%.4f", report.model.map50to95))",
    ]
    if let other = report.other, let agreement = report.agreement {
      lines.append(
        "  against \(other.path): mAP@0.5 \(String(format: "%.4f", other.map50)), mAP@0.5:0.95 \(String(format: "%.4f", other.map50to95))"
      )
      lines.append(
        "  agreement: \(agreement.paired) detections paired (same class, IoU >= \(DetectionEvaluationReport.Agreement.minimumIoU)), \(agreement.missing) of the other's missing, \(agreement.extra) extra; worst IoU \(String(format: "%.4f", agreement.worstIoU)), largest confidence difference \(String(format: "%.3g", agreement.largestConfidenceDifference)); \(agreement.photosDiffering.count) photos differ"
      )
      for path in agreement.photosDiffering.prefix(20) { lines.append("    \(path)") }
    }
    let width = max(5, report.model.classes.map(\.label.count).max() ?? 5)
    func pad(_ text: String, _ n: Int) -> String { String(repeating: " ", count: max(0, n - text.count)) + text }
    func number(_ value: Double?) -> String { value.map { String(format: "%.3f", $0) } ?? "-" }
    lines.append("")
    lines.append(
      "  " + "label".padding(toLength: width, withPad: " ", startingAt: 0)
        + "  objects  detections  precision  recall  AP@0.5  AP@0.5:0.95")
    for row in report.model.classes {
      lines.append(
        "  " + row.label.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + pad(String(row.instances), 7)
          + "  " + pad(String(row.detections), 10) + "  " + pad(number(row.precision), 9) + "  "
          + pad(number(row.recall), 6) + "  " + pad(number(row.ap50), 6) + "  " + pad(number(row.ap50to95), 11))
    }
    lines.append("  (precision and recall at IoU 0.5 over every detection returned)")
    for (path, reason) in report.unreadable.sorted(by: { $0.key < $1.key }) {
      lines.append("  unreadable \(path): \(reason)")
    }
    if !report.skippedFiles.isEmpty {
      lines.append("  skipped (not PNG or JPEG): \(report.skippedFiles.count) files")
    }
    if report.duplicateLabelLines > 0 {
      lines.append("  \(report.duplicateLabelLines) repeated label lines dropped")
    }
    return lines.joined(separator: "\n")
  }

  static func json(_ report: DetectionEvaluationReport) -> JSONValue {
    func model(_ m: DetectionEvaluationReport.ModelResult?) -> JSONValue {
      guard let m else { return .null }
      return .object([
        ("path", .string(m.path)), ("kind", .string(m.kind)), ("map50", .number(m.map50)),
        ("map50to95", .number(m.map50to95)),
        (
          "classes",
          .array(
            m.classes.map {
              .object([
                ("label", .string($0.label)), ("classIndex", .number(Double($0.classIndex))),
                ("instances", .number(Double($0.instances))), ("detections", .number(Double($0.detections))),
                ("precision", .optional($0.precision)), ("recall", .optional($0.recall)), ("ap50", .number($0.ap50)),
                ("ap50to95", .number($0.ap50to95)),
              ])
            })
        ),
      ])
    }
    let agreement: JSONValue =
      report.agreement.map {
        .object([
          ("minimumIoU", .number(DetectionEvaluationReport.Agreement.minimumIoU)),
          ("paired", .number(Double($0.paired))), ("missing", .number(Double($0.missing))),
          ("extra", .number(Double($0.extra))), ("worstIoU", .number($0.worstIoU)),
          ("largestConfidenceDifference", .number($0.largestConfidenceDifference)),
          ("photosDiffering", .array($0.photosDiffering.map { .string($0) })),
        ])
      } ?? .null
    return .object([
      ("schema", .string("modelconv.evaluate-detection/1")), ("folder", .string(report.folder)),
      ("method", .string(report.method.rawValue)), ("iouThreshold", .number(report.iouThreshold)),
      ("confidenceThreshold", .number(report.confidenceThreshold)), ("evaluated", .number(Double(report.evaluated))),
      ("instances", .number(Double(report.instances))), ("model", model(report.model)),
      ("against", model(report.other)), ("agreement", agreement),
      (
        "unreadable",
        .array(
          report.unreadable.sorted { $0.key < $1.key }.map {
            .object([("path", .string($0.key)), ("error", .string($0.value))])
          })
      ),
      ("skippedFiles", .array(report.skippedFiles.map { .string($0) })),
      ("duplicateLabelLines", .number(Double(report.duplicateLabelLines))),
      ("imagesPerSecond", .number(report.imagesPerSecond)), ("threads", .number(Double(report.threads))),
    ])
  }
}
