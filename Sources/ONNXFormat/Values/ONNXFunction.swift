/// A model-local ONNX `FunctionProto`: the operator `name` in `domain`, defined by its nodes.
public struct ONNXFunction: Equatable, Sendable {
  public var name: String
  public var domain: String
  public var inputs: [String]
  public var outputs: [String]
  /// Attributes the caller must give (no default).
  public var attributeNames: [String]
  /// Attributes with their default values.
  public var attributeDefaults: [ONNXAttribute]
  public var nodes: [ONNXNode]
  /// Operator set versions the body uses, by domain (default domain: `""`).
  public var opsetImports: [String: Int]
  public var docString: String
}
