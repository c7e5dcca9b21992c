import CProtobufC
import Foundation
import ModelFormats
import ONNXSpec

/// Reads ONNX model files (`ModelProto`) through libprotobuf-c into `ONNXModel` values.
///
/// Every number in the file is untrusted: sizes, dims, lengths, offsets, enum values and nesting are
/// checked, and a file that breaks a rule throws an `ONNXFormatError` naming the file and the place
/// (graph, node, attribute, initializer, field); nothing in a file makes the reader trap.
public enum ONNXModelReader {
  /// Reads the model file at `url` (at most `ONNXLimits.maxFileSize` bytes); external tensor data is
  /// read from files in the model's folder.
  public static func read(contentsOf url: URL) throws -> ONNXModel {
    let bytes: [UInt8]
    do { bytes = try RangedFile.bytes(url.path, limit: ONNXLimits.maxFileSize) } catch let failure as RangedFile.Failure {
      throw ONNXFormatError.unreadable(path: url.path, detail: failure.detail)
    }
    return try read(bytes: bytes, path: url.path, directory: url.deletingLastPathComponent())
  }

  /// Decodes a serialized model; `path` names it in errors (its extension helps tell formats apart) and
  /// `directory` is where its external data lives (nil: a model with external data is refused).
  public static func read(bytes: [UInt8], path: String = "<memory>.onnx", directory: URL? = nil) throws -> ONNXModel {
    try ONNXFile.refuseOtherFormats(bytes, path: path, allowCoreML: false)
    try checkNesting(bytes, path: path, as: .model)
    guard let model = bytes.withUnsafeBufferPointer({ onnx__model_proto__unpack(nil, $0.count, $0.baseAddress) }) else {
      throw ONNXFormatError.malformed(path: path, detail: "protobuf-c cannot decode it as a ModelProto")
    }
    defer { onnx__model_proto__free_unpacked(model, nil) }
    return try ONNXDecoder(path: path, directory: directory).model(model.pointee)
  }

  /// Walks the wire format along recursive fields before protobuf-c does (see `ONNXNestingCheck`).
  static func checkNesting(_ bytes: [UInt8], path: String, as message: ONNXNestingCheck.Message) throws {
    do {
      try bytes.withUnsafeBufferPointer { try ONNXNestingCheck(bytes: $0).check(0..<$0.count, as: message) }
    } catch ONNXNestingCheck.Failure.malformed(let detail) {
      throw ONNXFormatError.malformed(path: path, detail: detail)
    } catch ONNXNestingCheck.Failure.tooDeep {
      throw ONNXFormatError.invalid(
        path: path, location: "", detail: "messages are nested more than \(ONNXLimits.maxNestingDepth) deep (graphs inside attributes, or types inside types)")
    }
  }
}
