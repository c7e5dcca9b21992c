import Foundation
import ModelFormats

#if canImport(Glibc)
  import Glibc
#endif

/// Bounded, non-blocking reads of regular files, and the check that a file's bytes are not some other format.
enum ONNXFile {
  /// Why a read failed, in words.
  struct Failure: Error { let detail: String }

  /// `length` bytes (or all to the end) from `offset` of the regular file at `path`; the range must lie
  /// inside the file and hold at most `limit` bytes. The file is opened non-blocking, so a FIFO cannot hang.
  static func bytes(_ path: String, offset: Int = 0, length: Int? = nil, limit: Int) throws -> [UInt8] {
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC)
    guard fd >= 0 else { throw Failure(detail: String(cString: strerror(errno))) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0 else { throw Failure(detail: String(cString: strerror(errno))) }
    guard info.st_mode & S_IFMT == S_IFREG else { throw Failure(detail: "not a regular file") }
    let size = Int(info.st_size)
    guard offset >= 0, offset <= size else { throw Failure(detail: "offset \(offset) lies past the end of the \(size)-byte file") }
    let count = length ?? size - offset
    guard count >= 0, count <= size - offset else {
      throw Failure(detail: "\(count) bytes from offset \(offset) run past the end of the \(size)-byte file")
    }
    guard count <= limit else { throw Failure(detail: "\(count) bytes, more than the \(limit >> 30) GiB limit") }
    var bytes = [UInt8](repeating: 0, count: count)
    var filled = 0
    while filled < count {
      let got = bytes.withUnsafeMutableBytes { pread(fd, $0.baseAddress! + filled, count - filled, off_t(offset + filled)) }
      if got < 0 && errno == EINTR { continue }
      guard got > 0 else { throw Failure(detail: got < 0 ? String(cString: strerror(errno)) : "the file ended early (changed while read?)") }
      filled += got
    }
    return bytes
  }

  /// Throws `notONNX` when the first bytes say the file is something else (text, HTML, JSON, HDF5, a zip
  /// archive, TensorFlow Lite, empty; and for models, a Core ML model).
  static func refuseOtherFormats(_ bytes: [UInt8], path: String, allowCoreML: Bool) throws {
    let kind = FormatSniffer.kind(ofHeader: Array(bytes.prefix(FormatSniffer.headerSize)), name: (path as NSString).lastPathComponent)
    switch kind {
    case .onnx, .unknown, .tensorFlowProtobuf: return
    case .coreMLModel where allowCoreML: return
    default: throw ONNXFormatError.notONNX(path: path, kind: kind.description)
    }
  }
}
