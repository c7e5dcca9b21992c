import Foundation
import ModelFormats

/// Why a Keras model could not be read or turned into a graph.
public enum KerasReaderError: Error, Equatable, Sendable, Codable, CustomStringConvertible {
  /// The file does not exist or cannot be read.
  case fileNotFound(path: String)
  /// The file is not an HDF5 file (and so not a Keras `.h5` model).
  case notHDF5(path: String)
  /// The HDF5 file has no `model_config`: it holds weights only, or is not a Keras file at all.
  case noModelConfig(path: String, weightsOnly: Bool)
  /// The architecture JSON is malformed or missing a required field.
  case invalidConfig(path: String, detail: String)
  /// Layers with no conversion, each as (name, class name).
  case unsupportedLayers(path: String, layers: [UnsupportedLayer])
  /// A layer's configuration has a value the converter cannot take.
  case invalidLayer(path: String, layer: String, className: String, detail: String)
  /// A layer config field has a value of the wrong type or outside its range (`value` is the JSON text).
  case invalidLayerValue(path: String, layer: String, className: String, field: String, value: String, expected: String)
  /// A weight named by the config is not in the file.
  case missingWeight(path: String, layer: String, weight: String)
  /// A weight's shape does not match what the layer config implies.
  case weightShapeMismatch(path: String, layer: String, weight: String, expected: [Int], actual: [Int])
  /// An input has unknown dimensions and no shape was given for it.
  /// Shapes in the model do not fit together.
  case graph(path: String, detail: String)
  /// An HDF5 object could not be read.
  case hdf5(String)
  /// The path names a FIFO, device, socket or folder that is not a model: reading it could block forever.
  case notRegularFile(path: String, kind: String)
  /// The file is a model or archive of another kind (`what`), with what to do instead.
  case unsupportedFormat(path: String, what: String, advice: String)
  /// An HDF5 link that points into another file; the reader never follows one.
  case externalLink(path: String, object: String)
  /// The file claims more than the reader accepts (sizes, counts).
  case limitExceeded(path: String, detail: String)
  /// A `.keras` zip archive is damaged or does not hold a Keras model.
  case invalidArchive(path: String, detail: String)
  /// The isolated reader process crashed, ran out of memory, or did not finish in time.
  case readerFailed(path: String, detail: String)

  /// A layer that has no conversion.
  public struct UnsupportedLayer: Equatable, Sendable, Codable, CustomStringConvertible {
    public var name: String
    public var className: String
    public init(name: String, className: String) {
      self.name = name
      self.className = className
    }
    public var description: String { "\(name) (\(className))" }

    /// Why some layers can never convert, and what to do instead.
    static let explanations: [String: String] = [
      "Lambda":
        "Lambda layers hold Python code, which is not in the .h5 file; rebuild the model without it or with a layer Keras can serialize",
      "Resizing":
        "Resizing belongs before the model: resize images to the input size before prediction (for example with Vision's VNCoreMLRequest imageCropAndScaleOption), then convert the model without the Resizing layer",
      "CenterCrop":
        "CenterCrop belongs before the model: crop images before prediction (Vision's imageCropAndScaleOption = .centerCrop), then convert the model without the CenterCrop layer",
    ]
  }

  public var description: String {
    switch self {
    case .fileNotFound(let path): return "\(path): no such file, or it cannot be read"
    case .notHDF5(let path): return "\(path): not an HDF5 file, so not a Keras .h5 model"
    case .noModelConfig(let path, let weightsOnly):
      return weightsOnly
        ? "\(path): holds Keras weights only (no 'model_config' attribute); give the architecture JSON from model.to_json() as the architecture, with these weights as the model"
        : "\(path): an HDF5 file without a Keras 'model_config' attribute"
    case .invalidConfig(let path, let detail): return "\(path): invalid Keras model config: \(detail)"
    case .unsupportedLayers(let path, let layers):
      let notes = Set(layers.map(\.className)).sorted().compactMap { UnsupportedLayer.explanations[$0] }
      return "\(path): \(layers.count) unsupported layer\(layers.count == 1 ? "" : "s"): "
        + layers.map(\.description).joined(separator: ", ") + notes.map { "\n  " + $0 }.joined()
    case .invalidLayer(let path, let layer, let className, let detail):
      return (path.isEmpty ? "" : "\(path): ") + "layer '\(layer)' (\(className)): \(detail)"
    case .invalidLayerValue(let path, let layer, let className, let field, let value, let expected):
      return "\(path): layer '\(layer)' (\(className)): '\(field)' is \(value); expected \(expected)"
    case .missingWeight(let path, let layer, let weight):
      return "\(path): layer '\(layer)' has no weight '\(weight)' in the file"
    case .weightShapeMismatch(let path, let layer, let weight, let expected, let actual):
      return "\(path): layer '\(layer)' weight '\(weight)' has shape \(actual), the config implies \(expected)"
    case .graph(let path, let detail): return "\(path): \(detail)"
    case .hdf5(let detail): return detail
    case .notRegularFile(let path, let kind):
      return
        "\(path) is \(kind), not a regular file; modelconv reads models only from regular files (a pipe or device could block forever)"
    case .unsupportedFormat(let path, let what, let advice):
      return "\(path): \(what), not a Keras model (.h5 or .keras); \(advice)"
    case .externalLink(let path, let object):
      return
        "\(path): '\(object)' is an external link into another file; modelconv does not follow them: save the model into one file (model.save)"
    case .limitExceeded(let path, let detail): return "\(path): \(detail)"
    case .invalidArchive(let path, let detail): return "\(path): not a readable .keras archive: \(detail)"
    case .readerFailed(let path, let detail):
      return "\(path): \(detail): the file is corrupt (or too large for the reader's limits)"
    }
  }
}

extension KerasReaderError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension KerasReaderError: KindedError {
  /// A file that is not there (or not a regular file) is a missing input; everything else is about the model.
  public var kind: ErrorKind {
    switch self {
    case .fileNotFound, .notRegularFile: return .missingInput
    default: return .badModel
    }
  }
}

extension KerasReaderError: RemediableError {
  /// A weights-only file needs its architecture; a `.keras` archive carries its own; a file that is an
  /// architecture (`model.to_json()`) goes beside the weights.
  public var remedy: ErrorRemedy? {
    switch self {
    case .noModelConfig(_, weightsOnly: true): return .giveArchitecture
    case .unsupportedFormat(_, let what, _) where what == "a .keras archive": return .omitArchitecture
    case .unsupportedFormat(_, _, let advice) where advice.contains("model.to_json()"): return .giveArchitecture
    default: return nil
    }
  }
}
