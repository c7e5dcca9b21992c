import Foundation
import ModelIR

/// How `ParityVerifier` compares a source model with its Core ML conversion.
public struct VerificationOptions: Sendable, Equatable {
  /// Random inputs to draw (pixels 0-255 for image inputs, uniform in [-1, 1] otherwise).
  public var samples: Int
  public var seed: UInt64
  /// Pass rule per element: `|converted - source| <= absoluteTolerance * max(1, RMS) + relativeTolerance * |source|`
  /// (see `VerificationTolerance`); nil takes the default for the converted model's weight storage
  /// (`VerificationTolerance.defaults(for:)`: 1e-5 and 1e-3 for float32 weights, wider for float16 and quantized ones).
  public var absoluteTolerance: Float?
  public var relativeTolerance: Float?
  /// The preprocessing the source model was trained with (the options given to `convert`): when set, the
  /// converted model's image scaler and channel order must match it, and the source model is fed pixels
  /// preprocessed this way. When nil, the source model gets the converted model's own preprocessing, which
  /// is then reported as not checked.
  public var expectedPreprocessing: ImagePreprocessing?
  /// The preprocessing each image input is expected to keep, by input name, where it differs per input
  /// (a source that declares its own image inputs); `expectedPreprocessing` applies to the others.
  public var expectedPreprocessingByInput: [String: ImagePreprocessing] = [:]
  /// K of the top-K label agreement reported for classifiers.
  public var topK: Int
  /// An HDF5 file with `inputs/<i>`, `outputs/<i>` (and optional `pixels/<i>`) written from the source framework.
  public var reference: URL?
  /// The labels the classifier should have, in output order (from `--labels`); nil to skip the check
  /// unless the reference file names them.
  public var expectedLabels: [String]?
  /// The `model.to_json()` architecture when the source holds weights only.
  public var architecture: URL?
  /// The names the conversion gave the inputs and outputs, in the source's order (its `inputNames` and
  /// `outputNames`): the interface the converted model must have. Nil: the source's own names.
  public var inputNames: [String]?
  public var outputNames: [String]?
  /// Fixed sizes for unknown input dimensions of the source model, as in `ConversionOptions.inputShapes`.
  public var inputShapes: [String: [Int]]
  /// The flexible inputs convert was given (`ConversionOptions.flexibleInputShapes`): the model is checked
  /// at each of `FlexibleInputShape.checkedShapes` (the default's check is the main report) and its
  /// declared sizes against them.
  public var flexibleInputShapes: [String: FlexibleInputShape] = [:]
  /// More reference files, each compared at the input size it holds (a flexible model's other sizes).
  public var moreReferences: [URL] = []
  /// The detector settings convert was given (`ConversionOptions.detector`): a detector pipeline's
  /// thresholds are checked against them and the source's detections made with them. Nil: a pipeline's
  /// own settings are used for both sides (reported as not checked).
  public var detector: DetectorOptions?
  /// Random samples run at once, each on its own core (0: every core). The statistics are accumulated
  /// in sample order, so the report does not depend on it.
  public var threads: Int = 0
  /// The bytes of tensors verify may hold at once (`VerificationMemory`); nil: half of the memory this
  /// process may have (`RuntimeMemory.defaultLimit`). Fewer samples run at once when they do not
  /// fit, and a model one sample of which does not fit is refused.
  public var memoryLimit: Int?
  /// The rule the source model's own storage calls for (a Core ML source with float16 or quantized
  /// weights computes no closer than that); the looser of it and the converted model's rule applies.
  var sourceTolerance: VerificationTolerance?
  /// The source's own multiarray declarations (a Core ML source's features), by name: a converted feature
  /// declared with the same shape holds the same bytes, whatever unit axes make its layout ambiguous.
  var sourceDeclarations: [String: DeclaredArray] = [:]
  /// The source's own image outputs, by name: an image output of the converted model that is not one of
  /// them holds pixels made of the source's values (`Comparison.PixelOutput`).
  var sourceImageOutputs: Set<String> = []
  /// Image inputs the source declares with their own preprocessing: nothing to advise about them.
  var sourceImageInputs: Set<String> = []
  /// The source's streaming states (`ImportedSource.streamingStates`).
  var sourceStates: [StreamingState] = []
  /// Whether a reference file holds the inputs as the source declares them (saved from the source's own
  /// runtime, such as onnxruntime's `[N, C, H, W]`), not in the graph's channels-last layout.
  var referenceInputsAsDeclared = false

  public init(
    samples: Int = 8, seed: UInt64 = 0, absoluteTolerance: Float? = nil, relativeTolerance: Float? = nil, topK: Int = 3,
    reference: URL? = nil, expectedLabels: [String]? = nil, architecture: URL? = nil,
    inputShapes: [String: [Int]] = [:],
    expectedPreprocessing: ImagePreprocessing? = nil
  ) {
    self.expectedPreprocessing = expectedPreprocessing
    self.architecture = architecture
    self.samples = samples
    self.seed = seed
    self.absoluteTolerance = absoluteTolerance
    self.relativeTolerance = relativeTolerance
    self.topK = topK
    self.reference = reference
    self.expectedLabels = expectedLabels
    self.inputShapes = inputShapes
  }

  /// The pass rule for a converted model: the given tolerances, or the default for its weights (`defaultRule`).
  public func tolerance(forDefault defaultRule: VerificationTolerance) -> VerificationTolerance {
    var rule = defaultRule
    if let source = sourceTolerance, let limit = source.maximumRelativeRMS, limit > (rule.maximumRelativeRMS ?? 0) {
      rule = source
    }
    if let absoluteTolerance { rule.absolute = absoluteTolerance }
    if let relativeTolerance { rule.relative = relativeTolerance }
    if absoluteTolerance != nil || relativeTolerance != nil {
      // Given tolerances mean the element rule, as written.
      rule.basis = .given
      rule.maximumRelativeRMS = nil
    }
    return rule
  }
}
