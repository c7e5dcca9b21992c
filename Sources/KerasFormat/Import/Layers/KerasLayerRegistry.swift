import ModelFormats
import ModelIR

/// Converts one call of a layer into IR nodes and returns the output value.
typealias KerasLayerHandler = @Sendable (inout KerasGraphImporter, KerasLayerCall) throws -> ValueID

/// Every Keras layer class the importer converts, keyed by class name, one handler per class or family.
///
/// Each family file (`Layers/*.swift`) declares its own table; aliases (`Conv2D` and `Convolution2D`) map
/// to the same handler. This is the only list of converted classes: `KerasLayerCatalog` derives from it.
enum KerasLayerRegistry {
  /// The family tables, each named, in no particular order; a class name belongs to one family only.
  static let families: [(family: String, handlers: [String: KerasLayerHandler])] = [
    ("no-ops", noOpHandlers),
    ("core", coreHandlers),
    ("convolution", convolutionHandlers),
    ("activations", activationHandlers),
    ("pooling", poolingHandlers),
    ("shaping", shapingHandlers),
    ("merging", mergingHandlers),
    ("embedding", embeddingHandlers),
    ("recurrent", recurrentHandlers),
    ("bidirectional", bidirectionalHandlers),
    ("time-distributed", timeDistributedHandlers),
    ("sequence 1-D", sequence1DHandlers),
    ("normalization", normalizationHandlers),
    ("dot", dotHandlers),
  ]

  /// The weight kinds a layer class stores, in the order Keras 3's `.keras` archives store them
  /// (trainable, then non-trainable), by class name, from each family's `storedWeights` table; a class
  /// no family lists stores `kernel` then `bias`.
  static let storedWeights: [String: @Sendable (JSONValue) -> [String]] = [
    convolutionStoredWeights, normalizationStoredWeights, embeddingStoredWeights, activationStoredWeights,
    recurrentStoredWeights,
  ].reduce(into: [:]) { all, family in
    all.merge(family) { _, _ in preconditionFailure("a Keras class's stored weights are declared by two families") }
  }

  /// The weight kinds `className` stores, in Keras 3's order.
  static func storedWeightKinds(_ className: String, config: JSONValue) -> [String] {
    storedWeights[className]?(config) ?? ["kernel", "bias"]
  }

  /// All handlers by class name.
  static let handlers: [String: KerasLayerHandler] = families.reduce(into: [:]) { all, entry in
    all.merge(entry.handlers) { _, _ in preconditionFailure("a Keras class name is registered by two families") }
  }
}

/// One call of a (non-model) layer, as its handler sees it.
struct KerasLayerCall {
  let layer: KerasLayerConfig
  let inputs: [ValueID]
  /// The top-level weight group the layer's weights are stored under.
  let weightGroup: String
  let reader: LayerConfigReader

  var className: String { layer.className }

  /// The one input of a single-input layer.
  func single() throws -> ValueID { try reader.single(inputs) }
}

extension KerasGraphImporter {
  /// A weight of the call's layer, checked against `shape` when given.
  func weight(_ kinds: [String], _ shape: [Int]?, _ call: KerasLayerCall) throws -> Constant {
    try model.weights.weight(kinds, layer: call.layer.name, topLevel: call.weightGroup, expectedShape: shape)
  }

  /// Adds a node named after the call's layer (plus `suffix`).
  mutating func add(_ operation: Operation, _ nodeInputs: [ValueID], _ call: KerasLayerCall, suffix: String = "") throws
    -> ValueID
  {
    try graphCall { try $0.add(operation, name: call.layer.name + suffix, inputs: nodeInputs) }
  }

  /// The shape of a value already in the graph.
  func shape(_ id: ValueID) -> [Int] { builder.type(of: id).shape }
}
