import ModelFormats
import ModelIR

/// Turns a Keras model into an IR graph: expands nested models and shared layers, drops
/// inference no-ops (Dropout, noise, inner InputLayers), and converts each layer to IR operations.
public struct KerasGraphImporter {
  let model: KerasModelFile
  let inputShapes: [String: [Int]]
  let customLayers: KerasCustomLayers
  var builder = GraphBuilder()

  /// Converts a model read from a Keras file.
  ///
  /// - Parameter inputShapes: shapes for inputs with unknown dimensions, keyed by Keras input
  ///   name, in Keras order with the batch dimension (`[1, H, W, C]`).
  /// - Parameter customLayers: conversions for layer classes the importer does not know, or whether to
  ///   make them Core ML custom layers.
  public static func importGraph(
    _ model: KerasModelFile, inputShapes: [String: [Int]] = [:], customLayers: KerasCustomLayers = .init()
  ) throws -> Graph {
    try checkSupported(model, customLayers: customLayers)
    var importer = KerasGraphImporter(model: model, inputShapes: inputShapes, customLayers: customLayers)
    return try importer.run()
  }

  /// Throws one error listing every layer that has no conversion.
  static func checkSupported(_ model: KerasModelFile, customLayers: KerasCustomLayers = .init()) throws {
    let unsupported = try model.config.allLayers(path: model.path)
      .filter { !KerasLayerCatalog.supportedClassNames.contains($0.className) && !customLayers.handles($0.className) }
      .map { KerasReaderError.UnsupportedLayer(name: $0.name, className: $0.className) }
    if !unsupported.isEmpty { throw KerasReaderError.unsupportedLayers(path: model.path, layers: unsupported) }
  }

  /// The name of a Sequential model's input, as the importer assigns it.
  public static func sequentialInputName(_ model: KerasModelFile) throws -> String {
    try KerasGraphImporter(model: model, inputShapes: [:], customLayers: .init()).sequentialInput(model.config).0
  }

  private mutating func run() throws -> Graph {
    let config = model.config
    var inputs: [ValueID] = []
    switch config.kind {
    case .functional:
      for reference in config.inputs {
        guard let layer = config.layers.first(where: { $0.name == reference.layer }) else {
          throw KerasReaderError.invalidConfig(
            path: model.path, detail: "input layer '\(reference.layer)' is not in the layer list")
        }
        inputs.append(try addGraphInput(name: layer.name, layerConfig: layer.config))
      }
    case .sequential:
      let (name, layerConfig) = try sequentialInput(config)
      inputs.append(try addGraphInput(name: name, layerConfig: layerConfig))
    }
    let outputs = try expand(config, inputs: inputs, weightGroup: nil)
    return builder.build(outputs: outputs)
  }

  /// The name and shape-bearing config of a Sequential model's input, looking into a nested first model.
  private func sequentialInput(_ config: KerasModelConfig) throws -> (String, JSONValue) {
    guard let first = config.layers.first else {
      throw KerasReaderError.invalidConfig(path: model.path, detail: "Sequential '\(config.name)' has no layers")
    }
    if first.className == "InputLayer" { return (first.name, first.config) }
    if first.isModel {
      let inner = try KerasModelConfig(className: first.className, config: first.config, path: model.path)
      if inner.kind == .functional, let reference = inner.inputs.first,
        let layer = inner.layers.first(where: { $0.name == reference.layer })
      {
        return (layer.name, layer.config)
      }
      return try sequentialInput(inner)
    }
    // Without an InputLayer, Keras names the implicit input after the first layer.
    return ("\(first.name)_input", first.config)
  }

  private mutating func addGraphInput(name: String, layerConfig: JSONValue) throws -> ValueID {
    let batchShape = (layerConfig["batch_input_shape"] ?? layerConfig["batch_shape"])?.array
    guard let batchShape, !batchShape.isEmpty else {
      throw KerasReaderError.invalidConfig(
        path: model.path, detail: "input '\(name)' has no batch_input_shape or batch_shape")
    }
    // Each size is null (unknown) or an exact integer of 1 or more.
    let dims = batchShape.dropFirst().map(\.int)
    for (json, dim) in zip(batchShape.dropFirst(), dims) where !json.isNull {
      guard let dim, dim >= 1, dim <= GraphLimits.maxElementCount else {
        throw KerasReaderError.invalidLayerValue(
          path: model.path, layer: name, className: "InputLayer", field: "batch_input_shape",
          value: LayerConfigReader.describe(.array(batchShape)),
          expected: "sizes that are null or integers in 1...\(GraphLimits.maxElementCount)")
      }
    }
    var shape: [Int]
    if let override = inputShapes[name] {
      shape = Array(override.dropFirst())
      guard shape.count == dims.count, zip(shape, dims).allSatisfy({ $1 == nil || $0 == $1 }) else {
        throw KerasReaderError.invalidConfig(
          path: model.path,
          detail:
            "the shape given for input '\(name)' does not fit its Keras shape \(batchShape.map { $0.int.map(String.init) ?? "None" })"
        )
      }
    } else {
      guard dims.allSatisfy({ $0 != nil }) else {
        // The batch axis (None in every Keras model) is not part of the shape here: it stays 1.
        throw UnknownInputSizes(
          path: model.path,
          inputs: [.init(name: name, dimensions: [.size(1)] + dims.map { $0.map { .size($0) } ?? .open(nil) })])
      }
      shape = dims.map { $0! }
    }
    return try graphCall { try $0.addInput(name: name, type: TensorType(shape)) }
  }

  /// Expands a (possibly nested) model on these inputs and returns its outputs.
  ///
  /// - Parameter weightGroup: the top-level weight group when inside a nested model; nil at the top.
  private mutating func expand(_ config: KerasModelConfig, inputs: [ValueID], weightGroup: String?) throws -> [ValueID]
  {
    switch config.kind {
    case .sequential:
      var current = inputs
      for layer in config.layers where layer.className != "InputLayer" {
        current = try apply(layer, inputs: current, weightGroup: weightGroup ?? layer.name)
      }
      return current
    case .functional:
      return try expandFunctional(config, inputs: inputs, weightGroup: weightGroup)
    }
  }

  private mutating func expandFunctional(_ config: KerasModelConfig, inputs: [ValueID], weightGroup: String?) throws
    -> [ValueID]
  {
    guard inputs.count == config.inputs.count else {
      throw KerasReaderError.invalidConfig(
        path: model.path,
        detail: "model '\(config.name)' takes \(config.inputs.count) inputs, called with \(inputs.count)")
    }
    var produced: [String: [Int: [ValueID]]] = [:]
    for (reference, input) in zip(config.inputs, inputs) { produced[reference.layer, default: [:]][0] = [input] }

    // Keras numbers the calls of a nested model from 1 when the model has its own first (construction) node.
    var lowestReference: [String: Int] = [:]
    for reference in config.layers.flatMap({ $0.inboundNodes.flatMap { $0 } }) + config.outputs {
      lowestReference[reference.layer] = min(lowestReference[reference.layer] ?? .max, reference.node)
    }
    let layersByName = Dictionary(config.layers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    func nodeIndex(_ reference: KerasTensorReference) -> Int {
      let isModel = layersByName[reference.layer]?.isModel ?? false
      return isModel && (lowestReference[reference.layer] ?? 0) >= 1 ? reference.node - 1 : reference.node
    }

    var pending: [(layer: KerasLayerConfig, node: Int)] = config.layers
      .filter { $0.className != "InputLayer" }
      .flatMap { layer in layer.inboundNodes.indices.map { (layer, $0) } }
    while !pending.isEmpty {
      var progressed = false
      var remaining: [(layer: KerasLayerConfig, node: Int)] = []
      for call in pending {
        let references = call.layer.inboundNodes[call.node]
        let resolved = references.compactMap { produced[$0.layer]?[nodeIndex($0)]?[safe: $0.tensor] }
        guard resolved.count == references.count, !references.isEmpty else {
          remaining.append(call)
          continue
        }
        let outputs = try apply(call.layer, inputs: resolved, weightGroup: weightGroup ?? call.layer.name)
        produced[call.layer.name, default: [:]][call.node] = outputs
        progressed = true
      }
      if !progressed {
        let names = remaining.map(\.layer.name).joined(separator: ", ")
        throw KerasReaderError.invalidConfig(path: model.path, detail: "cannot resolve the inputs of layers: \(names)")
      }
      pending = remaining
    }
    return try config.outputs.map { reference in
      guard let value = produced[reference.layer]?[nodeIndex(reference)]?[safe: reference.tensor] else {
        throw KerasReaderError.invalidConfig(path: model.path, detail: "output '\(reference.layer)' is never computed")
      }
      return value
    }
  }

  /// Applies one layer call: expands nested models, converts layers.
  private mutating func apply(_ layer: KerasLayerConfig, inputs: [ValueID], weightGroup: String) throws -> [ValueID] {
    if layer.isModel {
      let inner = try KerasModelConfig(className: layer.className, config: layer.config, path: model.path)
      return try expand(inner, inputs: inputs, weightGroup: weightGroup)
    }
    return [try convert(layer, inputs: inputs, weightGroup: weightGroup)]
  }

  /// Runs a builder call, reporting shape errors with the file path.
  mutating func graphCall<T>(_ body: (inout GraphBuilder) throws -> T) throws -> T {
    do { return try body(&builder) } catch let error as GraphError {
      throw KerasReaderError.graph(path: model.path, detail: error.description)
    }
  }
}

extension Array {
  subscript(safe index: Int) -> Element? { indices.contains(index) ? self[index] : nil }
}
