import Foundation
import ModelConverter
import ModelFormats

/// `modelconv verify`: runs a source model and its Core ML conversion on the same inputs and compares them.
enum VerifyCommand: Subcommand {
  static let name = "verify"
  static let abstract =
    "Run a source model (\(Frontends.formatNames)) and its Core ML conversion on the same inputs and compare them"
  static let synopsis =
    "modelconv verify <\(Frontends.sourcePlaceholder("source"))> <converted.mlmodel|converted.mlpackage> [options]"
  static let discussion = """
    Runs both models in modelconv's reference runtime on the same inputs and compares every tensor both
    compute, layer by layer (Core ML values carry the source layers' names), and every output: pixels
    0-255 for image inputs, uniform values in [-1, 1] otherwise. The Core ML side follows Apple's
    documented semantics (NeuralNetwork.proto layers, MIL operations; float16 ML Programs round every
    value to float16). Exits 0 when parity holds, 1 when it breaks; the report names the first layer
    where the two models part. The interface is checked too: the converted model must have the
    source's inputs and outputs, by name (renamed only as convert renames names a format cannot hold,
    or as --input-names/--output-names say), in order, each an image, array or dictionary as the
    source declares it, equally optional, arrays in the shape the source declares.

    Pass rule: |converted - source| <= atol * max(1, RMS of the tensor) + rtol * |source| for every
    element of every compared tensor (float32; at most 1 element in 10^4 may miss it when the tensor's
    relative RMS error is within 256 x 2^-24, float32 roundoff carried through a deep graph); for float16
    models each tensor's relative RMS error must stay within 64 x 2^-11; for compressed weights (n bits)
    within min(16 / (2 (2^n - 1)), 0.25), each layer tensor computed from the source's values of the
    tensors compared before it (the outputs as the model computes them). Classifiers: the same top-1 label on every sample (up to ties within the tolerance) and the
    expected labels (--labels, --labels-file), when given; image preprocessing, when given.

    Image preprocessing: with --image-scale and the bias options (or --image-mean and --image-std),
    every image input's scaler and channel order are checked against them and the source model gets
    pixels preprocessed this way; without them the converted model's own preprocessing is used for both
    and reported as not checked. --json prints the full report with the per-layer table, schema
    modelconv.verify/3.
    """

  static let specs: [OptionSpec] =
    (Options.sampling + [Options.threads, Options.topK]).inSection("SAMPLING")
    + Options.imagePreprocessing.inSection("PREPROCESSING (what the source model was trained on, as given to convert)")
    + Options.names.inSection("NAMES (as given to convert)")
    + [Options.reference] + Options.labels.inSection("OTHER") + Options.shapes.inSection("OTHER")
    + [Options.architecture, Options.layers, Options.json.inSection("OTHER")]
    + Options.detectorSettings.inSection("OBJECT DETECTOR (as given to convert)")

  static let examples = [
    "modelconv verify model_v6.h5 Emotion.mlmodel --labels-file emotions.txt --image-scale 1/255",
    "modelconv verify keras_model.h5 Model.mlpackage --samples 32 --layers",
    "modelconv verify Old.mlmodel New.mlpackage",
  ]

  /// The most random samples one run draws: enough for any statistic, and a run stays in minutes.
  static let maximumSamples = 10_000

  /// `Options.sampling` and `--threads` (shared with `convert --verify`).
  static func sampling(_ parsed: ParsedArguments, into options: inout VerificationOptions) throws {
    options.samples = try parsed.integer(Options.samples, minimum: 0, maximum: maximumSamples) ?? options.samples
    options.seed = UInt64(try parsed.integer(Options.seed, minimum: 0) ?? 0)
    options.absoluteTolerance = try parsed.float(Options.atol, minimum: 0)
    options.relativeTolerance = try parsed.float(Options.rtol, minimum: 0)
    options.threads = try parsed.integer(Options.threads, minimum: 1, maximum: 1024) ?? 0
  }

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 2 else {
      throw UsageError(
        message: "expected a source model and a Core ML model, got \(parsed.positionals.count) paths\n\n" + usage)
    }
    var options = VerificationOptions()
    try sampling(parsed, into: &options)
    options.expectedPreprocessing = try ImagePreprocessingOptions.preprocessing(parsed)
    options.topK = try parsed.integer(Options.topK, minimum: 1) ?? options.topK
    let references = parsed.values(Options.reference).map { URL(fileURLWithPath: $0) }
    options.reference = references.first
    options.moreReferences = Array(references.dropFirst())
    if let labels = try parsed.classLabels() { options.expectedLabels = labels.descriptions }
    options.inputShapes = try parsed.inputShapes()
    options.flexibleInputShapes = try parsed.flexibleInputShapes()
    options.architecture = parsed.value(Options.architecture).map { URL(fileURLWithPath: $0) }
    options.inputNames = try parsed.list(Options.inputNames)
    options.outputNames = try parsed.list(Options.outputNames)
    options.detector = try ConvertCommand.detector(parsed)
    guard options.samples > 0 || options.reference != nil else {
      throw UsageError(message: "--samples 0 needs --reference")
    }
    // Files read in this process must not be FIFOs or devices, which would block forever.
    for path in [parsed.positionals[1]] + references.map(\.path) {
      // A FIFO, device or socket could block forever; missing paths and folders are left to the readers.
      if let kind = PathNode.kind(path), kind != "a regular file", kind != "a folder" {
        throw SourceFormatError.notRegularFile(path: path, kind: kind)
      }
    }

    let report = try ParityVerifier.verify(
      source: URL(fileURLWithPath: parsed.positionals[0]), converted: URL(fileURLWithPath: parsed.positionals[1]),
      options: options)
    print(report, json: parsed.flag(Options.json), allLayers: parsed.flag(Options.layers))
    return report.passed ? .success : .failure
  }

  static func print(_ report: ParityReport, json: Bool, allLayers: Bool = false) {
    if json {
      // Schema modelconv.verify/3: the ParityReport fields in declaration order, nulls included.
      if case .object(let fields)? = try? JSONValueEncoder.encode(report) {
        Console.out(JSONValue.object([("schema", .string("modelconv.verify/3"))] + fields).rendered)
      }
      return
    }
    var lines = [
      "Verifying \(report.converted) against \(report.source)",
      "  \(report.samples) random samples (seed \(report.seed)); "
        + (report.maximumRelativeRMSError.map {
          "pass when each tensor's relative RMS error <= \(format($0)) (\(report.toleranceBasis))"
        }
          ?? "pass when |converted - expected| <= \(report.absoluteTolerance) x max(1, RMS) + \(report.relativeTolerance) x |expected| (\(report.toleranceBasis))"),
    ]
    if report.layersFromSourceValues {
      lines.append(
        "  compressed weights: each layer tensor computed from the source's values of the compared tensors before it; outputs as the model computes them"
      )
    }
    for violation in report.violations {
      lines.append(
        "  FAIL Core ML rule \(violation.rule): layer '\(violation.layer)' (\(violation.layerType)): \(violation.detail) (Core ML would refuse this or compute something else)"
      )
    }
    if let interface = report.interface {
      if interface.passed {
        lines.append(
          "  ok   interface: \(interface.summary)"
            + (interface.kindsChecked ? "" : " (names and order checked; kinds come from convert's options)"))
      } else {
        lines.append("  FAIL interface: the converted model presents another interface than the source declares:")
        for difference in interface.differences { lines.append("       " + difference) }
      }
      for note in interface.notes { lines.append("       note: " + note) }
    }
    for input in report.preprocessing {
      if input.checked {
        lines.append(
          "  \(input.passed ? "ok  " : "FAIL") preprocessing of '\(input.input)': \(input.summary)"
            + (input.passed ? "" : "; expected \(input.expectedSummary ?? "")"))
      } else {
        lines.append(
          "  --   preprocessing of '\(input.input)': \(input.summary) (not checked: give convert's --image-scale and bias options)"
        )
      }
      for warning in input.warnings { lines.append("  WARNING: \(warning)") }
    }
    let failing = report.layers.filter { !$0.passed }
    if allLayers {
      for layer in report.layers { lines.append("  " + describe(layer)) }
    }
    if let first = report.firstMismatch {
      lines.append("  FAIL layers: \(failing.count) of \(report.layers.count) compared tensors differ; the first:")
      lines.append("       " + describe(first))
    } else {
      lines.append("  ok   layers: \(report.layers.count) tensors compared layer by layer, all within tolerance")
    }
    /// Against another framework: the allowance the source's own rounding sets, when wider than the fixed one.
    func roundoffAllowance(_ sensitivity: VerificationTolerance.RoundoffSensitivity?) -> String {
      guard let sensitivity, sensitivity.widens else { return "" }
      return String(
        format:
          " (allowed %.2f%% outside, relative RMS %@: %.0fx what float32 roundoff on every layer moves the source by)",
        sensitivity.allowedShare * 100, format(Float(sensitivity.allowedRMS)),
        VerificationTolerance.RoundoffSensitivity.factor)
    }
    for output in report.outputs {
      let snr = output.snrDecibels.map { String(format: "%.1f dB", $0) } ?? "exact"
      lines.append(
        "  \(output.passed ? "ok  " : "FAIL") \(output.name) [\(output.inputs) inputs vs \(output.comparedWith)]: max abs \(format(output.maxAbsoluteError)), "
          + "max rel \(format(output.maxRelativeError)), outside tolerance \(String(format: "%.2f", output.mismatchedShare * 100))%, SNR \(snr)"
          + roundoffAllowance(output.roundoffSensitivity)
      )
    }
    if let classifier = report.classifier {
      lines.append(
        "  \(classifier.passed ? "ok  " : "FAIL") labels: top-1 agreement \(String(format: "%.1f", classifier.top1Agreement * 100))%, "
          + "top-\(classifier.k) \(String(format: "%.1f", classifier.topKAgreement * 100))% over \(classifier.samples) samples"
      )
      switch classifier.labelsMatch {
      case true?: lines.append("       class labels match the expected labels")
      case false?:
        lines.append("       class labels differ from the expected labels:")
        lines.append("         model:    \(classifier.labels.joined(separator: ", "))")
        lines.append("         expected: \(classifier.expectedLabels?.joined(separator: ", ") ?? "")")
      case nil: lines.append("       class labels not checked (give --labels or a --reference file with labels)")
      }
    }
    if let detector = report.detector {
      let rule = detector.perClass ? "per class" : "across classes"
      lines.append(
        "  \(detector.passed ? "ok  " : "FAIL") detections: \(detector.paired) of \(detector.expectedDetections) source detections found again over \(detector.samples) samples "
          + "(IoU >= \(detector.minimumIoU), same class), \(detector.missing) missing, \(detector.extra) extra, \(detector.borderline) borderline (confidence below \(String(format: "%.4g", detector.borderlineConfidence))); "
          + "worst IoU \(String(format: "%.4f", detector.worstIoU)), largest confidence difference \(String(format: "%.3g", detector.largestConfidenceDifference)) (tolerance \(String(format: "%.3g", detector.confidenceTolerance)))"
      )
      lines.append(
        "       suppression: IoU above \(detector.iouThreshold) suppressed \(rule), confidence below \(detector.confidenceThreshold) dropped"
          + (detector.settingsChecked
            ? "" : " (the file's own settings, not checked: give convert's --detector options)")
          + "; \(detector.classes) classes"
          + (detector.columns > detector.classes ? " in \(detector.columns) columns" : ""))
    }
    if let shapes = report.shapes {
      let defaults = report.outputs.isEmpty ? "" : " (the lines above are at the default size)"
      lines.append("  sizes: \(shapes.count + 1) input sizes checked\(defaults)")
      for shape in shapes {
        let sizes = shape.inputs.map {
          "\($0.name) \($0.source) (model \($0.converted.isEmpty ? "sequence length at run time" : "\($0.converted)"))"
        }.joined(separator: ", ")
        let worst = shape.outputs.map(\.maxAbsoluteError).max().map { "max abs \(format($0))" } ?? ""
        let reference = shape.reference.map { ", with \($0)" } ?? ""
        lines.append("  \(shape.passed ? "ok  " : "FAIL") at \(sizes)\(reference): \(worst)")
        if let failure = shape.failure { lines.append("       cannot run at this size: \(failure)") }
        if let first = shape.firstMismatch { lines.append("       " + describe(first)) }
        for output in shape.outputs where !output.passed {
          lines.append(
            "       \(output.name): max abs \(format(output.maxAbsoluteError)), outside tolerance \(String(format: "%.2f", output.mismatchedShare * 100))%"
          )
        }
      }
    }
    lines.append(
      String(
        format: "  runtime: %.2f ms per sample (source), %.2f ms (converted)",
        report.timing.sourceSecondsPerSample * 1000, report.timing.convertedSecondsPerSample * 1000))
    lines.append(
      "  memory: at most \(RuntimeMemory.describe(report.memory.bytesPerSample)) of tensors and kernel buffers per sample, \(report.memory.samplesAtOnce) at once (limit \(RuntimeMemory.describe(report.memory.limit)))"
    )
    lines.append(report.passed ? "PASS: parity holds" : "FAIL: parity broken")
    Console.out(lines.joined(separator: "\n"))
  }

  static func describe(_ layer: LayerParity) -> String {
    if let shapes = layer.shapeMismatch {
      return
        "FAIL source '\(layer.sourceLayer)' (\(layer.sourceType)) \(layer.tensor) <-> Core ML '\(layer.convertedLayer)' (\(layer.convertedType)): different shapes, \(shapes)"
    }
    let snr = layer.snrDecibels.map { String(format: "%.1f dB", $0) } ?? "exact"
    return
      "\(layer.passed ? "ok  " : "FAIL") source '\(layer.sourceLayer)' (\(layer.sourceType)) \(layer.tensor) <-> Core ML '\(layer.convertedLayer)' (\(layer.convertedType)): "
      + "max abs \(format(layer.maxAbsoluteError)), max rel \(format(layer.maxRelativeError)), outside tolerance \(String(format: "%.2f", layer.mismatchedShare * 100))%, SNR \(snr)"
  }

  static func format(_ value: Float) -> String { value == 0 ? "0" : String(format: "%.3g", value) }
}
