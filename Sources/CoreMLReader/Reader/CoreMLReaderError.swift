import CoreMLCommon
import Foundation
import ModelFormats

/// Why a Core ML model could not be read.
public enum CoreMLReaderError: Error, Equatable, CustomStringConvertible {
  /// The file could not be opened.
  case unreadable(path: String)
  /// The bytes are not a valid `Model` protobuf (truncated or corrupt).
  case malformed(path: String)
  /// The model is not a neural network (a pipeline, tree ensemble, ML Program, ...); `type` names it.
  case unsupportedModelType(path: String, type: String)
  /// A layer's weights cannot be decoded (bad quantization parameters, too few values, ...).
  case invalidWeights(path: String, layer: String, detail: String)
  /// A layer type or parameter that the reader does not turn into the IR.
  case unsupportedLayer(path: String, layer: String, kind: String, detail: String)
  /// The network's blobs or shapes do not fit together (an input that no layer produces, ...).
  case invalidNetwork(path: String, detail: String)
  /// An ML Program whose structure or values are invalid; `operation` names the MIL operation (type and name) or `program`.
  case invalidProgram(path: String, operation: String, detail: String)
  /// A MIL operation type or parameter value the importer does not run.
  case unsupportedOperation(path: String, type: String, name: String, detail: String)
  /// A protobuf field read by `CoreMLModelOutline` is cut off or of the wrong kind; `field` is its path
  /// (`Model.pipelineClassifier.pipeline.models[1].description`).
  case invalidField(path: String, field: String, detail: String)

  public var description: String {
    switch self {
    case .unreadable(let path): return "\(path): cannot read the file"
    case .malformed(let path): return "\(path): not a valid Core ML model (truncated or corrupt protobuf)"
    case .unsupportedModelType(let path, let type):
      return
        "\(path): the model is a \(type); only neuralNetwork, neuralNetworkClassifier, neuralNetworkRegressor and mlProgram models can be read"
    case .invalidWeights(let path, let layer, let detail): return "\(path): layer '\(layer)': \(detail)"
    case .unsupportedLayer(let path, let layer, let kind, let detail):
      return "\(path): layer '\(layer)' (\(kind)): \(detail)"
    case .invalidNetwork(let path, let detail): return "\(path): \(detail)"
    case .invalidProgram(let path, let operation, let detail): return "\(path): \(operation): \(detail)"
    case .unsupportedOperation(let path, let type, let name, let detail):
      return "\(path): \(type) operation '\(name)': \(detail)"
    case .invalidField(let path, let field, let detail): return "\(path): \(field): \(detail)"
    }
  }
}

extension CoreMLReaderError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension CoreMLReaderError: KindedError {
  public var kind: ErrorKind {
    if case .unreadable = self { return .missingInput }
    return .badModel
  }
}
