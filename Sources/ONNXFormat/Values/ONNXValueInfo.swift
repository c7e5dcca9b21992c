/// A named, typed ONNX value (`ValueInfoProto`): a graph input, output or intermediate value.
public struct ONNXValueInfo: Equatable, Sendable {
  public var name: String
  public var type: ONNXType
  public var docString: String

  public init(name: String, type: ONNXType, docString: String = "") {
    self.name = name
    self.type = type
    self.docString = docString
  }

  /// The element type when the value is a dense tensor.
  public var elementType: ONNXDataType? {
    if case .tensor(let type, _) = type { return type }
    return nil
  }

  /// The declared shape when the value is a dense tensor of known rank.
  public var shape: [ONNXDimension]? {
    if case .tensor(_, let shape) = type { return shape }
    return nil
  }
}
