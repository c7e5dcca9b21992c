import CProtobufC
import CoreMLSpec
import Foundation

/// Decodes `.mlmodel` bytes with protoc-c's generated reader into a `CoreMLModelSpec`.
public enum CoreMLSpecReader {
  /// Decodes a serialized `Model`.
  public static func read(_ bytes: [UInt8], path: String = "<memory>") throws -> CoreMLModelSpec {
    guard let model = bytes.withUnsafeBufferPointer({ core_ml__specification__model__unpack(nil, $0.count, $0.baseAddress) }) else {
      throw CoreMLReaderError.malformed(path: path)
    }
    defer { core_ml__specification__model__free_unpacked(model, nil) }
    let m = model.pointee

    var spec = CoreMLModelSpec(
      specificationVersion: Int(m.specificationversion), modelType: "", inputs: [], outputs: [],
      predictedFeatureName: "", predictedProbabilitiesName: "", layers: [], preprocessing: [],
      stringClassLabels: [], int64ClassLabels: [], labelProbabilityLayerName: "",
      shortDescription: "", author: "", license: "", version: "", userDefined: [:])
    if let description = m.description?.pointee {
      spec.inputs = buffer(description.input, description.n_input).compactMap { $0.map(feature) }
      spec.outputs = buffer(description.output, description.n_output).compactMap { $0.map(feature) }
      spec.predictedFeatureName = text(description.predictedfeaturename)
      spec.predictedProbabilitiesName = text(description.predictedprobabilitiesname)
      if let metadata = description.metadata?.pointee {
        spec.shortDescription = text(metadata.shortdescription)
        spec.author = text(metadata.author)
        spec.license = text(metadata.license)
        spec.version = text(metadata.versionstring)
        for entry in buffer(metadata.userdefined, metadata.n_userdefined) {
          if let entry { spec.userDefined[text(entry.pointee.key)] = text(entry.pointee.value) }
        }
      }
    }

    switch m.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER:
      let network = m.neuralnetworkclassifier.pointee
      spec.modelType = "neuralNetworkClassifier"
      spec.layers = buffer(network.layers, network.n_layers).compactMap { $0.map(layer) }
      spec.preprocessing = buffer(network.preprocessing, network.n_preprocessing).compactMap { $0.flatMap(scaler) }
      spec.labelProbabilityLayerName = text(network.labelprobabilitylayername)
      switch network.class_labels_case {
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_STRING_CLASS_LABELS:
        let vector = network.stringclasslabels.pointee
        spec.stringClassLabels = buffer(vector.vector, vector.n_vector).map { text($0) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_INT64_CLASS_LABELS:
        let vector = network.int64classlabels.pointee
        spec.int64ClassLabels = buffer(vector.vector, vector.n_vector)
      default: break
      }
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK:
      let network = m.neuralnetwork.pointee
      spec.modelType = "neuralNetwork"
      spec.layers = buffer(network.layers, network.n_layers).compactMap { $0.map(layer) }
      spec.preprocessing = buffer(network.preprocessing, network.n_preprocessing).compactMap { $0.flatMap(scaler) }
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR:
      let network = m.neuralnetworkregressor.pointee
      spec.modelType = "neuralNetworkRegressor"
      spec.layers = buffer(network.layers, network.n_layers).compactMap { $0.map(layer) }
      spec.preprocessing = buffer(network.preprocessing, network.n_preprocessing).compactMap { $0.flatMap(scaler) }
    default:
      throw CoreMLReaderError.unsupportedModelType(path: path)
    }
    return spec
  }

  /// Reads and decodes a `.mlmodel` file.
  public static func read(contentsOf url: URL) throws -> CoreMLModelSpec {
    guard let data = FileManager.default.contents(atPath: url.path) else { throw CoreMLReaderError.malformed(path: url.path) }
    return try read([UInt8](data), path: url.path)
  }

  // MARK: Helpers

  static func buffer<T>(_ pointer: UnsafeMutablePointer<T>?, _ count: Int) -> [T] {
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: count))
  }

  static func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

  static func ints(_ pointer: UnsafeMutablePointer<UInt64>?, _ count: Int) -> [Int] { buffer(pointer, count).map { Int($0) } }

  private static func feature(_ pointer: UnsafeMutablePointer<CoreML__Specification__FeatureDescription>) -> CoreMLModelSpec.Feature {
    let description = pointer.pointee
    let name = text(description.name)
    guard let type = description.type?.pointee else { return .init(name: name, kind: .double) }
    switch type.type_case {
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE:
      let array = type.multiarraytype.pointee
      return .init(name: name, kind: .multiArray(shape: buffer(array.shape, array.n_shape).map { Int($0) }, dataType: Int(array.datatype.rawValue)))
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE:
      let image = type.imagetype.pointee
      let spaces: [UInt32: String] = [10: "GRAYSCALE", 20: "RGB", 30: "BGR", 40: "GRAYSCALE_FLOAT16"]
      return .init(name: name, kind: .image(width: Int(image.width), height: Int(image.height), colorSpace: spaces[image.colorspace.rawValue] ?? "INVALID"))
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_DICTIONARY_TYPE:
      let keyType = type.dictionarytype.pointee.key_type_case == CORE_ML__SPECIFICATION__DICTIONARY_FEATURE_TYPE__KEY_TYPE_INT64_KEY_TYPE ? "int64" : "string"
      return .init(name: name, kind: .dictionary(keyType: keyType))
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_STRING_TYPE: return .init(name: name, kind: .string)
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_INT64_TYPE: return .init(name: name, kind: .int64)
    default: return .init(name: name, kind: .double)
    }
  }

  private static func scaler(_ pointer: UnsafeMutablePointer<CoreML__Specification__NeuralNetworkPreprocessing>) -> CoreMLModelSpec.ImageScaler? {
    guard pointer.pointee.preprocessor_case == CORE_ML__SPECIFICATION__NEURAL_NETWORK_PREPROCESSING__PREPROCESSOR_SCALER else { return nil }
    let scaler = pointer.pointee.scaler.pointee
    return .init(
      featureName: text(pointer.pointee.featurename), channelScale: scaler.channelscale, redBias: scaler.redbias,
      greenBias: scaler.greenbias, blueBias: scaler.bluebias, grayBias: scaler.graybias)
  }
}
