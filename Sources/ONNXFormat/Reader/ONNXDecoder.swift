import CProtobufC
import Foundation
import ONNXSpec

/// Turns protobuf-c's decoded ONNX messages into the Swift values, checking every field; keeps the
/// path to the current message (graph, node, attribute, ...) for error messages.
final class ONNXDecoder {
  let path: String
  /// The folder external data locations are relative to; nil when the bytes came from memory.
  let directory: URL?
  private var location: [String] = []
  /// The real paths of the external data files read so far.
  var externalFiles: Set<String> = []

  init(path: String, directory: URL?) {
    self.path = path
    self.directory = directory
  }

  /// Runs `body` with `label` ("node 'conv1' (Conv)") added to the location of errors.
  func within<T>(_ label: String, _ body: () throws -> T) rethrows -> T {
    location.append(label)
    defer { location.removeLast() }
    return try body()
  }

  func invalid(_ detail: String) -> ONNXFormatError {
    .invalid(path: path, location: location.joined(separator: ": "), detail: detail)
  }

  func unsupported(_ detail: String) -> ONNXFormatError {
    .unsupported(path: path, location: location.joined(separator: ": "), detail: detail)
  }

  /// A string field: empty when absent (NULL); invalid UTF-8 is an error naming `field`.
  func text(_ pointer: UnsafeMutablePointer<CChar>?, _ field: String) throws -> String {
    guard let pointer else { return "" }
    guard let text = String(validatingCString: pointer) else { throw invalid("\(field) is not valid UTF-8") }
    return text
  }

  /// A bytes field holding text (attribute and tensor strings).
  func text(_ data: ProtobufCBinaryData, _ field: String) throws -> String {
    guard data.len > 0, let bytes = data.data else { return "" }
    guard let text = String(validating: UnsafeBufferPointer(start: bytes, count: data.len), as: UTF8.self) else {
      throw invalid("\(field) is not valid UTF-8")
    }
    return text
  }

  /// A repeated scalar field as an array (empty when absent).
  func items<T>(_ pointer: UnsafeMutablePointer<T>?, _ count: Int) -> [T] {
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: count))
  }

  /// A repeated message field: each message, or an error if protobuf-c left a hole.
  func messages<T>(_ pointer: UnsafeMutablePointer<UnsafeMutablePointer<T>?>?, _ count: Int, _ field: String) throws
    -> [T]
  {
    try items(pointer, count).enumerated().map { index, message in
      guard let message else { throw invalid("\(field)[\(index)] is missing") }
      return message.pointee
    }
  }

  /// A repeated string field.
  func texts(_ pointer: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?, _ count: Int, _ field: String) throws
    -> [String]
  {
    try items(pointer, count).enumerated().map { index, string in try text(string, "\(field)[\(index)]") }
  }

  /// Key and value pairs (a key given twice keeps its last value).
  func entries(
    _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<Onnx__StringStringEntryProto>?>?, _ count: Int, _ field: String
  ) throws -> [String: String] {
    var result: [String: String] = [:]
    for (index, entry) in try messages(pointer, count, field).enumerated() {
      result[try text(entry.key, "\(field)[\(index)].key")] = try text(entry.value, "\(field)[\(index)].value")
    }
    return result
  }

  /// Operator set imports by domain (`ai.onnx` stored as `""`): versions positive, each domain once.
  func opsets(_ pointer: UnsafeMutablePointer<UnsafeMutablePointer<Onnx__OperatorSetIdProto>?>?, _ count: Int) throws
    -> [String: Int]
  {
    var result: [String: Int] = [:]
    for (index, opset) in try messages(pointer, count, "opset_import").enumerated() {
      let written = try text(opset.domain, "opset_import[\(index)].domain")
      let domain = written == "ai.onnx" ? "" : written
      let name = domain.isEmpty ? "the default domain (ai.onnx)" : "domain '\(domain)'"
      guard opset.has_version != 0 else { throw invalid("opset_import[\(index)] for \(name) has no version") }
      guard opset.version > 0 else {
        throw invalid("opset_import[\(index)] for \(name) has version \(opset.version); versions start at 1")
      }
      guard result[domain] == nil else { throw invalid("opset_import names \(name) twice") }
      result[domain] = Int(opset.version)
    }
    return result
  }
}
