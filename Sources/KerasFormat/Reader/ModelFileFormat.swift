import Foundation
import ModelFormats

/// What a model path holds, found from magic bytes and structure (the extension only breaks ties).
public enum ModelFileFormat: Equatable, Sendable {
  /// An HDF5 file: a legacy Keras `.h5` model or weights.
  case hdf5
  /// A zip archive, which must be a Keras 3 `.keras` file.
  case kerasArchive

  /// The format of a model path; throws a `KerasReaderError` saying what the file is (and what to do)
  /// when it is not a Keras model, and for missing files, FIFOs, devices and unrelated folders. What the
  /// file is comes from the neutral `FormatSniffer`.
  public static func check(_ path: String) throws -> ModelFileFormat {
    guard let node = InputFile.kind(path) else { throw KerasReaderError.fileNotFound(path: path) }
    if node == "a folder", let folder = try? FormatSniffer.kind(ofPath: path), folder != .folder {
      throw KerasReaderError.unsupportedFormat(path: path, what: folder.description, advice: advice(for: folder))
    }
    try InputFile.checkRegular(path)
    let head = try InputFile.prefix(path, count: FormatSniffer.headerSize)
    switch FormatSniffer.kind(ofHeader: head, name: (path as NSString).lastPathComponent) {
    case .hdf5: return .hdf5
    case .zipArchive: return .kerasArchive
    case .unknown: throw KerasReaderError.notHDF5(path: path)
    case let other:
      throw KerasReaderError.unsupportedFormat(path: path, what: other.description, advice: advice(for: other))
    }
  }

  /// What to do with a file that is not a Keras model.
  static func advice(for kind: ModelFileKind) -> String {
    switch kind {
    case .tensorFlowSavedModel:
      return
        "load it in Keras 3 and save it as a Keras model (model.save(\"model.keras\")), or export the Keras model it came from"
    case .coreMLModel, .coreMLPackage: return coreMLAdvice
    case .empty: return "save the model again with model.save(\"model.keras\") or model.save(\"model.h5\")"
    case .tensorFlowLite:
      return "TensorFlow Lite models cannot be converted back; convert the Keras model it was made from"
    case .onnx: return "give it to modelconv as a model of its own rather than as a Keras file"
    case .tensorFlowProtobuf:
      return "convert the Keras model instead: load it in Keras and save it with model.save(\"model.keras\")"
    case .json:
      return
        "if it is the architecture from model.to_json(), give it as the architecture and the weights .h5 as the model"
    default: return "give a Keras model saved with model.save(\"model.keras\") or model.save(\"model.h5\")"
    }
  }

  static let coreMLAdvice =
    "it is a Core ML model, read by modelconv's Core ML frontend rather than as a Keras file"
}
