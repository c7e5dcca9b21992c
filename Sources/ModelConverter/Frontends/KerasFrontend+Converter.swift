import CoreMLFormat
import Foundation
import KerasFormat
import ModelIR

/// Converts Keras `.h5` models to Core ML, as coremltools' `converters.keras.convert` did: the Keras-only
/// entry points of `Converter`, kept for callers that open Keras files themselves.
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
  public static func convert(modelAt url: URL, options: ConversionOptions = ConversionOptions()) throws
    -> ConvertedModel
  {
    try convert(try KerasModelFile(path: url.path), options: options)
  }

  /// Converts a weights-only `.h5` file with its architecture JSON (`model.to_json()`).
  public static func convert(
    architectureAt json: URL, weightsAt weights: URL, options: ConversionOptions = ConversionOptions()
  ) throws -> ConvertedModel {
    try convert(try KerasModelFile(weightsPath: weights.path, architectureJSONPath: json.path), options: options)
  }

  /// Converts an opened Keras model.
  public static func convert(_ keras: KerasModelFile, options: ConversionOptions) throws -> ConvertedModel {
    try Converter.convert(KerasFrontend().importSource(keras, options: options.sourceOptions), options: options)
  }

  /// Reads the Keras model into the IR and applies the input and output names.
  public static func importGraph(_ keras: KerasModelFile, options: ConversionOptions) throws -> Graph {
    try KerasFrontend.importGraph(keras, options: options.sourceOptions)
  }
}
