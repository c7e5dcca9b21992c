/// The source-format layer a node was made from: a Keras layer's name and class, or a Core ML
/// layer's name and type. Verification uses it to name the layer where two graphs part.
public struct LayerOrigin: Sendable, Equatable, Hashable, Codable {
  public var name: String
  /// The Keras class name (`Conv2D`) or the Core ML layer type (`convolution`).
  public var type: String

  public init(name: String, type: String) {
    self.name = name
    self.type = type
  }
}
