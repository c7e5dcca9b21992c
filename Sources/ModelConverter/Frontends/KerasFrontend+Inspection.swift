import Foundation
import KerasFormat
import ModelIR

extension KerasFrontend {
  static func inspectKeras(_ url: URL, format: ModelFileFormat, inputShapes: [String: [Int]]) throws -> ModelInspection
  {
    let keras = try KerasModelFile(path: url.path)
    let entries = try keras.layerInventory()
    var graph: Graph?
    var unavailable: String?
    do {
      graph = try KerasGraphImporter.importGraph(keras, inputShapes: inputShapes)
    } catch {
      unavailable = String(describing: error)
    }

    var shapes: [String: [Int]] = [:]
    if let graph {
      for id in graph.inputs { shapes[graph[id].name] = graph[id].type.shape }
      for node in graph.nodes { if let origin = node.origin { shapes[origin.name] = graph[node.output].type.shape } }
    }
    var layers: [ModelInspection.Layer] = []
    for entry in entries {
      var shape = shapes[entry.name]
      // Layers that compute nothing (Dropout, a nested model's InputLayer) have their input's shape.
      if shape == nil, graph != nil {
        shape =
          entry.inboundLayers.count == 1
          ? shapes[entry.inboundLayers[0]] : entry.inboundLayers.isEmpty ? layers.last?.outputShape : nil
        if let shape { shapes[entry.name] = shape }
      }
      layers.append(
        .init(name: entry.name, type: entry.className, outputShape: shape, parameterCount: entry.parameterCount))
    }

    func feature(_ id: ValueID, in graph: Graph) -> ConversionSummary.Feature {
      .init(name: graph[id].name, type: .init(kind: "multiArray", shape: graph[id].type.shape, dataType: "float32"))
    }
    // Outputs go by the Keras layers that produce them (the graph's own value names are internal).
    let outputLayers =
      keras.config.kind == .functional
      ? keras.config.outputs.map(\.layer) : [keras.config.layers.last?.name].compactMap { $0 }
    func outputFeatures(_ graph: Graph) -> [ConversionSummary.Feature] {
      graph.outputs.enumerated().map { index, id in
        var feature = feature(id, in: graph)
        if outputLayers.count == graph.outputs.count { feature.name = outputLayers[index] }
        return feature
      }
    }
    let parameters = keras.storedParameterCount
    let archive = format == .kerasArchive
    var line = archive ? "Keras archive (.keras)" : "Keras HDF5 (.h5)"
    if let version = keras.kerasVersion { line += ", Keras \(version)" }
    if let backend = keras.backend { line += ", backend \(backend)" }
    let sequential = keras.config.kind == .sequential
    let presentation = ModelInspection.Presentation(
      format: line, fields: [("Model", ["\(sequential ? "Sequential" : "Functional") '\(keras.config.name)'"])],
      layerNoun: "layer",
      shapesAfterBatch: true, declaresLabels: false)
    return ModelInspection(
      path: url.path, format: archive ? .kerasArchive : .kerasHDF5,
      kind: .init(sequential ? "kerasSequential" : "kerasFunctional"),
      isRunnable: true, presentation: presentation,
      producer: keras.kerasVersion == nil && keras.backend == nil
        ? nil : .init(name: "Keras", version: keras.kerasVersion, backend: keras.backend),
      specificationVersion: nil, opset: nil, oldestReleases: [],
      inputs: graph.map { g in g.inputs.map { feature($0, in: g) } } ?? [],
      outputs: graph.map(outputFeatures) ?? [], imageInputs: [], labels: [],
      metadata: .init(name: keras.config.name, userDefined: []), layers: layers, shapesUnavailable: unavailable,
      parameterCount: parameters,
      // The reader holds every weight as float32 (float16 and float64 datasets are converted on reading).
      weights: parameters > 0 ? [.init(dataType: "float32", count: parameters, bytes: parameters * 4)] : [])
  }

}

extension ModelInspection.FileFormat {
  /// A legacy Keras HDF5 file (`model.save("model.h5")`) and a Keras 3 `.keras` zip archive.
  public static let kerasHDF5 = Self("kerasHDF5")
  public static let kerasArchive = Self("kerasArchive")
}
