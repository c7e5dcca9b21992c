/// The element type and shape of a value flowing through a graph.
///
/// `shape` excludes the batch dimension and is channels-last, as in Keras.
public struct TensorType: Sendable, Equatable, CustomStringConvertible {
  public var dataType: DataType
  public var shape: [Int]

  public init(_ shape: [Int], dataType: DataType = .float32) {
    self.shape = shape
    self.dataType = dataType
  }

  /// The number of elements in one batch item.
  public var elementCount: Int { shape.reduce(1, *) }

  public var description: String { "\(dataType)[" + shape.map(String.init).joined(separator: "x") + "]" }
}
