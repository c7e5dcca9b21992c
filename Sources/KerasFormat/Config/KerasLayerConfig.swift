import ModelFormats

/// One layer entry of a Keras model config, with its calls.
public struct KerasLayerConfig: Sendable {
  public var className: String
  public var name: String
  /// The layer's own `config` object.
  public var config: JSONValue
  /// One entry per call of the layer in the enclosing functional model; each lists the input tensors.
  public var inboundNodes: [[KerasTensorReference]]

  /// Parses a layer entry; Keras 2 and Keras 3 inbound-node forms both work.
  init(entry: JSONValue, path: String) throws {
    guard let className = entry["class_name"]?.string, let config = entry["config"] else {
      throw KerasReaderError.invalidConfig(path: path, detail: "a layer entry without class_name or config")
    }
    (self.className, self.config) = KerasLegacyConfig.modernized(className: className, config: config)
    guard let name = entry["name"]?.string ?? config["name"]?.string else {
      throw KerasReaderError.invalidConfig(path: path, detail: "a \(className) layer without a name")
    }
    self.name = name
    self.inboundNodes = (entry["inbound_nodes"]?.array ?? []).map { node in
      if node["args"] != nil { return KerasTensorReference.collect(in: node["args"]!) }
      return (node.array ?? []).compactMap(KerasTensorReference.init(list:))
    }
  }

  /// A layer with this class, name and config and no calls (for layers wrapped in another).
  init(className: String, name: String, config: JSONValue) {
    self.className = className
    self.name = name
    self.config = config
    self.inboundNodes = []
  }

  /// A wrapped layer's `{class_name, config}` object, named after its own config.
  init?(wrapped json: JSONValue) {
    guard let className = json["class_name"]?.string, let config = json["config"] else { return nil }
    self.init(className: className, name: config["name"]?.string ?? className, config: config)
  }

  /// Whether this entry is itself a model (nested Sequential or Functional).
  public var isModel: Bool { KerasModelConfig.modelClassNames.contains(className) }
}
