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
    do { return try PathNode.prefix(path, count: count) } catch FormatSniffer.Failure.notRegularFile(_, let kind) {
      throw KerasReaderError.notRegularFile(path: path, kind: kind)
    } catch {
      throw KerasReaderError.fileNotFound(path: path)
    }
  }

  /// The size of a regular file in bytes.
  public static func size(_ path: String) -> Int { PathNode.size(path) }
}
