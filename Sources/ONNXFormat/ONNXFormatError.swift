import Foundation
import ModelFormats

/// Why an ONNX file could not be read, or a tensor's values not converted. The description names the
/// file and, below it, where in the file the fault is (graph, node with its op type, attribute,
/// initializer, field).
public enum ONNXFormatError: Error, Equatable, Sendable, CustomStringConvertible {
  /// The file cannot be opened or read, is not a regular file, or is too large.
  case unreadable(path: String, detail: String)
  /// The file is something else (`kind`: "an HTML page", "a text file", "an HDF5 file", ...).
  case notONNX(path: String, kind: String)
  /// The bytes are not a valid protobuf message of the expected kind (truncated or corrupt).
  case malformed(path: String, detail: String)
  /// A field breaks the ONNX specification or a size limit; `location` says where.
  case invalid(path: String, location: String, detail: String)
  /// Valid ONNX that the reader does not read (sparse tensors, complex and 8-bit types, segments, ...).
  case unsupported(path: String, location: String, detail: String)
  /// A tensor's values cannot be given in the requested Swift type without changing them.
  case notRepresentable(tensor: String, detail: String)

  public var description: String {
    func at(_ location: String) -> String { location.isEmpty ? "" : location + ": " }
    switch self {
    case .unreadable(let path, let detail): return "\(path): cannot read the file: \(detail)"
    case .notONNX(let path, let kind): return "\(path): \(kind), not an ONNX file"
    case .malformed(let path, let detail):
      return "\(path): not a valid ONNX file (truncated or corrupt protobuf): \(detail)"
    case .invalid(let path, let location, let detail): return "\(path): \(at(location))\(detail)"
    case .unsupported(let path, let location, let detail): return "\(path): \(at(location))not supported: \(detail)"
    case .notRepresentable(let tensor, let detail): return "tensor '\(tensor)': \(detail)"
    }
  }
}

extension ONNXFormatError: LocalizedError {
  /// The same text as `description`.
  public var errorDescription: String? { description }
}

extension ONNXFormatError: KindedError {
  public var kind: ErrorKind {
    if case .unreadable = self { return .missingInput }
    return .badModel
  }
}
