import ModelIR

/// The comparison of one tensor that both graphs compute: a source layer's output and the Core ML blob
/// of the same name (or the model input after preprocessing, or a model output).
public struct LayerParity: Sendable, Equatable, Codable {
  /// The source layer that computes the tensor, and its class (`input` for a preprocessed model input).
  public var sourceLayer: String
  public var sourceType: String
  /// The tensor's name in the source graph (`conv2d_output`, `conv2d__activation___output`, ...).
  public var tensor: String
  /// The Core ML layer writing the blob, and its type (`convolution`, `imageScaler`, ...).
  public var convertedLayer: String
  public var convertedType: String
  public var elements: Int
  public var maxAbsoluteError: Float
  public var maxRelativeError: Float
  public var mismatchedShare: Double
  /// Signal-to-noise ratio in dB; nil when identical.
  public var snrDecibels: Double?
  public var passed: Bool
  /// Set when the two tensors have shapes that cannot hold the same values (the row then fails).
  public var shapeMismatch: String? = nil
}
