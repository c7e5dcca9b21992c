import CoreMLFormat
import Foundation
import KerasFormat
import ModelIR

/// Converts Keras `.h5` models to Core ML, as coremltools' `converters.keras.convert` did.
///
/// ```swift
/// let model = try KerasConverter.convert(
///   modelAt: URL(fileURLWithPath: "model_v6.h5"),
///   options: ConversionOptions(
///     inputNames: ["image"], outputNames: ["output"], imageInputNames: ["image"],
///     classLabels: .strings(["Angry", "Disgust", "Fear", "Happy", "Neutral", "Sad", "Surprise"]),
///     imageScale: 1 / 255))
/// try model.write(to: URL(fileURLWithPath: "Emotion.mlmodel"))
/// ```
///
/// With `format: .mlProgram` the result is an ML Program, written as an `.mlpackage` folder.
public enum KerasConverter {
  /// Converts a full Keras model file (`model.save("x.h5")`).
  public static func convert(modelAt url: URL, options: ConversionOptions = ConversionOptions()) throws -> ConvertedModel {
    try convert(try KerasModelFile(path: url.path), options: options)
  }

  /// Converts a weights-only `.h5` file with its architecture JSON (`model.to_json()`).
  public static func convert(architectureAt json: URL, weightsAt weights: URL, options: ConversionOptions = ConversionOptions()) throws -> ConvertedModel {
    try convert(try KerasModelFile(weightsPath: weights.path, architectureJSONPath: json.path), options: options)
  }

  /// Converts an opened Keras model.
  public static func convert(_ keras: KerasModelFile, options: ConversionOptions) throws -> ConvertedModel {
    var graph = try importGraph(keras, options: options).withoutCancellingReshapes()
    if !options.allowNonFinite { try WeightValueCheck.check(graph) }
    var imageInputs: [String: ImagePreprocessing] = [:]
    for name in options.imageInputNames {
      var preprocessing = options.imagePreprocessing
      // A Rescaling or Normalization right after the image input becomes part of Core ML's scaler.
      if let id = graph.inputs.first(where: { graph[$0].name == name }), let fold = InputPreprocessingFold.find(input: id, in: graph) {
        preprocessing = fold.combined(with: preprocessing, channels: graph[id].type.shape.last ?? 1)
        graph = graph.bypassing(nodeAt: fold.nodeIndex)
      }
      imageInputs[name] = preprocessing
    }
    let writerOptions = CoreMLWriterOptions(
      imageInputs: imageInputs,
      classifier: options.classLabels.map {
        ClassifierSettings(labels: $0, predictedFeatureName: options.predictedFeatureName, probabilitiesOutput: options.predictedProbabilitiesOutput)
      },
      precision: options.resolvedPrecision,
      metadata: ModelMetadata(
        shortDescription: options.shortDescription, author: options.author, license: options.license, version: options.version,
        userDefined: [
          "modelconv.version": ModelConverterVersion.current,
          "modelconv.source": "keras",
          "modelconv.source_keras_version": keras.kerasVersion ?? "unknown",
        ]),
      target: options.target)
    let encoded = try CoreMLWriters.writer(for: options.format).encode(graph, options: writerOptions)
    return ConvertedModel(graph: graph, writerOptions: writerOptions, encoded: encoded, sourceKerasVersion: keras.kerasVersion)
  }

  /// Reads the Keras model into the IR and applies the input and output names.
  public static func importGraph(_ keras: KerasModelFile, options: ConversionOptions) throws -> Graph {
    // The graph is first built to learn the Keras input names, so shapes may be keyed by either name.
    let kerasInputNames = try inputNames(of: keras)
    let newInputNames = options.inputNames ?? kerasInputNames.indices.map { "input\($0 + 1)" }
    guard newInputNames.count == kerasInputNames.count else {
      throw ConversionError.nameCountMismatch(kind: "input", given: newInputNames.count, expected: kerasInputNames.count)
    }
    var shapes: [String: [Int]] = [:]
    for (kerasName, newName) in zip(kerasInputNames, newInputNames) {
      if let shape = options.inputShapes[kerasName] ?? options.inputShapes[newName] { shapes[kerasName] = shape }
    }
    var graph = try KerasGraphImporter.importGraph(keras, inputShapes: shapes, customLayers: options.customLayers)
    let newOutputNames = options.outputNames ?? graph.outputs.indices.map { "output\($0 + 1)" }
    guard newOutputNames.count == graph.outputs.count else {
      throw ConversionError.nameCountMismatch(kind: "output", given: newOutputNames.count, expected: graph.outputs.count)
    }
    for (id, name) in zip(graph.inputs, newInputNames) { try graph.rename(id, to: name) }
    for (id, name) in zip(graph.outputs, newOutputNames) { try graph.rename(id, to: name) }
    return graph
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
