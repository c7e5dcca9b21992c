import Foundation
import KerasFormat
import ModelFormats
import ModelIR

/// Keras models: legacy HDF5 `.h5` files (Keras 1-3, tf_keras) and Keras 3 `.keras` archives, read in
/// an isolated child process (see `KerasModelFile`).
public struct KerasFrontend: ModelFrontend {
  public let name = "keras"
  public let displayName = "Keras"
  public let fileExtensions = ["h5", "keras"]
  public let kinds: Set<ModelFileKind> = [.hdf5, .zipArchive]
  public let summary = """
    A Keras model (.h5 of Keras 1-3 and tf_keras, or a Keras 3 .keras archive) converts with its
    channels-last layout; its image inputs take the preprocessing it was trained on from the options.
    """

  public init() {}

  public func importSource(at url: URL, options: SourceOptions) throws -> ImportedSource {
    var source = try importSource(open(url, options), options: options)
    if let architecture = options.architecture { source.additionalPaths.append(architecture.path) }
    return source
  }

  public func inspect(at url: URL, options: SourceOptions) throws -> ModelInspection {
    try Self.inspectKeras(url, format: ModelFileFormat.check(url.path), inputShapes: options.inputShapes)
  }

  func open(_ url: URL, _ options: SourceOptions) throws -> KerasModelFile {
    if let architecture = options.architecture {
      return try KerasModelFile(weightsPath: url.path, architectureJSONPath: architecture.path)
    }
    return try KerasModelFile(path: url.path)
  }

  /// An opened Keras model as a source: coremltools' default names (`input1`, `output1`, ...), Keras'
  /// version recorded.
  func importSource(_ keras: KerasModelFile, options: SourceOptions) throws -> ImportedSource {
    var source = ImportedSource(
      format: name, modelKind: "keras", path: keras.path, graph: try Self.importGraph(keras, options: options))
    source.producerVersion = keras.kerasVersion
    source.inputSourceNames = try Self.inputNames(of: keras)
    source.provenance = [
      "modelconv.source": "keras", "modelconv.source_keras_version": keras.kerasVersion ?? "unknown",
    ]
    return source
  }

  /// Reads the Keras model into the IR and applies the input and output names.
  static func importGraph(_ keras: KerasModelFile, options: SourceOptions) throws -> Graph {
    // The graph is first built to learn the Keras input names, so shapes may be keyed by either name.
    let kerasInputNames = try inputNames(of: keras)
    let newInputNames = options.inputNames ?? kerasInputNames.indices.map { "input\($0 + 1)" }
    guard newInputNames.count == kerasInputNames.count else {
      throw ConversionError.nameCountMismatch(
        kind: "input", given: newInputNames.count, expected: kerasInputNames.count)
    }
    var shapes: [String: [Int]] = [:]
    for (kerasName, newName) in zip(kerasInputNames, newInputNames) {
      if let shape = options.inputShapes[kerasName] ?? options.inputShapes[newName] { shapes[kerasName] = shape }
    }
    let known = Set(kerasInputNames + newInputNames)
    if let unknown = options.inputShapes.keys.sorted().first(where: { !known.contains($0) }) {
      throw ConversionError.unknownInput(name: unknown, known: kerasInputNames)
    }
    var graph = try KerasGraphImporter.importGraph(keras, inputShapes: shapes, customLayers: Self.customLayers(options))
    let newOutputNames = options.outputNames ?? graph.outputs.indices.map { "output\($0 + 1)" }
    guard newOutputNames.count == graph.outputs.count else {
      throw ConversionError.nameCountMismatch(
        kind: "output", given: newOutputNames.count, expected: graph.outputs.count)
    }
    for (id, name) in zip(graph.inputs, newInputNames) { try graph.rename(id, to: name) }
    for (id, name) in zip(graph.outputs, newOutputNames) { try graph.rename(id, to: name) }
    return graph
  }

  /// The custom layer conversions the options carry, with unknown classes made custom when asked.
  static func customLayers(_ options: SourceOptions) -> KerasCustomLayers {
    var layers = options.settings[KerasCustomLayers.self] ?? KerasCustomLayers()
    if options.unknownLayersAsCustom { layers.convertUnknown = true }
    return layers
  }

  /// The Keras names of the model inputs, in order.
  static func inputNames(of keras: KerasModelFile) throws -> [String] {
    let config = keras.config
    switch config.kind {
    case .functional: return config.inputs.map(\.layer)
    case .sequential:
      // A Sequential has one input; its name comes from the importer's own rule.
      return [try KerasGraphImporter.sequentialInputName(keras)]
    }
  }
}

/// Conversions for Keras layer classes travel through the neutral options as a frontend setting.
extension KerasCustomLayers: FrontendSetting {}
