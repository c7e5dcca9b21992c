import ModelFormats

/// A reference to one output tensor of one call of a layer: `[layer, node, tensor]` in a Keras config.
public struct KerasTensorReference: Equatable, Sendable {
  public var layer: String
  public var node: Int
  public var tensor: Int

  /// Parses the Keras 2 list form `[name, node, tensor, kwargs?]`.
  init?(list: JSONValue) {
    guard let items = list.array, items.count >= 3, let name = items[0].string,
      let node = items[1].int, let tensor = items[2].int, node >= 0, tensor >= 0
    else { return nil }
    self.layer = name
    self.node = node
    self.tensor = tensor
  }

  /// Parses a Keras 3 `__keras_tensor__` object with its `keras_history`.
  init?(kerasTensor: JSONValue) {
    guard kerasTensor["class_name"]?.string == "__keras_tensor__",
      let history = kerasTensor["config"]?["keras_history"]
    else { return nil }
    self.init(list: history)
  }

  /// Every tensor reference inside a Keras 3 call's `args`, in order.
  static func collect(in value: JSONValue) -> [KerasTensorReference] {
    if let reference = KerasTensorReference(kerasTensor: value) { return [reference] }
    switch value {
    case .array(let items): return items.flatMap(collect(in:))
    default: return []
    }
  }
}
