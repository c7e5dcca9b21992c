/// What a path holds, as far as its bytes (or, for a folder, its structure) tell.
///
/// The format sniffer names every kind of file a user is likely to hand a model converter, so that
/// frontends are chosen by content and a file no frontend reads gets an error saying what it is.
public enum ModelFileKind: Equatable, Hashable, Sendable {
  /// An HDF5 file: a legacy Keras `.h5` model or weights file.
  case hdf5
  /// A zip archive (a Keras 3 `.keras` file is one).
  case zipArchive
  /// A Core ML `Model` protobuf (`.mlmodel`).
  case coreMLModel
  /// A Core ML package folder (`.mlpackage`: `Manifest.json`, `Data/com.apple.CoreML/`).
  case coreMLPackage
  /// An ONNX `ModelProto`.
  case onnx
  /// A TensorFlow SavedModel folder.
  case tensorFlowSavedModel
  /// A TensorFlow Lite flatbuffer.
  case tensorFlowLite
  /// A TensorFlow protobuf (`.pb`: SavedModel or GraphDef).
  case tensorFlowProtobuf
  /// Text starting with `{` or `[`.
  case json
  /// An HTML page (a web page saved in place of the model it links to, say).
  case html
  /// Other text.
  case text
  /// A regular file of zero bytes.
  case empty
  /// A folder that is none of the above.
  case folder
  /// Binary data the sniffer does not recognise.
  case unknown

  /// The kind in a few words ("a Core ML model (.mlmodel)", "an ONNX model", ...), for messages.
  public var description: String {
    switch self {
    case .hdf5: return "an HDF5 file"
    case .zipArchive: return "a zip archive"
    case .coreMLModel: return "a Core ML model (.mlmodel)"
    case .coreMLPackage: return "a Core ML package (.mlpackage)"
    case .onnx: return "an ONNX model"
    case .tensorFlowSavedModel: return "a TensorFlow SavedModel folder"
    case .tensorFlowLite: return "a TensorFlow Lite model"
    case .tensorFlowProtobuf: return "a TensorFlow protobuf (SavedModel or GraphDef)"
    case .json: return "a JSON file"
    case .html: return "an HTML page"
    case .text: return "a text file"
    case .empty: return "an empty file"
    case .folder: return "a folder"
    case .unknown: return "a file of unknown format"
    }
  }
}
