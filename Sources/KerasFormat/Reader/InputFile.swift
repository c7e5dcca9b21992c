import Foundation
import ModelFormats

#if canImport(Glibc)
  import Glibc
#endif

/// Checks on paths given by the user before anything opens them.
public enum InputFile {
  /// What a path names, following symbolic links: "a regular file", "a folder", "a FIFO (named pipe)",
  /// "a character device", ...; nil when it does not exist or cannot be examined.
  public static func kind(_ path: String) -> String? { PathNode.kind(path) }

  /// Throws `fileNotFound` for a missing or unreadable path and `notRegularFile` for anything that is
  /// not a regular file (reading a FIFO or device could block forever or never end).
  public static func checkRegular(_ path: String) throws {
    guard let kind = kind(path) else { throw KerasReaderError.fileNotFound(path: path) }
    guard kind == "a regular file" else { throw KerasReaderError.notRegularFile(path: path, kind: kind) }
    guard access(path, R_OK) == 0 else { throw KerasReaderError.fileNotFound(path: path) }
  }

  /// Throws `notRegularFile` for FIFOs, devices and sockets (folders and missing paths are left to the
  /// reader that follows, which reports them in its own terms).
  public static func checkNotSpecial(_ path: String) throws {
    guard let kind = kind(path), kind != "a regular file", kind != "a folder" else { return }
    throw KerasReaderError.notRegularFile(path: path, kind: kind)
  }

  /// Up to `count` bytes from the start of a regular file (opened non-blocking, and checked again
  /// after opening, so a path swapped for a FIFO cannot block).
  public static func prefix(_ path: String, count: Int) throws -> [UInt8] {
    try checkRegular(path)
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { throw KerasReaderError.fileNotFound(path: path) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      throw KerasReaderError.notRegularFile(path: path, kind: "not a regular file")
    }
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
      let got = bytes.withUnsafeMutableBytes { read(fd, $0.baseAddress! + filled, count - filled) }
      if got < 0 && errno == EINTR { continue }
      guard got > 0 else { break }
      filled += got
    }
    return Array(bytes.prefix(filled))
  }

  /// The size of a regular file in bytes.
  public static func size(_ path: String) -> Int {
    var info = stat()
    guard stat(path, &info) == 0 else { return 0 }
    return Int(info.st_size)
  }
}
