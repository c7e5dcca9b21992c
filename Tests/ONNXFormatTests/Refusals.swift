import Foundation
import ONNXFormat
import Testing

/// The `ONNXFormatError` reading `bytes` as a model throws (an issue is recorded when it reads, or
/// throws anything else); nil then.
@discardableResult
func modelRefusal(
  _ bytes: [UInt8], path: String = "/models/m.onnx", directory: URL? = nil,
  sourceLocation: SourceLocation = #_sourceLocation
) -> ONNXFormatError? {
  #expect(throws: ONNXFormatError.self, sourceLocation: sourceLocation) {
    try ONNXModelReader.read(bytes: bytes, path: path, directory: directory)
  }
}

/// The `ONNXFormatError` reading `bytes` as a tensor file throws.
@discardableResult
func tensorRefusal(
  _ bytes: [UInt8], path: String = "/data/input_0.pb", directory: URL? = nil,
  sourceLocation: SourceLocation = #_sourceLocation
) -> ONNXFormatError? {
  #expect(throws: ONNXFormatError.self, sourceLocation: sourceLocation) {
    try ONNXTensorReader.read(bytes: bytes, path: path, directory: directory)
  }
}

/// Whether reading `bytes` as a model either succeeds or throws an `ONNXFormatError` (never anything else).
func readsOrRefuses(_ bytes: [UInt8]) -> Bool {
  do {
    _ = try ONNXModelReader.read(bytes: bytes, path: "/models/m.onnx")
    return true
  } catch is ONNXFormatError {
    return true
  } catch {
    return false
  }
}
