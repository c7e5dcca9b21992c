import Foundation

/// Writes files so that readers never see a partial file and failures leave nothing behind.
public enum AtomicFile {
  /// Writes `bytes` (without copying them into a `Data`) like `write(_:to:)`.
  public static func write(bytes: [UInt8], to url: URL) throws {
    try bytes.withUnsafeBytes { buffer in
      let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!), count: buffer.count, deallocator: .none)
      try write(data, to: url)
    }
  }

  /// Why a destination cannot be written atomically.
  public enum DestinationError: Error, Equatable, CustomStringConvertible {
    /// The path names a device, a pipe, a socket or a folder: renaming over it would replace the node.
    case notARegularFile(path: String, kind: String)

    public var description: String {
      switch self {
      case .notARegularFile(let path, let kind):
        return "\(path) is \(kind), not a regular file; write the model to a file path (modelconv never replaces special files)"
      }
    }
  }

  /// What kind of node `path` is (following symbolic links), or nil when nothing is there.
  public static func nodeKind(_ path: String) -> (kind: String, device: UInt64, inode: UInt64)? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    let kind: String
    switch info.st_mode & S_IFMT {
    case S_IFREG: kind = "a regular file"
    case S_IFDIR: kind = "a folder"
    case S_IFCHR: kind = "a character device"
    case S_IFBLK: kind = "a block device"
    case S_IFIFO: kind = "a pipe"
    case S_IFSOCK: kind = "a socket"
    default: kind = "a special file"
    }
    return (kind, UInt64(info.st_dev), UInt64(info.st_ino))
  }

  /// Writes `data` to a temporary file beside `url`, then renames it over `url`.
  ///
  /// An existing destination must be a regular file (a device, pipe or folder is refused, never
  /// replaced); a symbolic link is written through, so the link stays and its target is replaced.
  public static func write(_ data: Data, to url: URL) throws {
    var url = url
    if let existing = nodeKind(url.path) {
      guard existing.kind == "a regular file" else { throw DestinationError.notARegularFile(path: url.path, kind: existing.kind) }
      url = url.resolvingSymlinksInPath()
    }
    let directory = url.deletingLastPathComponent()
    let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    do {
      try data.write(to: temporary)
      if rename(temporary.path, url.path) != 0 { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
    } catch {
      try? FileManager.default.removeItem(at: temporary)
      throw error
    }
  }
}

extension AtomicFile.DestinationError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
