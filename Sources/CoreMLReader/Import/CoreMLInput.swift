import CoreMLCommon
/// A Core ML model input as the IR graph of an imported model sees it.
public struct CoreMLInput: Sendable, Equatable {
  /// How Core ML turns an image into the network's input tensor.
  public struct ImagePreprocessing: Sendable, Equatable {
    /// `GRAYSCALE`, `RGB` or `BGR`: the channel order the network receives.
    public var colorSpace: String
    public var scale: Float
    /// One bias per channel, in the network's channel order (B, G, R for BGR).
    public var biases: [Float]

    public init(colorSpace: String, scale: Float, biases: [Float]) {
      self.colorSpace = colorSpace
      self.scale = scale
      self.biases = biases
    }
  }

  public var name: String
  /// The graph input's shape: `[C, H, W]` (rank-5 mapping) or the declared rank with batch (exact mapping).
  public var shape: [Int]
  /// For image inputs: the graph input holds pixel values 0-255 in the network's channel order, and the
  /// graph applies `scale * x + bias` itself.
  public var image: ImagePreprocessing?
}
