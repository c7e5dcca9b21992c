import Foundation
import ModelFormats
import ModelConverter

/// `modelconv convert`: any registered source to Core ML `.mlmodel` or `.mlpackage`, with coremltools' parameter names.
enum ConvertCommand: Subcommand {
  static let name = "convert"
  static let abstract = "Convert a model (\(Frontends.registered.map(\.formatDescription).joined(separator: ", "))) to a Core ML .mlmodel or .mlpackage"
  static let synopsis = "modelconv convert <\(Frontends.sourcePlaceholder("input"))> [-o <output.mlmodel|output.mlpackage|folder>] [options]"
  static var discussion: String {
    """
    Converts a \(Frontends.formatNames) model into a Core ML neural network (.mlmodel) or ML Program
    (.mlpackage), a classifier when labels are given.

    """ + Frontends.registered.map(\.summary).joined(separator: "\n") + """

    The options mirror coremltools' convert(): input_names, output_names, image_input_names,
    class_labels, image_scale, *_bias, is_bgr.
    """
  }

  /// `--input-names` and `--output-names`, which `verify` shares: the names the converted model has.
  static func namesSpecs(section: String, verb: String) -> [OptionSpec] {
    [
      .option("--input-names", value: "A,B", section: section, help: "\(verb) for the inputs, in the source's order (default: the source's names, or input1, input2, ... for a source whose names are internal)."),
      .option("--output-names", value: "X,Y", section: section, help: "\(verb) for the outputs (default: the source's names, or output1, ... as for inputs)."),
    ]
  }

  static let specs: [OptionSpec] = [
    .option("-o", "--output", value: "PATH", section: "OUTPUT", help: "Output file or package; an existing folder (not a package) receives <input name>.mlmodel or .mlpackage. Default: the input's path with .mlmodel, or .mlpackage for --format mlprogram."),
    .option("--format", value: "neuralnetwork|mlprogram", section: "OUTPUT", help: "neuralnetwork: one .mlmodel file of classic layers (iOS 11+); mlprogram: an .mlpackage folder with MIL operations and a weight file (iOS 15+). Default: from the output name (.mlpackage is mlprogram), else neuralnetwork."),
    .option("--target", value: "RELEASE", section: "OUTPUT", help: "Oldest release the model must load on: iOS11-iOS18, macOS10.13-macOS15, tvOS11-tvOS18, watchOS4-watchOS11. Picks the lowest specification version and opset it allows and refuses a model it cannot load. Default: what the model needs (iOS15 for an ML Program)."),
    .option("--precision", value: "float32|float16", section: "OUTPUT", help: "float16 stores weights as half floats (an error for a weight beyond 65504), and an ML Program also computes in float16. Default: float16 for mlprogram, float32 for neuralnetwork."),
  ] + namesSpecs(section: "NAMES", verb: "Core ML names") + [
    .option("--input-shape", value: "NAME=1,H,W,C", section: "NAMES", help: "Shape for an input with unknown dimensions (repeatable)."),
    .option("--image-input", "--image-input-names", value: "NAME", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "Make this input an image (repeatable, or a comma list)."),
    .option("--image-scale", value: "S", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "Multiplies every pixel before the bias is added: a number or a fraction such as 1/255 (default 1)."),
    .option("--red-bias", value: "B", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "Added to the red channel after scaling (default 0)."),
    .option("--green-bias", value: "B", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "Added to the green channel (default 0)."),
    .option("--blue-bias", value: "B", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "Added to the blue channel (default 0)."),
    .option("--gray-bias", value: "B", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "Added to a one-channel (grayscale) image (default 0)."),
    .flag("--bgr", section: "IMAGE INPUTS (network input = scale * pixel + bias)", help: "The model was trained on BGR channel order."),
  ] + ImageNormalizationOptions.specs(section: "IMAGE INPUTS (network input = scale * pixel + bias)", verb: "network input =") + [
    .option("--image-output", value: "NAME", section: "IMAGE OUTPUTS (pixel = (network output - bias) / scale)", help: "Make this [1, H, W, 3] or [1, H, W, 1] output an image (repeatable, or a comma list): the image options above undone give its pixels, RGB (BGR with --bgr) or GRAYSCALE; an ML Program needs iOS 16."),
  ] + [
    .option("--labels", value: "L1,L2,...", section: "CLASSIFIER", help: "Class labels in output order; all integers give int64 labels."),
    .option("--labels-file", value: "FILE", section: "CLASSIFIER", help: "One label per line, or Teachable Machine's \"index label\" lines."),
    .option("--predicted-feature-name", value: "NAME", section: "CLASSIFIER", help: "Output holding the top label (default classLabel)."),
    .option("--predicted-probabilities-output", value: "NAME", section: "CLASSIFIER", help: "Output holding the probabilities (default the first output)."),
    .option("--palettize", value: "BITS", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "Store each weight tensor as a k-means lookup table of 2^BITS values (1, 2, 4, 6 or 8; 3 for iOS 18) and BITS-bit indices, as coremltools' palettize_weights (kmeans, per tensor)."),
    .option("--palettize-groups", value: "G", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "With --palettize: one table per group of G output channels (iOS 18's per_grouped_channel granularity; needs --target iOS18 or none)."),
    .option("--quantize", value: "BITS", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "Store each weight tensor as 8-bit (or, for iOS 18, 4-bit) integers with a scale per output channel, as coremltools' linear_quantize_weights."),
    .option("--quantize-block-size", value: "B", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "With --quantize: a scale per block of B input channels within each output channel (iOS 18's per_block granularity)."),
    .option("--prune", value: "FRACTION", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "Zero this share (0 to 1, exclusive) of each weight tensor's elements, the smallest in magnitude, and store the rest with a bit mask, as coremltools' prune_weights (OpMagnitudePrunerConfig target_sparsity)."),
    .option("--quantize-mode", value: "symmetric|affine", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "symmetric: int8, w = scale * q (default); affine: uint8 with a zero point per channel, w = scale * (q - zero)."),
    .option("--compress-min-size", value: "N", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "Weight tensors with fewer elements stay as they are (default 2048, coremltools' weight_threshold)."),
    .option("--compress-seed", value: "S", section: "WEIGHT COMPRESSION (ML Program, iOS 16+)", help: "Seed of the k-means++ initialisation (default 0): the same model and seed give the same file."),
    .option("--author", value: "TEXT", section: "METADATA", help: "Model author."),
    .option("--license", value: "TEXT", section: "METADATA", help: "Model license."),
    .option("--short-description", value: "TEXT", section: "METADATA", help: "What the model does."),
    .option("--model-version", value: "TEXT", section: "METADATA", help: "The model's own version string (not modelconv's)."),
    .flag("--verify", section: "VERIFICATION", help: "After writing, run `modelconv verify` on the result with the labels and image preprocessing given here (exit 1 when parity breaks; the file is kept)."),
    .option("--samples", value: "N", section: "VERIFICATION", help: "Random inputs for --verify (default 8)."),
    .option("--threads", value: "N", section: "VERIFICATION", help: "Samples --verify runs at once (default: every core)."),
    .option("--seed", value: "S", section: "VERIFICATION", help: "Seed for --verify's inputs (default 0)."),
    .option("--atol", value: "A", section: "VERIFICATION", help: "Absolute tolerance for --verify."),
    .option("--rtol", value: "R", section: "VERIFICATION", help: "Relative tolerance for --verify."),
    .flag("--allow-nonfinite", section: "OTHER", help: "Write NaN or infinite weights and negative BatchNormalization variances as they are (refused by default: Core ML computes garbage)."),
    .flag("--custom-layers", section: "OTHER", help: "Make unknown layers Core ML custom layers (class name, config values as parameters, weights) instead of failing; the app implements them."),
    .option("--architecture", value: "FILE.json", section: "OTHER", help: "Read the input as weights only, with this model.to_json() architecture."),
    .flag("--json", section: "OTHER", help: "Print a machine-readable summary (schema modelconv.convert/3; errors as modelconv.error/1)."),
  ]

  static let examples = [
    "modelconv convert model_v6.h5 --input-names image --image-input image --image-scale 1/255 --labels-file emotions.txt -o Emotion.mlmodel",
    "modelconv convert keras_model.h5 --image-input input1 --image-scale 1/127.5 --red-bias -1 --green-bias -1 --blue-bias -1 -o Model.mlpackage",
    "modelconv convert model.keras -o Model.mlpackage --precision float32 --target iOS16 --verify",
    "modelconv convert Old.mlmodel -o New.mlpackage --verify",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 1 else {
      throw UsageError(message: parsed.positionals.isEmpty ? "missing the input model\n\n" + usage : "one input model expected, got \(parsed.positionals.count)")
    }
    let input = parsed.positionals[0]
    var options = try conversionOptions(parsed)
    var output = parsed.value("--output") ?? defaultOutputPath(for: input, format: options.format)
    // An existing folder that is not a package receives the model under the input's name.
    if let node = AtomicFile.nodeKind(output), node.kind == "a folder", !output.hasSuffix(".mlpackage"), !output.hasSuffix(".mlpackage/"),
      !FileManager.default.fileExists(atPath: URL(fileURLWithPath: output).appendingPathComponent("Manifest.json").path)
    {
      let name = URL(fileURLWithPath: defaultOutputPath(for: input, format: options.format)).lastPathComponent
      output = URL(fileURLWithPath: output).appendingPathComponent(name).path
    }
    if parsed.value("--format") == nil { options.format = ModelFormat.forPath(output) }
    if options.format == .mlProgram && !output.hasSuffix(".mlpackage") && !output.hasSuffix(".mlpackage/") {
      throw UsageError(message: "an ML Program is a folder holding its weights: name the output NAME.mlpackage (got \(output))")
    }
    try checkOutput(output, inputs: [input] + ["--architecture", "--labels-file"].compactMap { parsed.value($0) })
    // The tool writes .mlmodel files and .mlpackage folders: any other name would be a Core ML model
    // under a name nothing opens as one.
    let written = URL(fileURLWithPath: output).pathExtension
    guard written == "mlmodel" || written == "mlpackage" else {
      throw UsageError(message: "the output \(output) is neither NAME.mlmodel (a neural network) nor NAME.mlpackage (an ML Program), the two formats modelconv writes")
    }
    let verify = parsed.flag("--verify")
    if !verify && ["--samples", "--seed", "--atol", "--rtol", "--threads"].contains(where: { parsed.value($0) != nil }) {
      throw UsageError(message: "--samples, --seed, --atol, --rtol and --threads apply to --verify")
    }
    if verify && parsed.value("--architecture") != nil {
      throw UsageError(message: "--verify needs the full model file, not a weights-only file with --architecture")
    }

    // The source is read once: the conversion and --verify both use its graph.
    let sourceURL = URL(fileURLWithPath: input)
    options.architecture = parsed.value("--architecture").map { URL(fileURLWithPath: $0) }
    let source = try Frontends.frontend(for: sourceURL).importSource(at: sourceURL, options: options.sourceOptions)
    // Now that the source is read, every file it read is known (external data, ...).
    try SourceProtection.check(output: output, sources: source.readPaths + [parsed.value("--labels-file")].compactMap { $0 })
    let model = try Converter.convert(source, options: options)
    let json = parsed.flag("--json")
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
      .appendingPathComponent(".\(URL(fileURLWithPath: output).lastPathComponent).\(UUID().uuidString).verify.\(URL(fileURLWithPath: output).pathExtension == "mlpackage" ? "mlpackage" : "mlmodel")")
    do { try model.write(to: staged) } catch {
      throw OutputError(path: output, reason: "\(error)")
    }
    defer { try? FileManager.default.removeItem(at: staged) }
    var verification = VerificationOptions(expectedLabels: options.classLabels?.descriptions, inputShapes: options.inputShapes)
    if !options.imageInputNames.isEmpty { verification.expectedPreprocessing = options.imagePreprocessing }
    try VerifyCommand.sampling(parsed, into: &verification)
    var report = try ParityVerifier.verify(source: source, converted: staged, options: verification)
    report.converted = output
    try write(model, to: output)
    if json {
      Console.out(try document(output: output, summary: model.summary, warnings: model.preprocessingWarnings, verification: report).rendered)
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
        throw UsageError(message: "\(output) exists and is \(existing.kind == "a folder" ? "a folder without a Manifest.json" : existing.kind), not an .mlpackage; modelconv only replaces a package with a package")
      }
      return
    }
    guard existing.kind == "a regular file" else {
      throw UsageError(message: AtomicFile.DestinationError.notARegularFile(path: output, kind: existing.kind).description)
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
    options.inputNames = try parsed.list("--input-names")
    options.outputNames = try parsed.list("--output-names")
    options.imageInputNames = try parsed.list("--image-input", "--image-input-names") ?? []
    options.imageOutputNames = try parsed.list("--image-output") ?? []
    options.classLabels = try classLabels(parsed)
    options.imageScale = try parsed.float("--image-scale") ?? 1
    options.redBias = try parsed.float("--red-bias") ?? 0
    options.greenBias = try parsed.float("--green-bias") ?? 0
    options.blueBias = try parsed.float("--blue-bias") ?? 0
    options.grayBias = try parsed.float("--gray-bias") ?? 0
    options.isBGR = parsed.flag("--bgr")
    options.predictedFeatureName = parsed.value("--predicted-feature-name") ?? "classLabel"
    options.predictedProbabilitiesOutput = parsed.value("--predicted-probabilities-output")
    if let format = parsed.value("--format") {
      guard let value = ModelFormat(rawValue: format.lowercased()) else {
        throw UsageError(message: "--format must be neuralnetwork or mlprogram, got '\(format)'")
      }
      options.format = value
    }
    if let target = parsed.value("--target") {
      guard let value = DeploymentTarget.parse(target) else {
        throw UsageError(message: "--target '\(target)' is not a release this tool knows; use one of \(DeploymentTarget.allNames.joined(separator: ", "))")
      }
      options.target = value
    }
    if let precision = parsed.value("--precision") {
      guard let value = WeightPrecision(rawValue: precision) else { throw UsageError(message: "--precision must be float32 or float16, got '\(precision)'") }
      options.precision = value
    }
    options.compression = try compression(parsed)
    options.author = parsed.value("--author")
    options.license = parsed.value("--license")
    options.shortDescription = parsed.value("--short-description")
    options.version = parsed.value("--model-version")
    options.inputShapes = try inputShapes(parsed)
    options.unknownLayersAsCustom = parsed.flag("--custom-layers")
    options.allowNonFinite = parsed.flag("--allow-nonfinite")
    if let normalization = try ImageNormalizationOptions.values(parsed) {
      guard !options.imageInputNames.isEmpty || !options.imageOutputNames.isEmpty else {
        throw UsageError(message: "--image-mean and --image-std apply to image inputs and outputs; name them with --image-input or --image-output")
      }
      (options.imageMean, options.imageStd) = (normalization.mean, normalization.std)
    }
    if options.imageInputNames.isEmpty, options.imageOutputNames.isEmpty, [options.redBias, options.greenBias, options.blueBias, options.grayBias].contains(where: { $0 != 0 }) || options.imageScale != 1 {
      throw UsageError(message: "--image-scale and the bias options apply to image inputs and outputs; name them with --image-input or --image-output")
    }
    return options
  }

  /// `--palettize` or `--quantize`, with their settings.
  static func compression(_ parsed: ParsedArguments) throws -> WeightCompression? {
    let palettize = parsed.value("--palettize"), quantize = parsed.value("--quantize"), prune = parsed.value("--prune")
    let extras = ["--quantize-mode", "--compress-min-size", "--compress-seed", "--palettize-groups", "--quantize-block-size"].filter { parsed.value($0) != nil }
    let given = [palettize, quantize, prune].compactMap { $0 }.count
    guard given > 0 else {
      if let extra = extras.first { throw UsageError(message: "\(extra) applies to --palettize, --quantize or --prune") }
      return nil
    }
    guard given == 1 else { throw UsageError(message: "give one of --palettize, --quantize and --prune") }
    var compression: WeightCompression
    if let prune {
      guard let fraction = Double(prune), fraction > 0, fraction < 1 else { throw UsageError(message: "--prune takes a fraction between 0 and 1, exclusive, got '\(prune)'") }
      guard parsed.value("--quantize-mode") == nil, parsed.value("--palettize-groups") == nil, parsed.value("--quantize-block-size") == nil else {
        throw UsageError(message: "--quantize-mode, --quantize-block-size and --palettize-groups apply to --quantize and --palettize")
      }
      compression = WeightCompression(method: .prune(fraction: fraction))
    } else if let palettize {
      guard let bits = Int(palettize), WeightCompression.palettizeBitsIOS18.contains(bits) else {
        throw UsageError(message: "--palettize takes \(WeightCompression.palettizeBitsIOS18.map(String.init).joined(separator: ", ")) bits (3 needs iOS 18), got '\(palettize)'")
      }
      guard parsed.value("--quantize-mode") == nil else { throw UsageError(message: "--quantize-mode applies to --quantize") }
      guard parsed.value("--quantize-block-size") == nil else { throw UsageError(message: "--quantize-block-size applies to --quantize") }
      compression = WeightCompression(method: .palettize(bits: bits))
      if let text = parsed.value("--palettize-groups") {
        guard let value = Int(text), value >= 1, value <= 1 << 30 else { throw UsageError(message: "--palettize-groups needs a positive integer, got '\(text)'") }
        compression.groupSize = value
      }
    } else {
      guard let text = quantize, let bits = Int(text), WeightCompression.quantizeBits.contains(bits) else {
        throw UsageError(message: "--quantize takes 8 or 4 (4 needs iOS 18), got '\(quantize ?? "")'")
      }
      guard parsed.value("--palettize-groups") == nil else { throw UsageError(message: "--palettize-groups applies to --palettize") }
      var mode = WeightCompression.QuantizationMode.symmetric
      if let text = parsed.value("--quantize-mode") {
        guard let value = WeightCompression.QuantizationMode(rawValue: text) else { throw UsageError(message: "--quantize-mode must be symmetric or affine, got '\(text)'") }
        mode = value
      }
      compression = WeightCompression(method: .quantize(bits: bits, mode: mode))
      if let text = parsed.value("--quantize-block-size") {
        guard let value = Int(text), value >= 1, value <= 1 << 30 else { throw UsageError(message: "--quantize-block-size needs a positive integer, got '\(text)'") }
        compression.blockSize = value
      }
    }
    if let text = parsed.value("--compress-min-size") {
      guard let value = Int(text), value >= 1, value <= 1 << 40 else { throw UsageError(message: "--compress-min-size needs a positive integer, got '\(text)'") }
      compression.minimumElements = value
    }
    if let text = parsed.value("--compress-seed") {
      guard let value = UInt64(text) else { throw UsageError(message: "--compress-seed needs a non-negative integer, got '\(text)'") }
      compression.seed = value
    }
    return compression
  }

  /// `--labels` or `--labels-file` (shared with `verify`).
  static func classLabels(_ parsed: ParsedArguments) throws -> ClassLabels? {
    if parsed.value("--labels") != nil && parsed.value("--labels-file") != nil {
      throw UsageError(message: "give --labels or --labels-file, not both")
    }
    if let labels = try parsed.list("--labels") { return try ClassLabels.parse(labels) }
    if let file = parsed.value("--labels-file") { return try ClassLabels.load(fromFile: file) }
    return nil
  }

  /// Every `--input-shape NAME=1,H,W,C` (shared with `verify`).
  static func inputShapes(_ parsed: ParsedArguments) throws -> [String: [Int]] {
    var shapes: [String: [Int]] = [:]
    for entry in parsed.values["--input-shape"] ?? [] {
      let parts = entry.split(separator: "=", maxSplits: 1)
      let dims = parts.count == 2 ? parts[1].split(separator: ",").compactMap { Int($0) } : []
      guard parts.count == 2, !dims.isEmpty, dims.count == parts[1].split(separator: ",").count, dims.allSatisfy({ $0 > 0 }) else {
        throw UsageError(message: "--input-shape needs NAME=1,H,W,C with positive sizes, got '\(entry)'")
      }
      shapes[String(parts[0])] = dims
    }
    return shapes
  }

  /// Schema `modelconv.convert/3`: `output`, `summary` (ConversionSummary, typed feature types),
  /// `warnings` (what looks wrong about each image input's preprocessing, also printed on standard
  /// error) and `verification` (the `modelconv.verify/3` report without its schema key, or null without --verify).
  static func document(output: String, summary: ConversionSummary, warnings: [String: [String]], verification: ParityReport?) throws -> JSONValue {
    let warningList = warnings.sorted { $0.key < $1.key }.flatMap { input, messages in
      messages.map { JSONValue.object([("input", .string(input)), ("message", .string($0))]) }
    }
    return .object([
      ("schema", .string("modelconv.convert/3")), ("output", .string(output)), ("summary", try JSONValueEncoder.encode(summary)),
      ("warnings", .array(warningList)), ("verification", try verification.map(JSONValueEncoder.encode) ?? .null),
    ])
  }

  static func print(_ summary: ConversionSummary, output: String, json: Bool, warnings: [String: [String]]) {
    if json {
      if let document = try? document(output: output, summary: summary, warnings: warnings, verification: nil) { Console.out(document.rendered) }
      return
    }
    let kind = summary.format == .mlProgram ? "ML Program\(summary.labels.isEmpty ? "" : " classifier")" : summary.modelType
    var lines = ["Converted to \(kind) (specification \(summary.specificationVersion), \(summary.precision))"]
    for feature in summary.inputs { lines.append("  input   \(feature)") }
    for feature in summary.outputs { lines.append("  output  \(feature)") }
    lines.append("  layers  \(summary.layerCount), parameters \(summary.parameterCount)")
    if !summary.labels.isEmpty {
      // A thousand ImageNet classes would fill the terminal: the first and last few, and the count (--json has all).
      let shown = summary.labels.count <= 12 ? summary.labels : Array(summary.labels.prefix(8)) + ["..."] + Array(summary.labels.suffix(2))
      let count = summary.labels.count <= 12 ? "" : " (\(summary.labels.count) labels)"
      lines.append("  labels  \(shown.joined(separator: ", "))\(count)")
    }
    if let compression = summary.compression {
      let ratio = compression.weightBytesAfter > 0 ? Double(compression.weightBytesBefore) / Double(compression.weightBytesAfter) : 1
      lines.append(
        "  weights \(compression.method): \(compression.weightBytesBefore) -> \(compression.weightBytesAfter) bytes (\(String(format: "%.1f", ratio))x), "
          + "\(compression.compressedCount) tensors compressed, \(compression.skippedCount) kept (fewer than \(compression.minimumElements) elements)")
    }
    for note in summary.notes ?? [] { lines.append("  note    \(note)") }
    lines.append("Wrote \(output) (\(summary.byteCount) bytes)")
    Console.out(lines.joined(separator: "\n"))
  }
}

/// The output file could not be written (exit 73).
struct OutputError: Error, CustomStringConvertible {
  var path: String
  var reason: String
  var description: String { "\(path): cannot write the output: \(reason)" }
}
