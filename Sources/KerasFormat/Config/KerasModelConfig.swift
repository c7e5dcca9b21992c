import ModelFormats

/// The architecture of a Keras model: its layers and, for functional models, its wiring.
public struct KerasModelConfig: Sendable {
  /// Class names that denote a model rather than a layer.
  static let modelClassNames: Set<String> = ["Sequential", "Functional", "Model"]

  public enum Kind: Sendable { case sequential, functional }

  public var kind: Kind
  public var name: String
  public var layers: [KerasLayerConfig]
  /// Functional models only: the input layers, in order.
  public var inputs: [KerasTensorReference]
  /// Functional models only: the output tensors, in order.
  public var outputs: [KerasTensorReference]

  /// Parses `{"class_name": ..., "config": ...}` as stored in `model_config` or `model.to_json()`.
  public init(json: JSONValue, path: String) throws {
    guard let className = json["class_name"]?.string, let config = json["config"] else {
      throw KerasReaderError.invalidConfig(path: path, detail: "no top-level class_name and config")
    }
    try self.init(className: className, config: config, path: path)
  }

  init(className: String, config: JSONValue, path: String) throws {
    switch className {
    case "Sequential":
      kind = .sequential
      // Keras 2.0-2.1 stored a Sequential config as the bare list of layers.
      let entries = config.array ?? config["layers"]?.array
      guard let entries else { throw KerasReaderError.invalidConfig(path: path, detail: "Sequential without layers") }
      name = config["name"]?.string ?? "sequential"
      layers = try entries.map { try KerasLayerConfig(entry: $0, path: path) }
      inputs = []
      outputs = []
    case "Functional", "Model":
      kind = .functional
      guard let entries = config["layers"]?.array else {
        throw KerasReaderError.invalidConfig(path: path, detail: "\(className) without layers")
      }
      name = config["name"]?.string ?? "model"
      layers = try entries.map { try KerasLayerConfig(entry: $0, path: path) }
      inputs = Self.references(config["input_layers"])
      outputs = Self.references(config["output_layers"])
      guard !inputs.isEmpty, !outputs.isEmpty else {
        throw KerasReaderError.invalidConfig(
          path: path, detail: "\(className) '\(name)' without input_layers or output_layers")
      }
    default:
      throw KerasReaderError.invalidConfig(
        path: path, detail: "the top level is a '\(className)', not a Sequential or Functional model")
    }
  }

  /// `[[name, node, tensor], ...]`, or Keras 3's bare `[name, node, tensor]` for a single tensor.
  private static func references(_ value: JSONValue?) -> [KerasTensorReference] {
    guard let items = value?.array else { return [] }
    if items.first?.string != nil { return KerasTensorReference(list: value!).map { [$0] } ?? [] }
    return items.compactMap(KerasTensorReference.init(list:))
  }

  /// Every (name, class) of the non-model layers, nested models expanded.
  public func allLayers(path: String) throws -> [KerasLayerConfig] {
    try layers.flatMap { layer -> [KerasLayerConfig] in
      guard layer.isModel else { return [layer] }
      return try KerasModelConfig(className: layer.className, config: layer.config, path: path).allLayers(path: path)
    }
  }
}
