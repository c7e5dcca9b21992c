import CoreMLFormat
import Foundation
import ModelConverter

/// `modelconv convert`: Keras `.h5` to Core ML `.mlmodel`, with coremltools' parameter names.
enum ConvertCommand: Subcommand {
  static let usage = """
    USAGE: modelconv convert <input.h5> [-o <output.mlmodel|output.mlpackage>] [options]

    Converts a Keras model (.h5 of Keras 1-3 and tf_keras, or a Keras 3 .keras archive) into a Core ML
    neural network (.mlmodel) or ML Program (.mlpackage), a classifier when labels are given.

    NAMES:
      --input-names a,b              Core ML names for the inputs, in Keras order (default input1, ...)
      --output-names x,y             Core ML names for the outputs (default output1, ...)
      --input-shape NAME=1,H,W,C     Shape for an input with unknown dimensions (repeatable)
    IMAGE INPUTS (y = scale * pixel + bias):
      --image-input NAME             Make this input an image (repeatable; alias --image-input-names a,b)
      --image-scale S                Scale applied to every pixel first (default 1)
      --red-bias B, --green-bias B, --blue-bias B, --gray-bias B
      --bgr                          The model expects BGR channel order
    CLASSIFIER:
      --labels L1,L2,...             Class labels, in output order (all integers give int64 labels)
      --labels-file FILE             One label per line, or Teachable Machine's "index label" lines
      --predicted-feature-name NAME  Output holding the top label (default classLabel)
      --predicted-probabilities-output NAME
                                     Output holding the probabilities (default the first output)
    FORMAT:
      --format neuralnetwork|mlprogram
                                     neuralnetwork: one .mlmodel file (iOS 11+); mlprogram: an .mlpackage
                                     folder (iOS 15+). Default: from -o (.mlpackage is mlprogram), else
                                     neuralnetwork
      --target iOS15                 Oldest release the model must load on (iOS13-iOS18, macOS10.15-macOS15,
                                     tvOS, watchOS): picks the lowest specification version and opset it
                                     allows; a model it cannot load is refused. Default: what the model
                                     needs (iOS15 for an ML Program)
      --precision float32|float16    float16 stores weights as float16, and an ML Program also computes
                                     in float16 (default for mlprogram); float32 keeps both float32
                                     (default for neuralnetwork)
    METADATA:
      --author, --license, --short-description, --version TEXT
    OTHER:
      --allow-nonfinite              Write NaN or infinite weights and negative BatchNormalization
                                     variances as they are (refused by default: Core ML computes garbage)
      --custom-layers                Make unknown layers Core ML custom layers (class name, config values
                                     as parameters, weights) instead of failing; the app implements them
      --architecture FILE.json       Read INPUT as weights only, with this model.to_json() architecture
      -o, --output PATH              Output file or package (default: the input's name with .mlmodel,
                                     or .mlpackage for --format mlprogram)
      --verify                       After writing, run `modelconv verify` on the result with the labels and
                                     image preprocessing given here (exit 1 when parity breaks; the file is kept)
      --samples N, --seed S, --atol A, --rtol R
                                     verify's options, for --verify
      --json                         Print a machine-readable summary
      -h, --help                     Show this help

    """

  static let specs: [OptionSpec] =
    [OptionSpec(names: ["-o", "--output"], takesValue: true)]
    + OptionSpec.valued(
      "--input-names", "--output-names", "--image-input", "--image-input-names", "--labels", "--labels-file", "--image-scale",
      "--red-bias", "--green-bias", "--blue-bias", "--gray-bias", "--predicted-feature-name", "--predicted-probabilities-output",
      "--precision", "--format", "--target", "--author", "--license", "--short-description", "--version", "--input-shape", "--architecture",
      "--samples", "--seed", "--atol", "--rtol")
    + OptionSpec.flags("--bgr", "--verify", "--json", "--custom-layers", "--allow-nonfinite")

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 1 else {
      throw UsageError(message: parsed.positionals.isEmpty ? "missing the input model\n\n" + usage : "one input model expected, got \(parsed.positionals.count)")
    }
    let input = parsed.positionals[0]
    var options = try conversionOptions(parsed)
    let output = parsed.value("-o") ?? defaultOutputPath(for: input, format: options.format)
    if parsed.value("--format") == nil { options.format = ModelFormat.forPath(output) }
    if options.format == .mlProgram && !output.hasSuffix(".mlpackage") && !output.hasSuffix(".mlpackage/") {
      throw UsageError(message: "an ML Program is a folder holding its weights: name the output NAME.mlpackage (got \(output))")
    }
    try checkOutput(output, inputs: [input] + ["--architecture", "--labels-file"].compactMap { parsed.value($0) })
    let verify = parsed.flag("--verify")
    if !verify && ["--samples", "--seed", "--atol", "--rtol"].contains(where: { parsed.value($0) != nil }) {
      throw UsageError(message: "--samples, --seed, --atol and --rtol apply to --verify")
    }
    if verify && parsed.value("--architecture") != nil {
      throw UsageError(message: "--verify needs the full Keras model file, not a weights-only file with --architecture")
    }

    let model: ConvertedModel
    if let architecture = parsed.value("--architecture") {
      model = try KerasConverter.convert(architectureAt: URL(fileURLWithPath: architecture), weightsAt: URL(fileURLWithPath: input), options: options)
    } else {
      model = try KerasConverter.convert(modelAt: URL(fileURLWithPath: input), options: options)
    }
    let json = parsed.flag("--json")
    guard verify else {
      try write(model, to: output)
      print(model.summary, output: output, json: json)
      if !json { warn(model.preprocessingWarnings) }
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
    var report = try ParityVerifier.verify(source: URL(fileURLWithPath: input), converted: staged, options: verification)
    report.converted = output
    try write(model, to: output)
    if json {
      struct Report: Encodable {
        var output: String
        var summary: ConversionSummary
        var verification: ParityReport
      }
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
      encoder.nonConformingFloatEncodingStrategy = .convertToString(positiveInfinity: "inf", negativeInfinity: "-inf", nan: "nan")
      if let data = try? encoder.encode(Report(output: output, summary: model.summary, verification: report)) {
        Console.out(String(decoding: data, as: UTF8.self))
      }
    } else {
      print(model.summary, output: output, json: false)
      warn(model.preprocessingWarnings)
      VerifyCommand.print(report, json: false)
    }
    return report.passed ? .success : .failure
  }

  static func write(_ model: ConvertedModel, to output: String) throws {
    do { try model.write(to: URL(fileURLWithPath: output)) } catch let error as AtomicFile.DestinationError {
      throw UsageError(message: error.description)
    } catch {
      throw OutputError(path: output, reason: (error as NSError).localizedDescription)
    }
  }

  /// Refuses an output path that is one of the inputs (also through a symbolic or hard link: same
  /// device and inode), or an existing device, pipe, socket or folder (other than an `.mlpackage`
  /// replaced by a package).
  static func checkOutput(_ output: String, inputs: [String]) throws {
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
    for input in inputs {
      if let node = AtomicFile.nodeKind(input), node.device == existing.device, node.inode == existing.inode {
        throw UsageError(message: "the output \(output) is the input \(input); writing it would destroy the input: choose another -o")
      }
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
    options.author = parsed.value("--author")
    options.license = parsed.value("--license")
    options.shortDescription = parsed.value("--short-description")
    options.version = parsed.value("--version")
    options.inputShapes = try inputShapes(parsed)
    options.customLayers.convertUnknown = parsed.flag("--custom-layers")
    options.allowNonFinite = parsed.flag("--allow-nonfinite")
    if options.imageInputNames.isEmpty, [options.redBias, options.greenBias, options.blueBias, options.grayBias].contains(where: { $0 != 0 }) || options.imageScale != 1 {
      throw UsageError(message: "--image-scale and the bias options apply to image inputs; name them with --image-input")
    }
    return options
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

  static func print(_ summary: ConversionSummary, output: String, json: Bool) {
    if json {
      struct Report: Encodable {
        var output: String
        var summary: ConversionSummary
      }
      let encoder = JSONEncoder()
      encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
      if let data = try? encoder.encode(Report(output: output, summary: summary)) { Console.out(String(decoding: data, as: UTF8.self)) }
      return
    }
    let kind = summary.format == .mlProgram ? "ML Program\(summary.labels.isEmpty ? "" : " classifier")" : summary.modelType
    var lines = ["Converted to \(kind) (specification \(summary.specificationVersion), \(summary.precision))"]
    for feature in summary.inputs { lines.append("  input   \(feature.name): \(feature.type)") }
    for feature in summary.outputs { lines.append("  output  \(feature.name): \(feature.type)") }
    lines.append("  layers  \(summary.layerCount), parameters \(summary.parameterCount)")
    if !summary.labels.isEmpty { lines.append("  labels  \(summary.labels.joined(separator: ", "))") }
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
