/// Why a Core ML model could not be read.
public enum CoreMLReaderError: Error, Equatable, CustomStringConvertible {
  /// The bytes are not a valid `Model` protobuf (truncated or corrupt).
  case malformed(path: String)
  /// The model is not a neural network (a pipeline, tree ensemble, ML Program, ...).
  case unsupportedModelType(path: String)

  public var description: String {
    switch self {
    case .malformed(let path): return "\(path): not a valid Core ML model (truncated or corrupt protobuf)"
    case .unsupportedModelType(let path): return "\(path): not a neural-network model; only neuralNetwork and neuralNetworkClassifier models can be read"
    }
  }
}
