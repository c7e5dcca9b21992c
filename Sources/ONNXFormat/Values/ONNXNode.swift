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

  /// The attribute named `name`.
  public func attribute(_ name: String) -> ONNXAttribute.Value? { attributes.first { $0.name == name }?.value }

  /// "node 'conv1' (Conv)", or "node #3 (Conv)" for an unnamed node, for messages.
  func label(index: Int) -> String { name.isEmpty ? "node #\(index) (\(opType))" : "node '\(name)' (\(opType))" }
}
