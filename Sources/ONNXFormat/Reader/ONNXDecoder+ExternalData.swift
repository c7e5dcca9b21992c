import CProtobufC
import Foundation
import ModelFormats
import ONNXSpec

#if canImport(Glibc)
  import Glibc
#endif

extension ONNXDecoder {
  /// The `byteCount` bytes an EXTERNAL tensor keeps in a file beside the model: `location` relative
  /// to the model's folder (no absolute paths, no `..`, no symbolic link out of the folder), `offset`
  /// and `length` decimal and inside the file, `length` (or, when not given, the rest of the file)
  /// equal to the tensor's size.
  /// The `checksum` entry is not verified.
  func externalData(_ t: Onnx__TensorProto, byteCount: Int) throws -> [UInt8] {
    var entries: [String: String] = [:]
    for (index, entry) in try messages(t.external_data, t.n_external_data, "external_data").enumerated() {
      let key = try text(entry.key, "external_data[\(index)].key")
      guard entries[key] == nil else { throw invalid("external_data gives '\(key)' twice") }
      entries[key] = try text(entry.value, "external_data[\(index)].value")
    }
    guard let location = entries["location"], !location.isEmpty else { throw invalid("external_data has no location") }
    func number(_ key: String) throws -> Int? {
      guard let text = entries[key] else { return nil }
      guard !text.isEmpty, text.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
        let value = Int(text)
      else {
        throw invalid("external_data \(key) '\(text)' is not a byte count")
      }
      return value
    }
    let offset = try number("offset") ?? 0
    let length = try number("length")
    if let length, length != byteCount {
      throw invalid("external_data length is \(length) bytes; the tensor's values take \(byteCount)")
    }
    guard let directory else {
      throw unsupported("external data ('\(location)') needs the model's folder: read the model from its file")
    }
    let file = try resolve(location, in: directory)
    externalFiles.insert(file)
    if length == nil {
      // No length: the data runs from offset to the end of the file.
      var info = stat()
      guard stat(file, &info) == 0 else { throw invalid("external data file '\(location)' cannot be examined") }
      let rest = Int(info.st_size) - offset
      guard rest < 0 || rest == byteCount else {
        throw invalid(
          "external data file '\(location)' holds \(rest) bytes after offset \(offset) and gives no length; the tensor's values take \(byteCount)"
        )
      }
    }
    do {
      return try RangedFile.bytes(file, offset: offset, length: byteCount, limit: Int.max)
    } catch let failure as RangedFile.Failure {
      throw invalid("external data file '\(location)': \(failure.detail)")
    }
  }

  /// The real path of `location` inside `directory`, refusing paths that leave it.
  private func resolve(_ location: String, in directory: URL) throws -> String {
    guard !location.hasPrefix("/") else { throw invalid("external data location '\(location)' is an absolute path") }
    let components = location.split(separator: "/", omittingEmptySubsequences: true)
    guard !components.contains("..") else {
      throw invalid("external data location '\(location)' leaves the model's folder (..)")
    }
    guard let folder = realPath(directory.path) else {
      throw invalid("the model's folder \(directory.path) cannot be resolved")
    }
    guard let file = realPath(folder + "/" + location) else {
      throw invalid("external data file '\(location)' does not exist in \(folder)")
    }
    guard file.hasPrefix(folder.hasSuffix("/") ? folder : folder + "/") else {
      throw invalid(
        "external data location '\(location)' resolves to \(file), outside the model's folder (a symbolic link?)")
    }
    return file
  }

  private func realPath(_ path: String) -> String? {
    guard let resolved = realpath(path, nil) else { return nil }
    defer { free(resolved) }
    return String(cString: resolved)
  }
}
