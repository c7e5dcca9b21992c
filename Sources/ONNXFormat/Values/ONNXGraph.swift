/// An ONNX `GraphProto`: nodes in the file's order, constant initializers and typed values.
public struct ONNXGraph: Equatable, Sendable {
  public var name: String
  public var nodes: [ONNXNode]
  /// Constant tensors, each named; a graph input of the same name takes it as its default.
  public var initializers: [ONNXTensor]
  public var inputs: [ONNXValueInfo]
  public var outputs: [ONNXValueInfo]
  /// Types of intermediate values, where the file states them.
  public var valueInfo: [ONNXValueInfo]
  public var docString: String

  /// The initializer named `name`.
  public func initializer(named name: String) -> ONNXTensor? { initializers.first { $0.name == name } }
}
