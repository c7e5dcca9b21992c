import Foundation
import ModelConverter
import ModelFormats

/// `modelconv convert`: any registered source to Core ML `.mlmodel` or `.mlpackage`, with coremltools' parameter names.
enum ConvertCommand: Subcommand {
  static let name = "convert"
  static let abstract =
    "Convert a model (\(Frontends.registered.map(\.formatDescription).joined(separator: ", "))) to a Core ML .mlmodel or .mlpackage"
  static let synopsis =
    "modelconv convert <\(Frontends.sourcePlaceholder("input"))> [-o <output.mlmodel|output.mlpackage|folder>] [options]"
  static var discussion: String {
    """
    Converts a \(Frontends.formatNames) model into a Core ML neural network (.mlmodel) or ML Program
    (.mlpackage), a classifier when labels are given.

    """ + Frontends.registered.map(\.summary).joined(separator: "\n") + """

      The options mirror coremltools' convert(): input_names, output_names, image_input_names,
      class_labels, image_scale, *_bias, is_bgr. With --json the summary is one JSON document, schema
      modelconv.convert/3.
      """
  }

  static let specs: [OptionSpec] =
    [Options.output, Options.format, Options.target, Options.precision]
    + Options.names + Options.shapes.inSection("NAMES")
    + [Options.imageInput] + Options.imagePreprocessing + [Options.imageOutput]
    + Options.labels.inSection("CLASSIFIER") + [Options.predictedFeatureName, Options.predictedProbabilitiesOutput]
    + Options.detection
    + Options.compression + Options.metadata
    + ([Options.verify] + Options.sampling + [Options.threads]).inSection("VERIFICATION")
    + [Options.allowNonfinite, Options.customLayers, Options.architecture, Options.json.inSection("OTHER")]

  static let examples = [
    "modelconv convert model_v6.h5 --input-names image --image-input image --image-scale 1/255 --labels-file emotions.txt -o Emotion.mlmodel",
    "modelconv convert keras_model.h5 --image-input input1 --image-scale 1/127.5 --red-bias -1 --green-bias -1 --blue-bias -1 -o Model.mlpackage",
    "modelconv convert model.keras -o Model.mlpackage --precision float32 --target iOS16 --verify",
    "modelconv convert Old.mlmodel -o New.mlpackage --verify",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 1 else {
      throw UsageError(
        message: parsed.positionals.isEmpty
          ? "missing the input model\n\n" + usage : "one input model expected, got \(parsed.positionals.count)")
    }
    let input = parsed.positionals[0]
    var options = try conversionOptions(parsed)
    var output = parsed.value(Options.output) ?? defaultOutputPath(for: input, format: options.format)
    // An existing folder that is not a package receives the model under the input's name.
    if let node = AtomicFile.nodeKind(output), node.kind == "a folder", !output.hasSuffix(".mlpackage"),
      !output.hasSuffix(".mlpackage/"),
      !FileManager.default.fileExists(atPath: URL(fileURLWithPath: output).appendingPathComponent("Manifest.json").path)
    {
      let name = URL(fileURLWithPath: defaultOutputPath(for: input, format: options.format)).lastPathComponent
      output = URL(fileURLWithPath: output).appendingPathComponent(name).path
    }
    if !parsed.isGiven(Options.format) { options.format = ModelFormat.forPath(output) }
    if options.format == .mlProgram && !output.hasSuffix(".mlpackage") && !output.hasSuffix(".mlpackage/") {
      throw UsageError(
        message: "an ML Program is a folder holding its weights: name the output NAME.mlpackage (got \(output))")
    }
    try checkOutput(output, inputs: [input] + [Options.architecture, Options.labelsFile].compactMap(parsed.value))
    // The tool writes .mlmodel files and .mlpackage folders: any other name would be a Core ML model
    // under a name nothing opens as one.
    let written = URL(fileURLWithPath: output).pathExtension
    guard written == "mlmodel" || written == "mlpackage" else {
      throw UsageError(
        message:
          "the output \(output) is neither NAME.mlmodel (a neural network) nor NAME.mlpackage (an ML Program), the two formats modelconv writes"
      )
    }
    let verify = parsed.flag(Options.verify)
    if !verify && (Options.sampling + [Options.threads]).contains(where: parsed.isGiven) {
      throw UsageError(message: "--samples, --seed, --atol, --rtol and --threads apply to --verify")
    }
    if verify && parsed.isGiven(Options.architecture) {
      throw UsageError(message: "--verify needs the full model file, not a weights-only file with --architecture")
    }

    // The source is read once: the conversion and --verify both use its graph.
    let sourceURL = URL(fileURLWithPath: input)
    options.architecture = parsed.value(Options.architecture).map { URL(fileURLWithPath: $0) }
    let source = try Frontends.frontend(for: sourceURL).importSource(at: sourceURL, options: options.sourceOptions)
    // Now that the source is read, every file it read is known (external data, ...).
    try SourceProtection.check(
      output: output, sources: source.readPaths + [parsed.value(Options.labelsFile)].compactMap { $0 })
    let model = try Converter.convert(source, options: options)
    let json = parsed.flag(Options.json)
    guard verify else {
      try write(model, to: output)
      print(model.summary, output: output, json: json, warnings: model.preprocessingWarnings)
      warn(model.preprocessingWarnings)
      for note in model.precisionNotes { Console.warning(note) }
      return .success
    }

    // Verify a staged copy first: when verification cannot run at all, nothing is left behind and an
    // existing file stays; when it runs, the file is put in place (kept even when parity breaks).
    let staged = URL(fileURLWithPath: output).deletingLastPathComponent()
      .appendingPathComponent(
        ".\(URL(fileURLWithPath: output).lastPathComponent).\(UUID().uuidString).verify.\(URL(fileURLWithPath: output).pathExtension == "mlpackage" ? "mlpackage" : "mlmodel")"
      )
    do { try model.write(to: staged) } catch {
      throw OutputError(path: output, reason: "\(error)")
    }
    defer { try? FileManager.default.removeItem(at: staged) }
    var verification = VerificationOptions(
      expectedLabels: options.classLabels?.descriptions, inputShapes: options.inputShapes)
    verification.flexibleInputShapes = options.flexibleInputShapes
    if !options.imageInputNames.isEmpty { verification.expectedPreprocessing = options.imagePreprocessing }
    try VerifyCommand.sampling(parsed, into: &verification)
    var report = try ParityVerifier.verify(source: source, converted: staged, options: verification)
    report.converted = output
    try write(model, to: output)
    if json {
      Console.out(
        try document(
          output: output, summary: model.summary, warnings: model.preprocessingWarnings, verification: report
        ).rendered)
    } else {
      print(model.summary, output: output, json: false, warnings: [:])
      VerifyCommand.print(report, json: false)
    }
    warn(model.preprocessingWarnings)
    for note in model.precisionNotes { Console.warning(note) }
    return report.passed ? .success : .failure
  }

  static func write(_ model: ConvertedModel, to output: String) throws {
    do { try model.write(to: URL(fileURLWithPath: output)) } catch let error as AtomicFile.DestinationError {
      throw UsageError(message: error.description)
    } catch {
      throw OutputError(path: output, reason: (error as NSError).localizedDescription)
    }
  }

  /// Refuses an output path that is, lies inside or contains one of the inputs (also through a symbolic
  /// or hard link), or an existing device, pipe, socket or folder (other than an `.mlpackage` replaced
  /// by a package).
  static func checkOutput(_ output: String, inputs: [String]) throws {
    try SourceProtection.check(output: output, sources: inputs)
    guard let existing = AtomicFile.nodeKind(output) else { return }
    let package = URL(fileURLWithPath: output).pathExtension == "mlpackage"
    if package {
      guard existing.kind == "a folder", FileManager.default.fileExists(atPath: output + "/Manifest.json") else {
        throw UsageError(
          message:
            "\(output) exists and is \(existing.kind == "a folder" ? "a folder without a Manifest.json" : existing.kind), not an .mlpackage; modelconv only replaces a package with a package"
        )
      }
      return
    }
    guard existing.kind == "a regular file" else {
      throw UsageError(
        message: AtomicFile.DestinationError.notARegularFile(path: output, kind: existing.kind).description)
    }
  }

  /// Prints what looks wrong about the image preprocessing, on standard error.
  static func warn(_ warnings: [String: [String]]) {
    for (input, messages) in warnings.sorted(by: { $0.key < $1.key }) {
      for message in messages { Console.warning("image input '\(input)': \(message)") }
    }
  }

  /// The input path with its extension replaced by `.mlmodel` (`.mlpackage` for an ML Program).
  static func defaultOutputPath(for input: String, format: ModelFormat) -> String {
    let url = URL(fileURLWithPath: input)
    return url.deletingPathExtension().appendingPathExtension(format.fileExtension).path
  }

  static func conversionOptions(_ parsed: ParsedArguments) throws -> ConversionOptions {
    var options = ConversionOptions()
    options.inputNames = try parsed.list(Options.inputNames)
    options.outputNames = try parsed.list(Options.outputNames)
    options.imageInputNames = try parsed.list(Options.imageInput) ?? []
    options.imageOutputNames = try parsed.list(Options.imageOutput) ?? []
    options.classLabels = try parsed.classLabels()
    options.imageScale = try parsed.float(Options.imageScale) ?? 1
    options.redBias = try parsed.float(Options.redBias) ?? 0
    options.greenBias = try parsed.float(Options.greenBias) ?? 0
    options.blueBias = try parsed.float(Options.blueBias) ?? 0
    options.grayBias = try parsed.float(Options.grayBias) ?? 0
    options.isBGR = parsed.flag(Options.bgr)
    options.predictedFeatureName = parsed.value(Options.predictedFeatureName) ?? "classLabel"
    options.predictedProbabilitiesOutput = parsed.value(Options.predictedProbabilitiesOutput)
    if let format = parsed.value(Options.format) {
      guard let value = ModelFormat(rawValue: format.lowercased()) else {
        throw UsageError(message: "--format must be neuralnetwork or mlprogram, got '\(format)'")
      }
      options.format = value
    }
    if let target = parsed.value(Options.target) {
      guard let value = DeploymentTarget.parse(target) else {
        throw UsageError(
          message:
            "--target '\(target)' is not a release this tool knows; use one of \(DeploymentTarget.allNames.joined(separator: ", "))"
        )
      }
      options.target = value
    }
    if let precision = parsed.value(Options.precision) {
      guard let value = WeightPrecision(rawValue: precision) else {
        throw UsageError(message: "--precision must be float32 or float16, got '\(precision)'")
      }
      options.precision = value
    }
    options.compression = try compression(parsed)
    options.detector = try detector(parsed)
    options.author = parsed.value(Options.author)
    options.license = parsed.value(Options.license)
    options.shortDescription = parsed.value(Options.shortDescription)
    options.version = parsed.value(Options.modelVersion)
    options.inputShapes = try parsed.inputShapes()
    options.flexibleInputShapes = try parsed.flexibleInputShapes()
    options.unknownLayersAsCustom = parsed.flag(Options.customLayers)
    options.allowNonFinite = parsed.flag(Options.allowNonfinite)
    if let normalization = try ImagePreprocessingOptions.values(parsed) {
      guard !options.imageInputNames.isEmpty || !options.imageOutputNames.isEmpty else {
        throw UsageError(
          message:
            "--image-mean and --image-std apply to image inputs and outputs; name them with --image-input or --image-output"
        )
      }
      (options.imageMean, options.imageStd) = (normalization.mean, normalization.std)
    }
    if options.imageInputNames.isEmpty, options.imageOutputNames.isEmpty,
      [options.redBias, options.greenBias, options.blueBias, options.grayBias].contains(where: { $0 != 0 })
        || options.imageScale != 1
    {
      throw UsageError(
        message:
          "--image-scale and the bias options apply to image inputs and outputs; name them with --image-input or --image-output"
      )
    }
    return options
  }

  /// `--iou-threshold` and `--confidence-threshold`, nil where not given.
  static func detectorThresholds(_ parsed: ParsedArguments) throws -> (iou: Double?, confidence: Double?) {
    var thresholds: (iou: Double?, confidence: Double?) = (nil, nil)
    if let value = parsed.value(Options.iouThreshold) {
      guard let threshold = Double(value), (0...1).contains(threshold) else {
        throw UsageError(message: "--iou-threshold takes a number from 0 to 1, got '\(value)'")
      }
      thresholds.iou = threshold
    }
    if let value = parsed.value(Options.confidenceThreshold) {
      guard let threshold = Double(value), threshold.isFinite, threshold >= 0 else {
        throw UsageError(message: "--confidence-threshold takes a number of at least 0, got '\(value)'")
      }
      thresholds.confidence = threshold
    }
    return thresholds
  }

  /// `--detector` with its thresholds.
  static func detector(_ parsed: ParsedArguments) throws -> DetectorOptions? {
    guard let kind = parsed.value(Options.detector) else {
      if let extra = Options.detection.first(where: { parsed.isDeclared($0) && parsed.isGiven($0) }) {
        throw UsageError(message: "\(extra.key) applies to --detector")
      }
      return nil
    }
    guard kind.lowercased() == "yolo" else {
      throw UsageError(message: "--detector takes yolo (Ultralytics' YOLOv5, YOLOv8 and YOLO11 heads), got '\(kind)'")
    }
    var options = DetectorOptions()
    let thresholds = try detectorThresholds(parsed)
    options.iouThreshold = thresholds.iou ?? options.iouThreshold
    options.confidenceThreshold = thresholds.confidence ?? options.confidenceThreshold
    if let value = parsed.value(Options.maxDetections) {
      guard let count = Int(value), count >= 1 else {
        throw UsageError(message: "--max-detections takes a whole number of at least 1, got '\(value)'")
      }
      options.maximumDetections = count
    }
    options.agnostic = parsed.flag(Options.agnosticNMS)
    options.padsProgramClasses = !(parsed.isDeclared(Options.noClassPadding) && parsed.flag(Options.noClassPadding))
    return options
  }

  /// `--palettize` or `--quantize`, with their settings.
  static func compression(_ parsed: ParsedArguments) throws -> WeightCompression? {
    let palettize = parsed.value(Options.palettize)
    let quantize = parsed.value(Options.quantize)
    let prune = parsed.value(Options.prune)
    let extras = [
      Options.quantizeMode, Options.compressMinSize, Options.compressSeed, Options.palettizeGroups,
      Options.quantizeBlockSize,
    ].filter(parsed.isGiven)
    let given = [palettize, quantize, prune].compactMap { $0 }.count
    guard given > 0 else {
      if let extra = extras.first {
        throw UsageError(message: "\(extra.key) applies to --palettize, --quantize or --prune")
      }
      return nil
    }
    guard given == 1 else { throw UsageError(message: "give one of --palettize, --quantize and --prune") }
    var compression: WeightCompression
    if let prune {
      guard let fraction = Double(prune), fraction > 0, fraction < 1 else {
        throw UsageError(message: "--prune takes a fraction between 0 and 1, exclusive, got '\(prune)'")
      }
      guard ![Options.quantizeMode, Options.palettizeGroups, Options.quantizeBlockSize].contains(where: parsed.isGiven)
      else {
        throw UsageError(
          message: "--quantize-mode, --quantize-block-size and --palettize-groups apply to --quantize and --palettize")
      }
      compression = WeightCompression(method: .prune(fraction: fraction))
    } else if let palettize {
      guard let bits = Int(palettize), WeightCompression.palettizeBitsIOS18.contains(bits) else {
        throw UsageError(
          message:
            "--palettize takes \(WeightCompression.palettizeBitsIOS18.map(String.init).joined(separator: ", ")) bits (3 needs iOS 18), got '\(palettize)'"
        )
      }
      guard !parsed.isGiven(Options.quantizeMode) else {
        throw UsageError(message: "--quantize-mode applies to --quantize")
      }
      guard !parsed.isGiven(Options.quantizeBlockSize) else {
        throw UsageError(message: "--quantize-block-size applies to --quantize")
      }
      compression = WeightCompression(method: .palettize(bits: bits))
      if let text = parsed.value(Options.palettizeGroups) {
        guard let value = Int(text), value >= 1, value <= 1 << 30 else {
          throw UsageError(message: "--palettize-groups needs a positive integer, got '\(text)'")
        }
        compression.groupSize = value
      }
    } else {
      guard let text = quantize, let bits = Int(text), WeightCompression.quantizeBits.contains(bits) else {
        throw UsageError(message: "--quantize takes 8 or 4 (4 needs iOS 18), got '\(quantize ?? "")'")
      }
      guard !parsed.isGiven(Options.palettizeGroups) else {
        throw UsageError(message: "--palettize-groups applies to --palettize")
      }
      var mode = WeightCompression.QuantizationMode.symmetric
      if let text = parsed.value(Options.quantizeMode) {
        guard let value = WeightCompression.QuantizationMode(rawValue: text) else {
          throw UsageError(message: "--quantize-mode must be symmetric or affine, got '\(text)'")
        }
        mode = value
      }
      compression = WeightCompression(method: .quantize(bits: bits, mode: mode))
      if let text = parsed.value(Options.quantizeBlockSize) {
        guard let value = Int(text), value >= 1, value <= 1 << 30 else {
          throw UsageError(message: "--quantize-block-size needs a positive integer, got '\(text)'")
        }
        compression.blockSize = value
      }
    }
    if let text = parsed.value(Options.compressMinSize) {
      guard let value = Int(text), value >= 1, value <= 1 << 40 else {
        throw UsageError(message: "--compress-min-size needs a positive integer, got '\(text)'")
      }
      compression.minimumElements = value
    }
    if let text = parsed.value(Options.compressSeed) {
      guard let value = UInt64(text) else {
        throw UsageError(message: "--compress-seed needs a non-negative integer, got '\(text)'")
      }
      compression.seed = value
    }
    return compression
  }

  /// Schema `modelconv.convert/3`: `output`, `summary` (ConversionSummary, typed feature types),
  /// `warnings` (what looks wrong about each image input's preprocessing, also printed on standard
  /// error) and `verification` (the `modelconv.verify/3` report without its schema key, or null without --verify).
  static func document(
    output: String, summary: ConversionSummary, warnings: [String: [String]], verification: ParityReport?
  ) throws -> JSONValue {
    let warningList = warnings.sorted { $0.key < $1.key }.flatMap { input, messages in
      messages.map { JSONValue.object([("input", .string(input)), ("message", .string($0))]) }
    }
    return .object([
      ("schema", .string("modelconv.convert/3")), ("output", .string(output)),
      ("summary", try JSONValueEncoder.encode(summary)),
      ("warnings", .array(warningList)), ("verification", try verification.map(JSONValueEncoder.encode) ?? .null),
    ])
  }

  static func print(_ summary: ConversionSummary, output: String, json: Bool, warnings: [String: [String]]) {
    if json {
      if let document = try? document(output: output, summary: summary, warnings: warnings, verification: nil) {
        Console.out(document.rendered)
      }
      return
    }
    let kind =
      summary.modelType == "pipeline"
      ? "object detector pipeline (\(summary.format == .mlProgram ? "ML Program" : "neural network") and non-maximum suppression)"
      : summary.format == .mlProgram ? "ML Program\(summary.labels.isEmpty ? "" : " classifier")" : summary.modelType
    var lines = ["Converted to \(kind) (specification \(summary.specificationVersion), \(summary.precision))"]
    for feature in summary.inputs { lines.append("  input   \(feature)") }
    for feature in summary.outputs { lines.append("  output  \(feature)") }
    lines.append("  layers  \(summary.layerCount), parameters \(summary.parameterCount)")
    if !summary.labels.isEmpty {
      // A thousand ImageNet classes would fill the terminal: the first and last few, and the count (--json has all).
      let shown =
        summary.labels.count <= 12
        ? summary.labels : Array(summary.labels.prefix(8)) + ["..."] + Array(summary.labels.suffix(2))
      let count = summary.labels.count <= 12 ? "" : " (\(summary.labels.count) labels)"
      lines.append("  labels  \(shown.joined(separator: ", "))\(count)")
    }
    if let compression = summary.compression {
      let ratio =
        compression.weightBytesAfter > 0
        ? Double(compression.weightBytesBefore) / Double(compression.weightBytesAfter) : 1
      lines.append(
        "  weights \(compression.method): \(compression.weightBytesBefore) -> \(compression.weightBytesAfter) bytes (\(String(format: "%.1f", ratio))x), "
          + "\(compression.compressedCount) tensors compressed, \(compression.skippedCount) kept (fewer than \(compression.minimumElements) elements)"
      )
    }
    for note in summary.notes ?? [] { lines.append("  note    \(note)") }
    lines.append("Wrote \(output) (\(summary.byteCount) bytes)")
    Console.out(lines.joined(separator: "\n"))
  }
}

/// The output file could not be written (exit 73).
/// Writes a file a command produces (a report, an annotated photo) atomically: a destination that
/// cannot be replaced is a usage error, a failed write an output error.
func writeOutput(_ bytes: [UInt8], to path: String) throws {
  do { try AtomicFile.write(bytes: bytes, to: URL(fileURLWithPath: path)) } catch let error
    as AtomicFile.DestinationError
  {
    throw UsageError(message: error.description)
  } catch {
    throw OutputError(path: path, reason: (error as NSError).localizedDescription)
  }
}

struct OutputError: Error, CustomStringConvertible {
  var path: String
  var reason: String
  var description: String { "\(path): cannot write the output: \(reason)" }
}
