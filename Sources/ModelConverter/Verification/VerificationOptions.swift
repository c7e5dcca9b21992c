import Foundation

/// How `ParityVerifier` compares a Keras model with its Core ML conversion.
public struct VerificationOptions: Sendable, Equatable {
  /// Random inputs to draw (pixels 0-255 for image inputs, uniform in [-1, 1] otherwise).
  public var samples: Int
  public var seed: UInt64
  /// Pass rule per element: `|converted - source| <= absoluteTolerance + relativeTolerance * |source|`.
  public var absoluteTolerance: Float
  public var relativeTolerance: Float
  /// K of the top-K label agreement reported for classifiers.
  public var topK: Int
  /// An HDF5 file with `inputs/<i>`, `outputs/<i>` (and optional `pixels/<i>`) written from real Keras.
  public var reference: URL?
  /// The labels the classifier should have, in output order (from `--labels`); nil to skip the check
  /// unless the reference file names them.
  public var expectedLabels: [String]?
  /// The `model.to_json()` architecture when the source is a weights-only `.h5` (Keras 1 files, `save_weights`).
  public var architecture: URL?
  /// Fixed sizes for unknown input dimensions of the Keras model, as in `ConversionOptions.inputShapes`.
  public var inputShapes: [String: [Int]]

  public init(
    samples: Int = 8, seed: UInt64 = 0, absoluteTolerance: Float = 1e-5, relativeTolerance: Float = 1e-3, topK: Int = 3,
    reference: URL? = nil, expectedLabels: [String]? = nil, architecture: URL? = nil, inputShapes: [String: [Int]] = [:]
  ) {
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
}
