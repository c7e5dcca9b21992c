import Foundation
import ModelConverter
import ModelFormats

/// `modelconv predict`: classifies photos with a source model or a converted one.
enum PredictCommand: Subcommand {
  static let name = "predict"
  static let abstract = "Classify PNG or JPEG photos, or find objects in them, with a \(Frontends.formatNames) model"
  static let synopsis =
    "modelconv predict <model> <image>... [--top-k K] [--crop center|fit|fill] [--annotate out.png] [options]"
  static let discussion = """
    Runs the model in modelconv's reference runtime on each photo, as an app would with Vision:
    the EXIF orientation is applied, the photo is fitted to the model's input size (--crop, Vision's
    imageCropAndScaleOption; an antialiased bilinear filter resamples it), converted to the input's
    grayscale (BT.601 luma), RGB or BGR, and preprocessed: a model that declares image inputs (Core ML)
    by its own image scaler, any other by --image-scale and the bias options, or --image-mean and
    --image-std (what it was trained on). Prints the top K labels
    with their probabilities per image: --labels or --labels-file, else a Core ML classifier's own
    labels, else class indices. An image that cannot be read is reported and the others still
    run (exit 1 when any failed). --json prints the results as one document, schema modelconv.predict/1.

    An object detector (a pipeline ending in non-maximum suppression, as convert --detector writes it,
    or a source network given with --detector yolo) lists each photo's detections instead: label,
    confidence and box in the photo's pixels (left, top, width x height). The photo is stretched to the
    input size, as Vision's scaleFill does. --iou-threshold and --confidence-threshold replace the
    model's thresholds, as its optional inputs do; --annotate writes the photo with the boxes drawn.
    """

  static let specs: [OptionSpec] =
    [Options.topK, Options.crop] + Options.labels + Options.shapes + [Options.threads, Options.json]
    + preprocessingSpecs + Options.detectorSettings.inSection(detectorSection) + [
      Options.annotate.inSection(detectorSection)
    ]

  static let detectorSection =
    "OBJECT DETECTOR (a pipeline written by convert --detector, or a source network with --detector)"

  /// How a source's input was preprocessed in training (a model that declares image inputs carries its
  /// own); `evaluate` lists them the same way.
  static let preprocessingSpecs = Options.imagePreprocessing.inSection(
    "SOURCE PREPROCESSING (what the model was trained on; ignored for models that declare image inputs, as Core ML's do)"
  )

  static let examples = [
    "modelconv predict Emotion.mlmodel face1.jpg face2.png",
    "modelconv predict model_v6.h5 face.jpg --image-scale 1/255 --labels-file emotions.txt --top-k 2",
    "modelconv predict Detector.mlpackage street.jpg --confidence-threshold 0.4 --annotate street-boxes.png",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count >= 2 else {
      throw UsageError(message: "expected a model and at least one image\n\n" + usage)
    }
    if try isDetector(parsed.positionals[0], parsed) { return try runDetector(parsed) }
    try refuseDetectorOptions(parsed, model: parsed.positionals[0])
    let model = try loadModel(parsed.positionals[0], parsed)
    warnIfPreprocessingUnused([model], parsed)
    let topK = try parsed.integer(Options.topK, minimum: 1) ?? 3
    let crop = try cropOption(parsed)
    let threads =
      try parsed.integer(Options.threads, minimum: 1, maximum: 1024) ?? ProcessInfo.processInfo.activeProcessorCount
    let paths = Array(parsed.positionals.dropFirst())
    let results = Evaluation.classify(
      paths.map { URL(fileURLWithPath: $0) }, with: model, cropAndScale: crop, threads: threads)

    if parsed.flag(Options.json) {
      let images = zip(paths, results).map { path, result -> JSONValue in
        switch result {
        case .success(let classification):
          return .object([
            ("path", .string(path)), ("error", .null),
            (
              "top",
              .array(
                classification.top(topK).map {
                  .object([("label", .string($0.label)), ("probability", .number(Double($0.probability)))])
                })
            ),
          ])
        case .failure(let error):
          return .object([("path", .string(path)), ("error", .string("\(error)")), ("top", .null)])
        }
      }
      Console.out(
        JSONValue.object([
          ("schema", .string("modelconv.predict/1")), ("model", modelJSON(model)), ("crop", .string(crop.rawValue)),
          ("topK", .number(Double(topK))),
          ("images", .array(images)),
        ]).rendered)
    } else {
      var lines: [String] = []
      for (path, result) in zip(paths, results) {
        switch result {
        case .success(let classification):
          lines.append(path)
          // Scores that are not probabilities (a model ending in logits) are printed as they are.
          let probabilities = classification.ranked.allSatisfy { $0.probability >= 0 && $0.probability <= 1 }
          for entry in classification.top(topK) {
            let value =
              probabilities
              ? String(format: "%.1f%%", Double(entry.probability) * 100)
              : String(format: "%.4g (score; the model outputs no probabilities)", Double(entry.probability))
            lines.append("  " + entry.label + " " + value)
          }
        case .failure(let error): Console.error(String(describing: error))
        }
      }
      if !lines.isEmpty { Console.out(lines.joined(separator: "\n")) }
    }
    return results.contains { if case .failure = $0 { return true } else { return false } } ? .failure : .success
  }

  /// The model with the options of `predict` and `evaluate`.
  static func loadModel(_ path: String, _ parsed: ParsedArguments) throws -> ImageModel {
    var options = ImageModelOptions()
    options.preprocessing = try ImagePreprocessingOptions.preprocessing(parsed)
    options.labels = try parsed.classLabels()
    options.inputShapes = try parsed.inputShapes()
    return try ImageModel.load(contentsOf: URL(fileURLWithPath: path), options: options)
  }

  /// Warns when preprocessing options were given but every model of the command declares its own.
  static func warnIfPreprocessingUnused(_ models: [ImageModel], _ parsed: ParsedArguments) {
    guard Options.imagePreprocessing.contains(where: parsed.isGiven),
      !models.contains(where: \.takesPreprocessingOptions)
    else { return }
    Console.warning(
      "\(models.map(\.path).joined(separator: " and ")): these models apply their own image preprocessing; --image-scale and the bias options only apply to models without it and are ignored"
    )
  }

  static func cropOption(_ parsed: ParsedArguments) throws -> CropAndScale {
    guard let text = parsed.value(Options.crop) else { return .centerCrop }
    guard let option = CropAndScale(rawValue: text) else {
      throw UsageError(message: "--crop must be center, fit or fill, got '\(text)'")
    }
    return option
  }

  static func modelJSON(_ model: ImageModel) -> JSONValue {
    .object([
      ("path", .string(model.path)), ("kind", .string(model.kind)),
      (
        "input",
        .object([
          ("name", .string(model.input.name)), ("width", .number(Double(model.input.width))),
          ("height", .number(Double(model.input.height))),
          ("colorSpace", .string(model.input.colorSpace)), ("scale", .number(Double(model.input.scale))),
          ("biases", .array(model.input.biases.map { .number(Double($0)) })),
        ])
      ),
      ("labels", .array(model.labels.map { .string($0) })),
    ])
  }
}
