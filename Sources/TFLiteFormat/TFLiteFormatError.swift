import ModelFormats

/// Why a `.tflite` file could not be read or imported.
public enum TFLiteFormatError: Error, Equatable, CustomStringConvertible {
  case unreadable(path: String)
  case notRegularFile(path: String)
  /// A field of the file is out of range or inconsistent (the field named as schema.fbs names it).
  case invalid(path: String, field: String, detail: String)
  /// Operators no Core ML layer computes here (custom operators by their code), all named at once.
  case unsupportedOperators(path: String, operators: [String])
  /// An operator whose inputs or options this importer cannot express.
  case unsupportedOperator(path: String, operator: String, index: Int, detail: String)

  public var description: String {
    switch self {
    case .unreadable(let path): return "\(path): cannot read the file"
    case .notRegularFile(let path): return "\(path): not a regular file"
    case .invalid(let path, let field, let detail): return "\(path): TensorFlow Lite model, \(field): \(detail)"
    case .unsupportedOperators(let path, let operators):
      return "\(path): operators this converter cannot express: \(operators.joined(separator: ", "))"
    case .unsupportedOperator(let path, let op, let index, let detail):
      return "\(path): operator \(index) (\(op)): \(detail)"
    }
  }
}

extension TFLiteFormatError: KindedError {
  public var kind: ErrorKind {
    switch self {
    case .unreadable, .notRegularFile: return .missingInput
    case .invalid, .unsupportedOperators, .unsupportedOperator: return .badModel
    }
  }
}
