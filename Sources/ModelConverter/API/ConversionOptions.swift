import Foundation

/// Options for converting a model, named after coremltools' converter parameters.
public struct ConversionOptions: Sendable, Equatable {
  /// New names for the model inputs, in the source's input order (`input_names`); default `input1`, `input2`, ...
  public var inputNames: [String]?
  /// New names for the model outputs, in the source's output order (`output_names`); default `output1`, ...
  public var outputNames: [String]?
  /// Inputs (by their new names) that become images (`image_input_names`).
  public var imageInputNames: [String]
  /// Outputs (by their new names) that become images (coremltools' `ImageType` outputs): an `[H, W, 3]`
  /// or `[H, W, 1]` output whose values are mapped back to pixels by the image preprocessing undone,
  /// `pixel = (value / channelScale - bias) / scale`, RGB, BGR with `isBGR`, or GRAYSCALE.
  public var imageOutputNames: [String] = []
  /// Makes a classifier when set (`class_labels`).
  public var classLabels: ClassLabels?
  /// `image_scale`: multiplies every pixel before the biases are added.
  public var imageScale: Float
  public var redBias: Float
  public var greenBias: Float
  public var blueBias: Float
  public var grayBias: Float
  /// `is_bgr`: the model expects BGR channel order.
  public var isBGR: Bool
  /// PyTorch-style normalization `(pixel / 255 - mean) / std` per channel (R, G, B, or one value for
  /// grayscale), instead of the scale and biases; `imageStd` defaults to ones.
  public var imageMean: [Float]?
  public var imageStd: [Float]?
  /// `predicted_feature_name`: the output holding the top label.
  public var predictedFeatureName: String
  /// `predicted_probabilities_output`: the output (new name) holding the probabilities; default the first.
  public var predictedProbabilitiesOutput: String?
  /// The file format written (`convert_to`): a neural-network `.mlmodel` or an ML Program `.mlpackage`.
  public var format: ModelFormat
  /// `minimum_deployment_target`: the oldest release the model must load on. Nil: the oldest the model
  /// allows (iOS 15 for an ML Program).
  public var target: DeploymentTarget?
  /// `model_precision` / `compute_precision`; nil: the format's default (float16 for an ML Program, as
  /// coremltools does, float32 for a neural network).
  public var precision: WeightPrecision?
  /// Weight compression (coremltools' `ct.optimize.coreml` palettize / linear quantize) for an ML
  /// Program; nil stores weights at `precision`.
  public var compression: WeightCompression?
  public var author: String?
  public var license: String?
  public var shortDescription: String?
  public var version: String?
  /// `input_name_shape_dict`: shapes `[1, H, W, C]` for inputs with unknown dimensions, by source or new name.
  public var inputShapes: [String: [Int]]
  /// Inputs that accept more than one size (coremltools' `RangeDim` and `EnumeratedShapes`), by source or
  /// new name, in the source's layout: the model is converted at each one's default shape (which
  /// `inputShapes` need not repeat), proved to compute the others by converting again at the range's
  /// bounds and an odd size between (every enumerated shape), and written with the sizes declared.
  public var flexibleInputShapes: [String: FlexibleInputShape] = [:]
  /// Whether layers the reader does not know become Core ML custom layers (coremltools'
  /// `add_custom_layers`) instead of an error.
  public var unknownLayersAsCustom: Bool
  /// Settings for one frontend only, by type, such as conversions for layer classes a reader does not
  /// know (coremltools' `custom_conversion_functions`), which that frontend documents.
  public var frontendSettings: FrontendSettings
  /// Converts models whose weights hold NaN, infinity, values beyond float32's range or a negative
  /// BatchNormalization variance (`--allow-nonfinite`). Off by default: such a model computes NaN or
  /// infinity in Core ML, so the conversion is refused with `ConversionError.invalidWeightValue`.
  public var allowNonFinite: Bool
  /// Makes an object detector when set: the network's raw output decoded and suppressed by Core ML's
  /// non-maximum suppression in a pipeline (Ultralytics' `nms=True` export); `classLabels` then names
  /// the detector's classes (default: the names the source's metadata carries).
  public var detector: DetectorOptions?
  /// The architecture file when the source holds weights only (an architecture JSON beside a weights-only file).
  public var architecture: URL?

  public init(
    inputNames: [String]? = nil, outputNames: [String]? = nil, imageInputNames: [String] = [],
    classLabels: ClassLabels? = nil, imageScale: Float = 1, redBias: Float = 0, greenBias: Float = 0,
    blueBias: Float = 0, grayBias: Float = 0, isBGR: Bool = false, predictedFeatureName: String = "classLabel",
    predictedProbabilitiesOutput: String? = nil, format: ModelFormat = .neuralNetwork, target: DeploymentTarget? = nil,
    precision: WeightPrecision? = nil, author: String? = nil,
    license: String? = nil, shortDescription: String? = nil, version: String? = nil, inputShapes: [String: [Int]] = [:],
    unknownLayersAsCustom: Bool = false, frontendSettings: FrontendSettings = FrontendSettings(),
    allowNonFinite: Bool = false
  ) {
    self.unknownLayersAsCustom = unknownLayersAsCustom
    self.frontendSettings = frontendSettings
    self.allowNonFinite = allowNonFinite
    self.inputNames = inputNames
    self.outputNames = outputNames
    self.imageInputNames = imageInputNames
    self.classLabels = classLabels
    self.imageScale = imageScale
    self.redBias = redBias
    self.greenBias = greenBias
    self.blueBias = blueBias
    self.grayBias = grayBias
    self.isBGR = isBGR
    self.predictedFeatureName = predictedFeatureName
    self.predictedProbabilitiesOutput = predictedProbabilitiesOutput
    self.format = format
    self.target = target
    self.precision = precision
    self.author = author
    self.license = license
    self.shortDescription = shortDescription
    self.version = version
    self.inputShapes = inputShapes
  }

  /// The precision used: the one given, else the format's default.
  public var resolvedPrecision: WeightPrecision { precision ?? (format == .mlProgram ? .float16 : .float32) }

  /// The part of these options that says how the source is read.
  public var sourceOptions: SourceOptions {
    SourceOptions(
      inputNames: inputNames, outputNames: outputNames,
      inputShapes: inputShapes.merging(flexibleInputShapes.mapValues(\.defaultShape)) { _, flexible in flexible },
      unknownLayersAsCustom: unknownLayersAsCustom, settings: frontendSettings,
      architecture: architecture)
  }

  /// The image preprocessing shared by every image input.
  public var imagePreprocessing: ImagePreprocessing {
    if let imageMean {
      return ImagePreprocessing(
        mean: imageMean, std: imageStd ?? [Float](repeating: 1, count: imageMean.count), isBGR: isBGR)
    }
    return ImagePreprocessing(
      scale: imageScale, redBias: redBias, greenBias: greenBias, blueBias: blueBias, grayBias: grayBias, isBGR: isBGR)
  }
}
