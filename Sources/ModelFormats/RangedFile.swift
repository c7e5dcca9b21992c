import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// A regular file opened for reading by ranges: never read whole, never blocking on a FIFO or device
/// (opened non-blocking and checked to be a regular file after opening), and every range checked
/// against the file's size before anything is allocated. Readers of weight files (Core ML's
/// `weight.bin`, ONNX external data) take from it only the ranges the model declares.
public final class RangedFile {
  /// Why a read failed, in words (the caller names the file and field).
  public struct Failure: Error, CustomStringConvertible {
    public let detail: String
    public var description: String { detail }
  }

  public let path: String
  /// The file's size in bytes when it was opened.
  public let size: Int
  private let fd: Int32

  /// Opens the regular file at `path`; a folder, FIFO, device or missing file is a `Failure`.
  public init(_ path: String) throws {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { throw Failure(detail: String(cString: strerror(errno))) }
    var info = stat()
    guard fstat(fd, &info) == 0 else {
      let detail = String(cString: strerror(errno))
      close(fd)
      throw Failure(detail: detail)
    }
    guard info.st_mode & S_IFMT == S_IFREG else {
      close(fd)
      throw Failure(detail: "not a regular file")
    }
    self.path = path
    self.fd = fd
    self.size = Int(info.st_size)
  }

  deinit { close(fd) }

  /// Whether `count` bytes from `offset` lie inside the file (no overflow for any inputs).
  public func contains(offset: Int, count: Int) -> Bool {
    offset >= 0 && count >= 0 && offset <= size && count <= size - offset
  }

  /// `count` bytes from `offset`; the range must lie inside the file and hold at most `limit` bytes.
  public func read(offset: Int, count: Int, limit: Int = Int.max) throws -> [UInt8] {
    guard offset >= 0, offset <= size else {
      throw Failure(detail: "offset \(offset) lies past the end of the \(size)-byte file")
    }
    guard count >= 0, count <= size - offset else {
      throw Failure(detail: "\(count) bytes from offset \(offset) run past the end of the \(size)-byte file")
    }
    guard count <= limit else { throw Failure(detail: "\(count) bytes, more than the \(Self.describe(limit)) limit") }
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
      let got = bytes.withUnsafeMutableBytes { buffer in
        pread(fd, buffer.baseAddress.map { $0 + filled }, count - filled, off_t(offset + filled))
      }
      if got < 0 && errno == EINTR { continue }
      guard got > 0 else {
        throw Failure(detail: got < 0 ? String(cString: strerror(errno)) : "the file ended early (changed while read?)")
      }
      filled += got
    }
    return bytes
  }

  /// The whole file, when it holds at most `limit` bytes.
  public func readAll(limit: Int) throws -> [UInt8] {
    guard size <= limit else { throw Failure(detail: "\(size) bytes, more than the \(Self.describe(limit)) limit") }
    return try read(offset: 0, count: size)
  }

  /// "2 GiB" for whole gibibytes, else "N-byte".
  static func describe(_ limit: Int) -> String {
    limit >= 1 << 30 && limit % (1 << 30) == 0 ? "\(limit >> 30) GiB" : "\(limit)-byte"
  }

  /// `length` bytes (or all to the end) from `offset` of the regular file at `path`, at most `limit`.
  public static func bytes(_ path: String, offset: Int = 0, length: Int? = nil, limit: Int) throws -> [UInt8] {
    let file = try RangedFile(path)
    guard offset >= 0, offset <= file.size else {
      throw Failure(detail: "offset \(offset) lies past the end of the \(file.size)-byte file")
    }
    return try file.read(offset: offset, count: length ?? file.size - offset, limit: limit)
  }
}
