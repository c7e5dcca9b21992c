import ModelIR

/// What `ParityVerifier` found: per-output and per-layer error statistics, the preprocessing check,
/// classifier agreement, timing and a verdict.
public struct ParityReport: Sendable, Equatable, Codable {
  /// What a converted output is compared with.
  public enum Reference: String, Sendable, Equatable, Codable, CustomStringConvertible {
    /// The source model, run by our runtime on the same inputs.
    case sourceModel
    /// The outputs the source framework (as onnxruntime or the training framework saved them) saved in the reference file.
    case referenceOutputs
    /// The reference file's outputs, compared with the source model as our runtime reads it (a check of
    /// the reader and runtime, not of the conversion).
    case referenceOutputsThroughSource

    public var description: String {
      switch self {
      case .sourceModel: return "source model (our runtime)"
      case .referenceOutputs: return "reference outputs (the source framework)"
      case .referenceOutputsThroughSource:
        return "reference outputs (the source framework), checking the source model as our runtime reads it"
      }
    }
  }

  /// Error statistics of one output over all samples.
  public struct OutputParity: Sendable, Equatable, Codable {
    public var name: String
    /// Which inputs were compared: `random` or `reference`.
    public var inputs: String
    /// What the converted model was compared with.
    public var comparedWith: Reference
    public var elements: Int
    public var maxAbsoluteError: Float
    public var maxRelativeError: Float
    /// The share of elements outside `atol + rtol * |expected|`.
    public var mismatchedShare: Double
    /// Signal-to-noise ratio of the converted output in dB; nil when the outputs are identical.
    public var snrDecibels: Double?
    public var passed: Bool
    /// Against another framework's outputs (float32 weights): how far the source's own rounding moves this
    /// output, when measured (`VerificationTolerance.RoundoffSensitivity`).
    public var roundoffSensitivity: VerificationTolerance.RoundoffSensitivity? = nil
  }

  /// Label agreement of a classifier over the same samples.
  public struct ClassifierParity: Sendable, Equatable, Codable {
    public var labels: [String]
    /// The labels the model should have (from `--labels` or the reference file), when known.
    public var expectedLabels: [String]?
    /// Whether `labels` equals `expectedLabels`, in order; nil when nothing was expected.
    public var labelsMatch: Bool?
    public var samples: Int
    /// Share of samples whose predicted label is the same for both models.
    public var top1Agreement: Double
    public var k: Int
    /// Share of samples whose converted top-1 label is among the source's top K.
    public var topKAgreement: Double
    public var passed: Bool
  }

  /// Mean wall time per sample of our runtime on each model.
  public struct Timing: Sendable, Equatable, Codable {
    public var sourceSecondsPerSample: Double
    public var convertedSecondsPerSample: Double
  }

  public var source: String
  public var converted: String
  public var samples: Int
  public var seed: UInt64
  public var absoluteTolerance: Float
  public var relativeTolerance: Float
  /// Where the tolerances come from.
  public var toleranceBasis: VerificationTolerance.Basis
  /// For reduced-precision weights: the largest relative RMS error a tensor may have (see `VerificationTolerance`).
  public var maximumRelativeRMSError: Float?
  public var outputs: [OutputParity]
  /// Every tensor both models compute, in the source model's order: the preprocessed image inputs, the
  /// source layers' outputs (and their pre-activation values, such as the logits before a softmax), the outputs.
  public var layers: [LayerParity]
  /// Whether each row of `layers` was computed from the source's values of the compared tensors before
  /// it (compressed weights, whose rounding every later layer would carry on) rather than from the
  /// converted model's own: each row then measures the layers between it and the row before. `outputs`
  /// are always what the converted model computes on its own.
  public var layersFromSourceValues: Bool
  /// The first row of `layers` that fails: where the two models part.
  public var firstMismatch: LayerParity?
  /// Each image input's preprocessing, checked against the expected one or reported as not checked.
  public var preprocessing: [PreprocessingParity]
  /// Where the converted file breaks a rule Apple documents for its layers (Core ML would refuse the
  /// model or compute something else than our runtime); any violation fails the check.
  public var violations: [SpecificationViolation]
  public var classifier: ClassifierParity?
  /// The converted model's inputs and outputs against the source's (nil when the source was a bare graph).
  public var interface: InterfaceParity?
  /// For a detector pipeline: how its final detections agree with the source's; nil otherwise.
  public var detector: DetectorParity? = nil
  /// A flexible model: each other input size it was checked at (the report's own numbers are the default size's).
  public var shapes: [ShapeParity]? = nil
  public var timing: Timing
  /// The tensors one sample held at most, planned from the shapes, and the samples run at once.
  public var memory: VerificationMemory
  public var passed: Bool
}
