import ModelConverter

/// Every option of every command, declared once: its spellings, value placeholder, help and the help
/// section it is listed under unless a command lists it under its own heading (`inSection`, which keeps
/// names and help). Commands build their `specs` from these constants and the shared groups below, and
/// read them back by declaration (`parsed.value(Options.imageScale)`): a misspelt option does not
/// compile, and reading one the command did not declare stops at once (`ParsedArguments`).
///
/// Help texts are written to be true for every command that lists the option; what only one command
/// does with it is said in that command's discussion.
enum Options {
  // MARK: Output (convert)

  static let output = OptionSpec.option(
    "-o", "--output", value: "PATH", section: "OUTPUT",
    help:
      "Output file or package; an existing folder (not a package) receives <input name>.mlmodel or .mlpackage. Default: the input's path with .mlmodel, or .mlpackage for --format mlprogram."
  )
  static let format = OptionSpec.option(
    "--format", value: "neuralnetwork|mlprogram", section: "OUTPUT",
    help:
      "neuralnetwork: one .mlmodel file of classic layers (iOS 11+); mlprogram: an .mlpackage folder with MIL operations and a weight file (iOS 15+). Default: from the output name (.mlpackage is mlprogram), else neuralnetwork."
  )
  static let target = OptionSpec.option(
    "--target", value: "RELEASE", section: "OUTPUT",
    help:
      "Oldest release the model must load on: iOS11-iOS18, macOS10.13-macOS15, tvOS11-tvOS18, watchOS4-watchOS11. Picks the lowest specification version and opset it allows and refuses a model it cannot load. Default: what the model needs (iOS15 for an ML Program)."
  )
  static let precision = OptionSpec.option(
    "--precision", value: "float32|float16", section: "OUTPUT",
    help:
      "float16 stores weights as half floats (an error for a weight beyond 65504), and an ML Program also computes in float16. Default: float16 for mlprogram, float32 for neuralnetwork."
  )

  // MARK: Names and shapes (convert, verify; shapes also predict, evaluate, inspect)

  static let inputNames = OptionSpec.option(
    "--input-names", value: "A,B", section: "NAMES",
    help:
      "The Core ML names of the inputs, in the source's order (default: the source's names, or input1, input2, ... for a source whose names are internal)."
  )
  static let outputNames = OptionSpec.option(
    "--output-names", value: "X,Y", section: "NAMES",
    help: "The Core ML names of the outputs (default: the source's names, or output1, ... as for inputs).")
  static let inputShape = OptionSpec.option(
    "--input-shape", value: "NAME=1,H,W,C",
    help:
      "Shape for a source input with unknown dimensions (repeatable); give the other commands the shapes convert was given. A size may be a range LO:HI (LO:* unbounded, LO:HI:DEFAULT), and the option repeated for one input enumerates its shapes (the first is the default): the model then accepts each size (see Docs/FlexibleShapes.md)."
  )

  // MARK: Image inputs and preprocessing (convert, verify, predict, evaluate)

  static let imageSection = "IMAGE INPUTS (network input = scale * pixel + bias)"

  static let imageInput = OptionSpec.option(
    "--image-input", "--image-input-names", value: "NAME", section: imageSection,
    help: "Make this input an image (repeatable, or a comma list).")
  static let imageScale = OptionSpec.option(
    "--image-scale", value: "S", section: imageSection,
    help:
      "Multiplies every pixel before the bias is added (network input = scale * pixel + bias): a number or a fraction such as 1/255 (default 1)."
  )
  static let redBias = OptionSpec.option(
    "--red-bias", value: "B", section: imageSection, help: "Added to the red channel after scaling (default 0).")
  static let greenBias = OptionSpec.option(
    "--green-bias", value: "B", section: imageSection, help: "Added to the green channel (default 0).")
  static let blueBias = OptionSpec.option(
    "--blue-bias", value: "B", section: imageSection, help: "Added to the blue channel (default 0).")
  static let grayBias = OptionSpec.option(
    "--gray-bias", value: "B", section: imageSection, help: "Added to a one-channel (grayscale) image (default 0).")
  static let bgr = OptionSpec.flag(
    "--bgr", section: imageSection, help: "The source model was trained on BGR channel order.")
  static let imageMean = OptionSpec.option(
    "--image-mean", value: "R,G,B", section: imageSection,
    help:
      "network input = (pixel / 255 - mean) / std per channel, as torchvision's Normalize: the means in R, G, B order (one value for a grayscale input), e.g. 0.485,0.456,0.406. Instead of --image-scale and the biases."
  )
  static let imageStd = OptionSpec.option(
    "--image-std", value: "R,G,B", section: imageSection,
    help: "The standard deviations for --image-mean (default 1 for each channel), e.g. 0.229,0.224,0.225.")
  static let imageOutput = OptionSpec.option(
    "--image-output", value: "NAME", section: "IMAGE OUTPUTS (pixel = (network output - bias) / scale)",
    help:
      "Make this [1, H, W, 3] or [1, H, W, 1] output an image (repeatable, or a comma list): the image options above undone give its pixels, RGB (BGR with --bgr) or GRAYSCALE; an ML Program needs iOS 16."
  )

  // MARK: Classifier (convert; labels also verify, predict, evaluate)

  static let labelList = OptionSpec.option(
    "--labels", value: "L1,L2,...",
    help: "Class labels in output order (a comma list, or repeated); all integers give int64 labels.")
  static let labelsFile = OptionSpec.option(
    "--labels-file", value: "FILE", help: "The same, one label per line, or Teachable Machine's \"index label\" lines.")
  static let predictedFeatureName = OptionSpec.option(
    "--predicted-feature-name", value: "NAME", section: "CLASSIFIER",
    help: "Output holding the top label (default classLabel).")
  static let predictedProbabilitiesOutput = OptionSpec.option(
    "--predicted-probabilities-output", value: "NAME", section: "CLASSIFIER",
    help: "Output holding the probabilities (default the first output).")

  // MARK: Detector (convert; verify, predict and evaluate read the thresholds)

  static let detectorSection = "OBJECT DETECTOR (a pipeline ending in Core ML's non-maximum suppression, for Vision)"

  static let detector = OptionSpec.option(
    "--detector", value: "yolo", section: detectorSection,
    help:
      "Make an object detector: the network's raw output [1, 4 + classes, anchors] (YOLOv8, YOLO11) or [1, anchors, 5 + classes] (YOLOv5, with objectness) decoded into confidence and normalized coordinates, then suppressed; labels from --labels, else the names in the model's metadata."
  )
  static let iouThreshold = OptionSpec.option(
    "--iou-threshold", value: "T", section: detectorSection,
    help:
      "Suppress boxes overlapping a kept box by more than this IoU (convert: default 0.45, kept in the pipeline, an optional input overrides it; predict: default the model's; evaluate: default 0.7, as Ultralytics validates)."
  )
  static let confidenceThreshold = OptionSpec.option(
    "--confidence-threshold", value: "T", section: detectorSection,
    help:
      "Drop boxes whose best class confidence is below this (convert: default 0.25, kept in the pipeline, an optional input overrides it; predict: default the model's; evaluate: default 0.001, as Ultralytics validates)."
  )
  static let agnosticNMS = OptionSpec.flag(
    "--agnostic-nms", section: detectorSection,
    help: "Suppress overlapping boxes across classes (default: within each class, as Ultralytics does).")
  static let maxDetections = OptionSpec.option(
    "--max-detections", value: "N", section: detectorSection, help: "Return at most N detections (default: no limit).")
  static let noClassPadding = OptionSpec.flag(
    "--no-class-padding", section: detectorSection,
    help:
      "Do not pad an ML Program detector's classes to a multiple of 80 (zero confidences, unused labels), the workaround Ultralytics applies for Core ML's suppression after ML Programs."
  )

  static let annotate = OptionSpec.option(
    "--annotate", value: "OUT.png", section: detectorSection,
    help:
      "Write the photo with each detection drawn (its box and a tag with its label and confidence) as a PNG; with several photos, a folder that receives one PNG per photo."
  )
  static let mapMethod = OptionSpec.option(
    "--map-method", value: "coco|ultralytics", section: detectorSection,
    help:
      "How average precision is computed: coco (pycocotools' 101 recall points, the default) or ultralytics (its validator's matching and trapezoid integration, the numbers its val prints)."
  )

  // MARK: Weight compression (convert)

  static let compressionSection = "WEIGHT COMPRESSION (ML Program, iOS 16+)"

  static let palettize = OptionSpec.option(
    "--palettize", value: "BITS", section: compressionSection,
    help:
      "Store each weight tensor as a k-means lookup table of 2^BITS values (1, 2, 4, 6 or 8; 3 for iOS 18) and BITS-bit indices, as coremltools' palettize_weights (kmeans, per tensor)."
  )
  static let palettizeGroups = OptionSpec.option(
    "--palettize-groups", value: "G", section: compressionSection,
    help:
      "With --palettize: one table per group of G output channels (iOS 18's per_grouped_channel granularity; needs --target iOS18 or none)."
  )
  static let quantize = OptionSpec.option(
    "--quantize", value: "BITS", section: compressionSection,
    help:
      "Store each weight tensor as 8-bit (or, for iOS 18, 4-bit) integers with a scale per output channel, as coremltools' linear_quantize_weights."
  )
  static let quantizeBlockSize = OptionSpec.option(
    "--quantize-block-size", value: "B", section: compressionSection,
    help:
      "With --quantize: a scale per block of B input channels within each output channel (iOS 18's per_block granularity)."
  )
  static let prune = OptionSpec.option(
    "--prune", value: "FRACTION", section: compressionSection,
    help:
      "Zero this share (0 to 1, exclusive) of each weight tensor's elements, the smallest in magnitude, and store the rest with a bit mask, as coremltools' prune_weights (OpMagnitudePrunerConfig target_sparsity)."
  )
  static let quantizeMode = OptionSpec.option(
    "--quantize-mode", value: "symmetric|affine", section: compressionSection,
    help:
      "symmetric: int8, w = scale * q (default); affine: uint8 with a zero point per channel, w = scale * (q - zero).")
  static let compressMinSize = OptionSpec.option(
    "--compress-min-size", value: "N", section: compressionSection,
    help: "Weight tensors with fewer elements stay as they are (default 2048, coremltools' weight_threshold).")
  static let compressSeed = OptionSpec.option(
    "--compress-seed", value: "S", section: compressionSection,
    help: "Seed of the k-means++ initialisation (default 0): the same model and seed give the same file.")

  // MARK: Metadata (convert)

  static let author = OptionSpec.option("--author", value: "TEXT", section: "METADATA", help: "Model author.")
  static let license = OptionSpec.option("--license", value: "TEXT", section: "METADATA", help: "Model license.")
  static let shortDescription = OptionSpec.option(
    "--short-description", value: "TEXT", section: "METADATA", help: "What the model does.")
  static let modelVersion = OptionSpec.option(
    "--model-version", value: "TEXT", section: "METADATA", help: "The model's own version string (not modelconv's).")

  // MARK: Verification and sampling (convert --verify, verify; threads and top-k also predict, evaluate)

  static let verify = OptionSpec.flag(
    "--verify", section: "VERIFICATION",
    help:
      "After writing, run `modelconv verify` on the result with the labels and image preprocessing given here (exit 1 when parity breaks; the file is kept). --samples, --threads, --seed, --atol and --rtol apply to it only."
  )
  static let samples = OptionSpec.option(
    "--samples", value: "N", section: "SAMPLING", help: "Random inputs to draw (default 8, at most 10000).")
  static let threads = OptionSpec.option(
    "--threads", value: "N",
    help: "Samples or images processed at once (default: every core); the results do not depend on it.")
  static let seed = OptionSpec.option(
    "--seed", value: "S", section: "SAMPLING", help: "Seed for the random inputs (default 0).")
  static let atol = OptionSpec.option(
    "--atol", value: "A", section: "SAMPLING",
    help: "Absolute tolerance, >= 0 (default 1e-5 for float32); giving --atol or --rtol applies the element rule.")
  static let rtol = OptionSpec.option(
    "--rtol", value: "R", section: "SAMPLING", help: "Relative tolerance, >= 0 (default 1e-3 for float32).")
  static let topK = OptionSpec.option(
    "--top-k", value: "K",
    help:
      "How many of the best-scored labels count (default 3): those printed per image, or the K of top-K accuracy and agreement."
  )
  static let reference = OptionSpec.option(
    "--reference", value: "FILE", section: "OTHER",
    help:
      "Also compare with the inputs and outputs saved from the source framework in this HDF5 file (inputs/<i>, outputs/<i>, optional pixels/<i> and a labels attribute), with the inputs as the source's own runtime takes them (channels last, or as the model declares them, such as NCHW). Repeatable for a flexible model: each file is compared at the input size it holds."
  )
  static let layers = OptionSpec.flag(
    "--layers", section: "OTHER", help: "Print every compared layer, not only the first mismatch.")

  // MARK: Prediction and evaluation (predict, evaluate)

  static let crop = OptionSpec.option(
    "--crop", value: "center|fit|fill",
    help:
      "How images are fitted to the input size: center scales the short side to fit and crops the long one (default); fit scales the long side to fit and pads with black; fill stretches to the input size."
  )
  static let against = OptionSpec.option(
    "--against", value: "MODEL", help: "A second model to run on the same images and compare with.")
  static let report = OptionSpec.option(
    "--report", value: "FILE.html",
    help: "Write a self-contained HTML page: the confusion matrix as a picture and thumbnails of misclassified images.")

  // MARK: Source reading and output (several commands)

  static let allowNonfinite = OptionSpec.flag(
    "--allow-nonfinite", section: "OTHER",
    help:
      "Write NaN or infinite weights and negative BatchNormalization variances as they are (refused by default: Core ML computes garbage)."
  )
  static let customLayers = OptionSpec.flag(
    "--custom-layers", section: "OTHER",
    help:
      "Make unknown layers Core ML custom layers (class name, config values as parameters, weights) instead of failing; the app implements them."
  )
  static let architecture = OptionSpec.option(
    "--architecture", value: "FILE.json", section: "OTHER",
    help: "Read the source as weights only, with this model.to_json() architecture.")
  static let json = OptionSpec.flag(
    "--json",
    help:
      "Print the result as JSON instead of text, each document naming its schema (as above) in a \"schema\" key; a failure is a modelconv.error/1 document."
  )

  // MARK: Build

  static let manifest = OptionSpec.option(
    "--manifest", value: "FILE", help: "The manifest (default: modelconv.json in the current folder).")
  static let jobs = OptionSpec.option(
    "-j", "--jobs", value: "N", help: "Models converted at once (default: every core).")
  static let only = OptionSpec.option(
    "--only", value: "NAME", help: "Build only these entries (repeatable, or a comma list).")
  static let outputDir = OptionSpec.option(
    "--output-dir", value: "DIR",
    help: "Resolve relative outputs against this folder instead of the manifest's (and keep the state there).")
  static let force = OptionSpec.flag("--force", help: "Convert every entry, even those up to date.")
  static let printSchema = OptionSpec.flag(
    "--print-schema", help: "Print the manifest's JSON Schema (generated from convert's options) and exit.")

  /// `-h`, `--help`, which every command takes.
  static let help = OptionSpec.flag("-h", "--help", section: "OTHER", help: "Show this help")

  // MARK: Groups that several commands share

  /// The Core ML names of the inputs and outputs: `convert` gives them, `verify` is told them.
  static let names = [inputNames, outputNames]
  /// Sizes for a source's unknown dimensions: `convert`, `verify`, `predict`, `evaluate`, `inspect`.
  static let shapes = [inputShape]
  /// `--image-scale` and the biases: `scale * pixel + bias`.
  static let scaleAndBiases = [imageScale, redBias, greenBias, blueBias, grayBias]
  /// torchvision's `(pixel / 255 - mean) / std`, instead of the scale and biases.
  static let normalization = [imageMean, imageStd]
  /// How a source model's image inputs were preprocessed in training: `convert` builds it into the
  /// model, `verify` checks it, `predict` and `evaluate` apply it to a model that declares no image inputs.
  static let imagePreprocessing = scaleAndBiases + [bgr] + normalization
  /// Class labels: `convert` makes a classifier, `verify` expects them, `predict` and `evaluate` print them.
  static let labels = [labelList, labelsFile]
  /// How verification samples and compares: `verify`, and `convert --verify` (both list `--threads`
  /// after them, which `predict` and `evaluate` take too).
  static let sampling = [samples, seed, atol, rtol]
  /// Weight compression (`convert`).
  static let compression = [
    palettize, palettizeGroups, quantize, quantizeBlockSize, prune, quantizeMode, compressMinSize, compressSeed,
  ]
  /// The model's metadata (`convert`).
  static let metadata = [author, license, shortDescription, modelVersion]
  /// An object detector's decoding and suppression (`convert`).
  static let detection = detectorSettings + [noClassPadding]
  /// What a detector's decoding and suppression should be (`verify` checks a pipeline against them).
  static let detectorSettings = [detector, iouThreshold, confidenceThreshold, agnosticNMS, maxDetections]

  /// The groups above by name, for the tests that check each command lists a group as declared here.
  static let groups: [(name: String, specs: [OptionSpec])] = [
    ("names", names), ("shapes", shapes), ("imagePreprocessing", imagePreprocessing), ("labels", labels),
    ("sampling", sampling),
    ("compression", compression), ("metadata", metadata), ("detectorSettings", detectorSettings),
  ]

  /// Every option declared here; a command's specs may hold only these.
  static let all: [OptionSpec] =
    [output, format, target, precision] + names + shapes + [imageInput] + imagePreprocessing + [imageOutput] + labels
    + [predictedFeatureName, predictedProbabilitiesOutput] + detection + compression + metadata + [verify] + sampling
    + [
      threads, topK, reference, layers,
    ]
    + [crop, against, report, annotate, mapMethod] + [allowNonfinite, customLayers, architecture, json] + [
      manifest, jobs, only, outputDir, force, printSchema, help,
    ]
}

extension OptionSpec {
  /// The same option listed under another heading of a command's help: names, value and help unchanged.
  func inSection(_ section: String) -> OptionSpec {
    var copy = self
    copy.section = section
    return copy
  }

  /// Whether `other` is this option as declared in `Options` (perhaps under another heading).
  func isSameDeclaration(as other: OptionSpec) -> Bool {
    names == other.names && value == other.value && help == other.help
  }
}

extension Array where Element == OptionSpec {
  /// These options listed under another heading of a command's help.
  func inSection(_ section: String) -> [OptionSpec] { map { $0.inSection(section) } }
}

/// Readers of the shared groups.
extension ParsedArguments {
  /// `--labels` or `--labels-file` (`convert`, `verify`, `predict`, `evaluate`).
  func classLabels() throws -> ClassLabels? {
    if isGiven(Options.labelList) && isGiven(Options.labelsFile) {
      throw UsageError(message: "give --labels or --labels-file, not both")
    }
    if let labels = try list(Options.labelList) { return try ClassLabels.parse(labels) }
    if let file = value(Options.labelsFile) { return try ClassLabels.load(fromFile: file) }
    return nil
  }

  /// Every `--input-shape NAME=1,H,W,C`: the shape of each input, a flexible one at its default.
  func inputShapes() throws -> [String: [Int]] {
    try inputShapeSpecifications().mapValues(\.defaultShape)
  }

  /// The `--input-shape` inputs that accept more than one size: a range (`LO:HI`, `LO:*`, `LO:HI:DEFAULT`)
  /// in a dimension, or the option repeated for one input (enumerated shapes, the first the default).
  func flexibleInputShapes() throws -> [String: FlexibleInputShape] {
    try inputShapeSpecifications().filter { $0.value.isFlexible }
  }

  private func inputShapeSpecifications() throws -> [String: FlexibleInputShape] {
    var given: [(String, FlexibleInputShape)] = []
    for entry in values(Options.inputShape) {
      let parts = entry.split(separator: "=", maxSplits: 1)
      guard parts.count == 2, !parts[0].isEmpty, let shape = FlexibleInputShape.parse(parts[1]) else {
        throw UsageError(
          message:
            "--input-shape needs NAME=1,H,W,C (a size may be a range LO:HI, LO:* or LO:HI:DEFAULT), got '\(entry)'")
      }
      given.append((String(parts[0]), shape))
    }
    var shapes: [String: FlexibleInputShape] = [:]
    for name in Set(given.map(\.0)).sorted() {
      let all = given.filter { $0.0 == name }.map(\.1)
      guard let combined = FlexibleInputShape.combining(all) else {
        throw UsageError(
          message:
            "--input-shape for '\(name)': a range cannot be repeated; repeat fixed shapes to enumerate them, or give one shape with ranges"
        )
      }
      if let problem = combined.problem {
        throw UsageError(message: "--input-shape for '\(name)': \(problem)")
      }
      shapes[name] = combined
    }
    return shapes
  }
}
