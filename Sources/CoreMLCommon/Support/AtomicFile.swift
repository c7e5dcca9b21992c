import Foundation

/// Writes files so that readers never see a partial file and failures leave nothing behind.
public enum AtomicFile {
  /// Writes `bytes` like `write(_:to:)`.
  public static func write(bytes: [UInt8], to url: URL) throws {
    try write(to: url) { file in try bytes.withUnsafeBytes(file.write) }
  }

  /// An open temporary file that `write(to:producing:)` fills, buffered.
  public final class Output {
    fileprivate let fd: Int32
    private var buffer: [UInt8] = []
    private static let bufferSize = 1 << 20

    fileprivate init(fd: Int32) {
      self.fd = fd
      buffer.reserveCapacity(Self.bufferSize)
    }

    /// Appends bytes to the file.
    public func write(_ bytes: UnsafeRawBufferPointer) throws {
      if buffer.count + bytes.count > Self.bufferSize { try flush() }
      if bytes.count >= Self.bufferSize {
        try Self.writeAll(fd, bytes)
      } else {
        buffer.append(contentsOf: bytes)
      }
    }

    fileprivate func flush() throws {
      try buffer.withUnsafeBytes { try Self.writeAll(fd, $0) }
      buffer.removeAll(keepingCapacity: true)
    }

    private static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer) throws {
      var done = 0
      while done < bytes.count {
        let count = Glibc.write(fd, bytes.baseAddress! + done, bytes.count - done)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else {
          throw CocoaError(
            .fileWriteUnknown, userInfo: [NSUnderlyingErrorKey: POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)])
        }
        done += count
      }
    }
  }

  /// Why a destination cannot be written atomically.
  public enum DestinationError: Error, Equatable, CustomStringConvertible {
    /// The path names a device, a pipe, a socket or a folder: renaming over it would replace the node.
    case notARegularFile(path: String, kind: String)

    public var description: String {
      switch self {
      case .notARegularFile(let path, let kind):
        return
          "\(path) is \(kind), not a regular file; write the model to a file path (modelconv never replaces special files)"
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
    try write(to: url) { file in try data.withUnsafeBytes(file.write) }
  }

  /// Writes what `produce` sends to a temporary file beside `url`, then renames it over `url`: the bytes
  /// go to the file as they come (a large model is never in memory at once), and a failure in `produce`
  /// or in writing leaves the destination untouched and no temporary file. Same rules as `write(_:to:)`.
  public static func write(to url: URL, producing produce: (Output) throws -> Void) throws {
    var url = url
    if let existing = nodeKind(url.path) {
      guard existing.kind == "a regular file" else {
        throw DestinationError.notARegularFile(path: url.path, kind: existing.kind)
      }
      url = url.resolvingSymlinksInPath()
    }
    let directory = url.deletingLastPathComponent()
    let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    let fd = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o666)
    guard fd >= 0 else {
      throw CocoaError(
        errno == ENOENT ? .fileNoSuchFile : errno == EACCES ? .fileWriteNoPermission : .fileWriteUnknown,
        userInfo: [NSFilePathErrorKey: temporary.path])
    }
    do {
      do {
        let output = Output(fd: fd)
        try produce(output)
        try output.flush()
      } catch {
        close(fd)
        throw error
      }
      guard close(fd) == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
      if rename(temporary.path, url.path) != 0 {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
      }
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
