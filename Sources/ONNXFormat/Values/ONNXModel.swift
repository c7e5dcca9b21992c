/// An ONNX `ModelProto`: the metadata, the operator sets it imports and its main graph.
public struct ONNXModel: Equatable, Sendable {
  /// The IR version the file was written for (3...10 are read).
  public var irVersion: Int
  /// Operator set versions by domain; the default domain (`ai.onnx`) is the empty string.
  public var opsetImports: [String: Int]
  public var producerName: String
  public var producerVersion: String
  public var domain: String
  public var modelVersion: Int
  public var docString: String
  /// Named metadata values (a key given twice keeps its last value).
  public var metadataProps: [String: String]
  public var graph: ONNXGraph
  /// Model-local functions (IR 8 and later), operators defined by a body of nodes.
  public var functions: [ONNXFunction]
  /// The real paths of the files its external data was read from (none when all data is inline).
  public var externalDataFiles: [String] = []

  /// The version of the operator set imported for `domain` (`""` and `"ai.onnx"` are the same domain).
  public func opsetVersion(domain: String) -> Int? {
    opsetImports[domain == "ai.onnx" ? "" : domain]
  }
}
