/// An ONNX `NodeProto`: one operator application.
public struct ONNXNode: Equatable, Sendable {
  /// May be empty: names are optional for nodes.
  public var name: String
  public var opType: String
  /// The operator set's domain as written; empty for the default `ai.onnx` domain.
  public var domain: String
  /// Value names; an empty name is an optional input that is left out.
  public var inputs: [String]
  /// Value names; an empty name is an optional output that is not produced.
  public var outputs: [String]
  public var attributes: [ONNXAttribute]
  public var docString: String

  public init(
    name: String, opType: String, domain: String = "", inputs: [String], outputs: [String],
    attributes: [ONNXAttribute] = [], docString: String = ""
  ) {
    self.name = name
    self.opType = opType
    self.domain = domain
    self.inputs = inputs
    self.outputs = outputs
    self.attributes = attributes
    self.docString = docString
  }

  /// The attribute named `name`.
  public func attribute(_ name: String) -> ONNXAttribute.Value? { attributes.first { $0.name == name }?.value }
}
