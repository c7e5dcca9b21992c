import Foundation

/// What a model path holds, found from magic bytes and structure (the extension only breaks ties).
public enum ModelFileFormat: Equatable, Sendable {
  /// An HDF5 file: a legacy Keras `.h5` model or weights.
  case hdf5
  /// A zip archive, which must be a Keras 3 `.keras` file.
  case kerasArchive

  static let hdf5Signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

  /// The format of a model path; throws a `KerasReaderError` saying what the file is (and what to do)
  /// when it is not a Keras model, and for missing files, FIFOs, devices and unrelated folders.
  public static func check(_ path: String) throws -> ModelFileFormat {
    guard let kind = InputFile.kind(path) else { throw KerasReaderError.fileNotFound(path: path) }
    let name = (path as NSString).lastPathComponent.lowercased()
    if kind == "a folder" {
      let manager = FileManager.default
      func has(_ child: String) -> Bool { manager.fileExists(atPath: (path as NSString).appendingPathComponent(child)) }
      if has("saved_model.pb") || has("saved_model.pbtxt") {
        throw KerasReaderError.unsupportedFormat(
          path: path, what: "a TensorFlow SavedModel folder",
          advice: "load it in Keras 3 and save it as a Keras model (model.save(\"model.keras\")), or export the Keras model it came from")
      }
      if name.hasSuffix(".mlpackage") || has("Data/com.apple.CoreML") {
        throw KerasReaderError.unsupportedFormat(path: path, what: "a Core ML package (.mlpackage)", advice: coreMLAdvice)
      }
    }
    try InputFile.checkRegular(path)
    let head = try InputFile.prefix(path, count: 4096)
    if head.isEmpty {
      throw KerasReaderError.unsupportedFormat(
        path: path, what: "an empty file", advice: "save the model again with model.save(\"model.keras\") or model.save(\"model.h5\")")
    }
    for offset in [0, 512, 1024, 2048] where head.count >= offset + 8 && Array(head[offset..<(offset + 8)]) == hdf5Signature {
      return .hdf5
    }
    if head.count >= 4, head[0] == 0x50, head[1] == 0x4B, (head[2], head[3]) == (3, 4) || (head[2], head[3]) == (5, 6) {
      return .kerasArchive
    }
    if head.count >= 8, Array(head[4..<8]) == Array("TFL3".utf8) {
      throw KerasReaderError.unsupportedFormat(
        path: path, what: "a TensorFlow Lite model", advice: "TensorFlow Lite models cannot be converted back; convert the Keras model it was made from")
    }
    if let protobuf = protobufKind(head, name: name) {
      switch protobuf {
      case "coreml": throw KerasReaderError.unsupportedFormat(path: path, what: "a Core ML model (.mlmodel)", advice: coreMLAdvice)
      case "onnx":
        throw KerasReaderError.unsupportedFormat(
          path: path, what: "an ONNX model", advice: "modelconv converts Keras models; convert the Keras model the ONNX file came from")
      default:
        throw KerasReaderError.unsupportedFormat(
          path: path, what: "a TensorFlow protobuf (SavedModel or GraphDef)",
          advice: "convert the Keras model instead: load it in Keras and save it with model.save(\"model.keras\")")
      }
    }
    // Text: no NUL and no control characters but tabs and line breaks (UTF-8 beyond ASCII allowed).
    if !head.contains(where: { $0 < 0x09 || (0x0E..<0x20).contains($0) || $0 == 0x7F })
    {
      let trimmed = head.drop { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
      if trimmed.first == UInt8(ascii: "{") || trimmed.first == UInt8(ascii: "[") {
        throw KerasReaderError.unsupportedFormat(
          path: path, what: "a JSON file",
          advice: "if it is the architecture from model.to_json(), give it with --architecture and the weights .h5 as the model")
      }
      throw KerasReaderError.unsupportedFormat(
        path: path, what: "a text file", advice: "give a Keras model saved with model.save(\"model.keras\") or model.save(\"model.h5\")")
    }
    throw KerasReaderError.notHDF5(path: path)
  }

  static let coreMLAdvice =
    "it is already a Core ML model: `modelconv inspect` shows what is inside, `modelconv verify <model.h5|model.keras> <model.mlmodel>` checks it against its Keras source"

  /// "coreml", "onnx" or "tensorflow" when the bytes look like a protobuf message of that kind.
  static func protobufKind(_ head: [UInt8], name: String) -> String? {
    // Both Core ML's Model and ONNX's ModelProto start with field 1 as a varint (tag 0x08).
    guard head.count >= 4, head[0] == 0x08 else {
      if name.hasSuffix(".pb"), head.first.map({ $0 & 0x07 <= 2 && $0 >> 3 >= 1 }) == true { return "tensorflow" }
      return nil
    }
    var index = 1
    while index < head.count, head[index] & 0x80 != 0 { index += 1 }
    index += 1
    if name.hasSuffix(".mlmodel") { return "coreml" }
    if name.hasSuffix(".onnx") { return "onnx" }
    if name.hasSuffix(".pb") { return "tensorflow" }
    // Field 2, length-delimited: Core ML's ModelDescription (a message starting with its inputs, tag
    // 0x0A), or ONNX's producer_name (printable text).
    guard index + 2 < head.count, head[index] == 0x12 else { return nil }
    let length = Int(head[index + 1])
    guard length > 0, length < 0x80 else { return nil }
    let body = head[(index + 2)...].prefix(length)
    if body.first == 0x0A { return "coreml" }
    if body.allSatisfy({ (0x20...0x7E).contains($0) }) { return "onnx" }
    return nil
  }
}
