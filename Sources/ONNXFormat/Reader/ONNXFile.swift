import Foundation
import ModelFormats

#if canImport(Glibc)
  import Glibc
#endif

/// The check that a file's bytes are not some other format (files are read with `RangedFile`).
enum ONNXFile {
  /// Throws `notONNX` when the first bytes say the file is something else (text, HTML, JSON, HDF5, a zip
  /// archive, TensorFlow Lite, empty; and for models, a Core ML model).
  static func refuseOtherFormats(_ bytes: [UInt8], path: String, allowCoreML: Bool) throws {
    let kind = FormatSniffer.kind(
      ofHeader: Array(bytes.prefix(FormatSniffer.headerSize)), name: (path as NSString).lastPathComponent)
    switch kind {
    case .onnx, .unknown, .tensorFlowProtobuf: return
    case .coreMLModel where allowCoreML: return
    default: throw ONNXFormatError.notONNX(path: path, kind: kind.description)
    }
  }
}
