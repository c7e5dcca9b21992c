import CProtobufC
import Foundation
import ModelFormats
import ONNXSpec

/// Reads a file holding one serialized `TensorProto` (the ONNX test data sets' `input_0.pb`,
/// `output_0.pb`) into an `ONNXTensor`, with the same checks as tensors inside a model.
public enum ONNXTensorReader {
  /// Reads the tensor file at `url` (at most `ONNXLimits.maxFileSize` bytes); external data is read
  /// from files in its folder.
  public static func read(contentsOf url: URL) throws -> ONNXTensor {
    let bytes: [UInt8]
    do { bytes = try RangedFile.bytes(url.path, limit: ONNXLimits.maxFileSize) } catch let failure as RangedFile.Failure
    {
      throw ONNXFormatError.unreadable(path: url.path, detail: failure.detail)
    }
    return try read(bytes: bytes, path: url.path, directory: url.deletingLastPathComponent())
  }

  /// Decodes a serialized tensor; `path` names it in errors, `directory` is where external data lives.
  public static func read(bytes: [UInt8], path: String = "<memory>.pb", directory: URL? = nil) throws -> ONNXTensor {
    try ONNXFile.refuseOtherFormats(bytes, path: path, allowCoreML: true)
    try ONNXModelReader.checkNesting(bytes, path: path, as: .tensor)
    guard let tensor = bytes.withUnsafeBufferPointer({ onnx__tensor_proto__unpack(nil, $0.count, $0.baseAddress) })
    else {
      throw ONNXFormatError.malformed(path: path, detail: "protobuf-c cannot decode it as a TensorProto")
    }
    defer { onnx__tensor_proto__free_unpacked(tensor, nil) }
    let decoder = ONNXDecoder(path: path, directory: directory)
    let name = (try? decoder.text(tensor.pointee.name, "name")) ?? ""
    return try decoder.within(name.isEmpty ? "tensor" : "tensor '\(name)'") { try decoder.tensor(tensor.pointee) }
  }
}
