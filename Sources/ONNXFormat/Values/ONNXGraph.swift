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

  public init(
    name: String, nodes: [ONNXNode], initializers: [ONNXTensor] = [], inputs: [ONNXValueInfo], outputs: [ONNXValueInfo],
    valueInfo: [ONNXValueInfo] = [], docString: String = ""
  ) {
    self.name = name
    self.nodes = nodes
    self.initializers = initializers
    self.inputs = inputs
    self.outputs = outputs
    self.valueInfo = valueInfo
    self.docString = docString
  }

  /// The initializer named `name`.
  public func initializer(named name: String) -> ONNXTensor? { initializers.first { $0.name == name } }
}
