/// One Keras layer as `model.summary()` lists it: nested models expanded into their layers.
public struct KerasLayerEntry: Sendable, Equatable {
  public var name: String
  public var className: String
  /// The outermost layer holding it in the file's weight groups: itself, or the nested model it is in.
  public var topLevel: String
  /// The layers it is called on (empty for a Sequential model's implicit chain and for inputs).
  public var inboundLayers: [String]
  /// The values stored for it, trainable and not (`count_params()` in Keras).
  public var parameterCount: Int
}

extension KerasModelFile {
  /// Every layer in config order, nested models expanded, with its stored parameter count.
  ///
  /// Counts come from the weight datasets the file holds for the layer (found through `weight_names`, as
  /// the converter finds them), so they are what Keras counts, batch-normalization statistics included.
  public func layerInventory() throws -> [KerasLayerEntry] {
    var entries: [KerasLayerEntry] = []
    func walk(_ model: KerasModelConfig, topLevel: String?) throws {
      for layer in model.layers {
        let top = topLevel ?? layer.name
        if layer.isModel {
          try walk(KerasModelConfig(className: layer.className, config: layer.config, path: path), topLevel: top)
          continue
        }
        let inbound = layer.inboundNodes.first?.map(\.layer) ?? []
        entries.append(
          KerasLayerEntry(
            name: layer.name, className: layer.className, topLevel: top, inboundLayers: inbound,
            parameterCount: storedParameterCount(layer: layer.name, topLevel: top)))
      }
    }
    try walk(config, topLevel: nil)
    return entries
  }

  /// Every value stored in the file's weight groups.
  public var storedParameterCount: Int { KerasWeightStore.valueCount(weights.datasets) }

  /// The values stored for one layer: the whole group of a top-level layer, or the names under a nested layer.
  func storedParameterCount(layer: String, topLevel: String) -> Int {
    guard let group = weights.datasets[topLevel] else { return 0 }
    return Set(weights.names(ownedBy: layer, topLevel: topLevel)).reduce(0) { sum, name in
      if case .values(_, let values)? = group[name] { return sum + values.count }
      return sum
    }
  }
}
