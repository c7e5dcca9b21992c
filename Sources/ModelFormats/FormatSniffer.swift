import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Finds what a model path holds from its magic bytes and structure; the extension only breaks ties
/// between protobuf formats whose first bytes look alike.
///
/// The sniffer never parses a model: it reads at most `headerSize` bytes of a regular file (opened
/// non-blocking, so a FIFO swapped in cannot block) and looks for a few names inside a folder.
public enum FormatSniffer {
  /// How many bytes of a file are looked at.
  public static let headerSize = 4096

  /// Why a path could not be sniffed.
  public enum Failure: Error, Equatable, Sendable {
    /// Nothing is there, or it cannot be examined or read.
    case notFound(path: String)
    /// A FIFO, device or socket: reading it could block forever.
    case notRegularFile(path: String, kind: String)
  }

  static let hdf5Signature: [UInt8] = [0x89, 0x48, 0x44, 0x46, 0x0D, 0x0A, 0x1A, 0x0A]

  /// The kind of the file or folder at `path`.
  public static func kind(ofPath path: String) throws -> ModelFileKind { try sniff(path).kind }

  /// The kind of the file or folder at `path` and the first bytes it was told by (none for a folder),
  /// read once, so that whoever chooses by them reads nothing again.
  public static func sniff(_ path: String) throws -> (kind: ModelFileKind, header: [UInt8]) {
    guard let node = PathNode.kind(path) else { throw Failure.notFound(path: path) }
    if node == "a folder" { return (folderKind(path), []) }
    guard node == "a regular file" else { throw Failure.notRegularFile(path: path, kind: node) }
    let header = try PathNode.prefix(path, count: headerSize)
    return (kind(ofHeader: header, name: (path as NSString).lastPathComponent), header)
  }

  /// The kind of a folder, from the names it holds.
  static func folderKind(_ path: String) -> ModelFileKind {
    func has(_ child: String) -> Bool {
      FileManager.default.fileExists(atPath: (path as NSString).appendingPathComponent(child))
    }
    if has("saved_model.pb") || has("saved_model.pbtxt") { return .tensorFlowSavedModel }
    if has("Manifest.json") || has("Data/com.apple.CoreML") || path.lowercased().hasSuffix(".mlpackage")
      || path.lowercased().hasSuffix(".mlpackage/")
    {
      return .coreMLPackage
    }
    return .folder
  }

  /// The kind of a file from its first bytes; `name` (the file name) only separates protobuf formats
  /// whose first bytes look alike.
  public static func kind(ofHeader head: [UInt8], name: String) -> ModelFileKind {
    let name = name.lowercased()
    if head.isEmpty { return .empty }
    // HDF5 puts its signature at 0, 512, 1024, 2048, ... (a user block may come first).
    for offset in [0, 512, 1024, 2048]
    where head.count >= offset + 8 && Array(head[offset..<(offset + 8)]) == hdf5Signature {
      return .hdf5
    }
    if head.count >= 4, head[0] == 0x50, head[1] == 0x4B, (head[2], head[3]) == (3, 4) || (head[2], head[3]) == (5, 6) {
      return .zipArchive
    }
    if head.count >= 8, Array(head[4..<8]) == Array("TFL3".utf8) { return .tensorFlowLite }
    if let protobuf = protobufKind(head, name: name) { return protobuf }
    // Text: no NUL and no control characters but tabs and line breaks (UTF-8 beyond ASCII allowed).
    if !head.contains(where: { $0 < 0x09 || (0x0E..<0x20).contains($0) || $0 == 0x7F }) {
      let trimmed = head.drop { [0x20, 0x09, 0x0A, 0x0D, 0xEF, 0xBB, 0xBF].contains($0) }
      if trimmed.first == UInt8(ascii: "{") || trimmed.first == UInt8(ascii: "[") { return .json }
      return isHTML(trimmed) ? .html : .text
    }
    return .unknown
  }

  /// Whether text starts like an HTML page: a doctype, an `<html` or `<head` tag, or a comment before one.
  static func isHTML(_ text: ArraySlice<UInt8>) -> Bool {
    let start = String(decoding: text.prefix(512), as: UTF8.self).lowercased()
    if start.hasPrefix("<!doctype html") || start.hasPrefix("<html") || start.hasPrefix("<head") { return true }
    return start.hasPrefix("<!--") && (start.contains("<html") || start.contains("<!doctype html"))
  }

  /// A protobuf format when the bytes look like a message of that kind.
  static func protobufKind(_ head: [UInt8], name: String) -> ModelFileKind? {
    // Both Core ML's Model and ONNX's ModelProto start with field 1 as a varint (tag 0x08):
    // Model.specificationVersion, ModelProto.ir_version.
    guard head.count >= 4, head[0] == 0x08 else {
      if name.hasSuffix(".pb"), head.first.map({ $0 & 0x07 <= 2 && $0 >> 3 >= 1 }) == true {
        return .tensorFlowProtobuf
      }
      return nil
    }
    var index = 1
    while index < head.count, head[index] & 0x80 != 0 { index += 1 }
    index += 1
    if name.hasSuffix(".mlmodel") { return .coreMLModel }
    if name.hasSuffix(".onnx") { return .onnx }
    if name.hasSuffix(".pb") { return .tensorFlowProtobuf }
    // Field 2, length-delimited: Core ML's ModelDescription (a message starting with its inputs, tag
    // 0x0A), or ONNX's producer_name (printable text).
    guard index + 2 < head.count, head[index] == 0x12 else { return nil }
    if head[index + 1] & 0x80 != 0 {
      // A description of 128 bytes or more: a multi-byte length, then (Core ML) the first input.
      var body = index + 1
      while body < head.count, head[body] & 0x80 != 0 { body += 1 }
      body += 1
      return body < head.count && head[body] == 0x0A ? .coreMLModel : nil
    }
    let length = Int(head[index + 1])
    guard length > 0 else { return nil }
    let body = head[(index + 2)...].prefix(length)
    if body.first == 0x0A { return .coreMLModel }
    if body.allSatisfy({ (0x20...0x7E).contains($0) }) { return .onnx }
    return nil
  }
}
