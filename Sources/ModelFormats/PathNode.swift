import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// What a path names, and its first bytes, without ever blocking on a FIFO or device.
public enum PathNode {
  /// "a regular file", "a folder", "a FIFO (named pipe)", "a character device", ... following symbolic
  /// links; nil when nothing is there or it cannot be examined.
  public static func kind(_ path: String) -> String? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    switch info.st_mode & S_IFMT {
    case S_IFREG: return "a regular file"
    case S_IFDIR: return "a folder"
    case S_IFIFO: return "a FIFO (named pipe)"
    case S_IFCHR: return "a character device"
    case S_IFBLK: return "a block device"
    case S_IFSOCK: return "a socket"
    default: return "a special file"
    }
  }

  /// The size of a regular file in bytes (0 when it cannot be examined).
  public static func size(_ path: String) -> Int {
    var info = stat()
    guard stat(path, &info) == 0 else { return 0 }
    return Int(info.st_size)
  }

  /// Up to `count` bytes from the start of a regular file, opened non-blocking and checked again after
  /// opening (a path swapped for a FIFO cannot block).
  public static func prefix(_ path: String, count: Int) throws -> [UInt8] {
    guard kind(path) == "a regular file", access(path, R_OK) == 0 else {
      throw FormatSniffer.Failure.notFound(path: path)
    }
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { throw FormatSniffer.Failure.notFound(path: path) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
      throw FormatSniffer.Failure.notRegularFile(path: path, kind: "not a regular file")
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
}
