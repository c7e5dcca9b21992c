import Foundation
import ModelConverter

/// `modelconv verify`: runs a Keras model and its Core ML conversion on the same inputs and compares them.
enum VerifyCommand: Subcommand {
  static let usage = """
    USAGE: modelconv verify <source.h5> <converted.mlmodel> [options]

    Runs both models in modelconv's float32 reference runtime on the same inputs and compares every
    output: pixels 0-255 for image inputs (the Keras model gets them after the Core ML model's own
    scale and biases), uniform values in [-1, 1] otherwise. Exits 0 when parity holds, 1 when it breaks.

    Pass rule: |converted - source| <= atol + rtol * |source| for every element, and for classifiers the
    same top-1 label on every sample (and the expected labels, when given).

    OPTIONS:
      --samples N          Random inputs to draw (default 8)
      --seed S             Seed for the inputs (default 0)
      --atol A             Absolute tolerance (default 1e-5)
      --rtol R             Relative tolerance (default 1e-3)
      --top-k K            K for the top-K label agreement (default 3)
      --reference FILE     Also compare with the inputs and outputs saved from real Keras in this HDF5 file
                           (inputs/<i>, outputs/<i>, optional pixels/<i> and a labels attribute)
      --labels L1,L2,...   The labels the classifier should have, in output order
      --labels-file FILE   The same, one label per line (or Teachable Machine's "index label")
      --input-shape NAME=1,H,W,C
                           Shape for a Keras input with unknown dimensions (repeatable)
      --architecture FILE.json
                           Read SOURCE as weights only, with this model.to_json() architecture
      --json               Print the full report as JSON
      -h, --help           Show this help

    """

  static let specs: [OptionSpec] =
    OptionSpec.valued("--samples", "--seed", "--atol", "--rtol", "--top-k", "--reference", "--labels", "--labels-file", "--input-shape", "--architecture")
    + OptionSpec.flags("--json")

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 2 else {
      throw UsageError(message: "expected a Keras model and a Core ML model, got \(parsed.positionals.count) paths\n\n" + usage)
    }
    var options = VerificationOptions()
    options.samples = try parsed.integer("--samples", minimum: 0) ?? options.samples
    options.seed = UInt64(try parsed.integer("--seed", minimum: 0) ?? 0)
    options.absoluteTolerance = try parsed.float("--atol") ?? options.absoluteTolerance
    options.relativeTolerance = try parsed.float("--rtol") ?? options.relativeTolerance
    options.topK = try parsed.integer("--top-k", minimum: 1) ?? options.topK
    options.reference = parsed.value("--reference").map { URL(fileURLWithPath: $0) }
    if let labels = try ConvertCommand.classLabels(parsed) { options.expectedLabels = labels.descriptions }
    options.inputShapes = try ConvertCommand.inputShapes(parsed)
    options.architecture = parsed.value("--architecture").map { URL(fileURLWithPath: $0) }
    guard options.samples > 0 || options.reference != nil else { throw UsageError(message: "--samples 0 needs --reference") }

    let report = try ParityVerifier.verify(
      source: URL(fileURLWithPath: parsed.positionals[0]), converted: URL(fileURLWithPath: parsed.positionals[1]), options: options)
    print(report, json: parsed.flag("--json"))
    return report.passed ? .success : .failure
  }

  static func print(_ report: ParityReport, json: Bool) {
    if json {
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
      encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
      if let data = try? encoder.encode(report) { Console.out(String(decoding: data, as: UTF8.self)) }
      return
    }
    var lines = [
      "Verifying \(report.converted) against \(report.source)",
      "  \(report.samples) random samples (seed \(report.seed)); pass when |converted - expected| <= \(report.absoluteTolerance) + \(report.relativeTolerance) * |expected|",
    ]
    for output in report.outputs {
      let snr = output.snrDecibels.map { String(format: "%.1f dB", $0) } ?? "exact"
      lines.append(
        "  \(output.passed ? "ok  " : "FAIL") \(output.name) [\(output.inputs) inputs vs \(output.comparedWith)]: max abs \(format(output.maxAbsoluteError)), "
          + "max rel \(format(output.maxRelativeError)), outside tolerance \(String(format: "%.2f", output.mismatchedShare * 100))%, SNR \(snr)")
    }
    if let classifier = report.classifier {
      lines.append(
        "  \(classifier.passed ? "ok  " : "FAIL") labels: top-1 agreement \(String(format: "%.1f", classifier.top1Agreement * 100))%, "
          + "top-\(classifier.k) \(String(format: "%.1f", classifier.topKAgreement * 100))% over \(classifier.samples) samples")
      switch classifier.labelsMatch {
      case true?: lines.append("       class labels match the expected labels")
      case false?:
        lines.append("       class labels differ from the expected labels:")
        lines.append("         model:    \(classifier.labels.joined(separator: ", "))")
        lines.append("         expected: \(classifier.expectedLabels?.joined(separator: ", ") ?? "")")
      case nil: lines.append("       class labels not checked (give --labels or a --reference file with labels)")
      }
    }
    lines.append(String(format: "  runtime: %.2f ms per sample (source), %.2f ms (converted)", report.timing.sourceSecondsPerSample * 1000, report.timing.convertedSecondsPerSample * 1000))
    lines.append(report.passed ? "PASS: parity holds" : "FAIL: parity broken")
    Console.out(lines.joined(separator: "\n"))
  }

  static func format(_ value: Float) -> String { value == 0 ? "0" : String(format: "%.3g", value) }
}
