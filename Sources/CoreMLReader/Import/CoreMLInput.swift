import CoreMLCommon

/// A Core ML model input as the IR graph of an imported model sees it.
public struct CoreMLInput: Sendable, Equatable {
  public var name: String
  /// The graph input's shape: `[C, H, W]` (rank-5 mapping) or the declared rank with batch (exact mapping).
  public var shape: [Int]
  /// For image inputs: the graph input holds pixel values 0-255 in the network's channel order, and the
  /// graph applies `scale * x + bias` itself.
  public var image: ImagePreprocessing?
  /// For image inputs: the channel order the network receives (`image.isBGR` agrees with it).
  public var colorSpace: ImageColorSpace?

  init(name: String, shape: [Int]) {
    self.name = name
    self.shape = shape
  }

  /// An image input, its scale and biases (in the network's channel order) as the importer found them.
  init(name: String, shape: [Int], colorSpace: ImageColorSpace, scale: Float, networkBiases: [Float]) {
    self.name = name
    self.shape = shape
    self.image = ImagePreprocessing(colorSpace: colorSpace, scale: scale, networkBiases: networkBiases)
    self.colorSpace = colorSpace
  }

  /// For image inputs: the biases in the network's channel order (B, G, R for BGR).
  public var networkBiases: [Float]? {
    guard let image, let colorSpace else { return nil }
    return image.networkBiases(channels: colorSpace.channels)
  }
}
