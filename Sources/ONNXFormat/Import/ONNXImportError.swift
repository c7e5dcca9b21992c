import ModelFormats

/// Why an ONNX graph cannot be imported into the IR.
public enum ONNXImportError: Error, Equatable, CustomStringConvertible {
  /// Operators with no handler at the model's opset, every one at once: `domain::op` names with counts.
  case unsupportedOperators(path: String, operators: [String], opset: Int)
  /// A node whose attributes or inputs its operator's specification does not allow, or that this
  /// importer does not compute (the node and the field named).
  case invalidNode(path: String, node: String, opType: String, detail: String)
  /// A graph input, output or value the importer cannot give a shape.
  case invalidGraph(path: String, detail: String)

  public var description: String {
    switch self {
    case .unsupportedOperators(let path, let operators, let opset):
      return
        "\(path): \(operators.count) operator\(operators.count == 1 ? " is" : "s are") not supported at opset \(opset): \(operators.joined(separator: ", "))"
    case .invalidNode(let path, let node, let opType, let detail):
      return "\(path): node '\(node)' (\(opType)): \(detail)"
    case .invalidGraph(let path, let detail):
      return "\(path): \(detail)"
    }
  }
}

extension ONNXImportError: KindedError {
  public var kind: ErrorKind { .badModel }
}
