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
    do { bytes = try RangedFile.bytes(url.path, limit: ONNXLimits.maxFileSize) } catch let failure as RangedFile.Failure
    {
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

  /// The messages a file can hold at its top level.
  enum TopLevel { case model, tensor }

  /// Walks the wire format along every message field before protobuf-c does (`ProtobufNesting`, guided by
  /// protobuf-c's own descriptors): nesting, cut-off or malformed wire data, and strings holding a NUL.
  static func checkNesting(_ bytes: [UInt8], path: String, as message: TopLevel) throws {
    do {
      try bytes.withUnsafeBufferPointer { buffer in
        let walker = ProtobufNesting(bytes: buffer, maximumDepth: ONNXLimits.maxNestingDepth)
        switch message {
        case .model:
          try withUnsafePointer(to: onnx__model_proto__descriptor) {
            try walker.check(0..<buffer.count, descriptor: $0)
          }
        case .tensor:
          try withUnsafePointer(to: onnx__tensor_proto__descriptor) {
            try walker.check(0..<buffer.count, descriptor: $0)
          }
        }
      }
    } catch ProtobufNesting.Failure.malformed(let detail) {
      throw ONNXFormatError.malformed(path: path, detail: detail)
    } catch ProtobufNesting.Failure.nulInString(let field) {
      throw ONNXFormatError.invalid(
        path: path, location: "",
        detail: "a \(field) string holds a NUL character (an external data location or a name cut short)")
    } catch ProtobufNesting.Failure.tooDeep {
      throw ONNXFormatError.invalid(
        path: path, location: "",
        detail:
          "messages are nested more than \(ONNXLimits.maxNestingDepth) deep (graphs inside attributes, or types inside types)"
      )
    }
  }
}
