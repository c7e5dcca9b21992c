import Foundation
import ModelFormats

/// Why an IR graph could not be written as a Core ML model.
public enum CoreMLWriterError: Error, Equatable, CustomStringConvertible {
  /// An operation has no Core ML neural-network layer mapping with these attributes.
  case unsupportedOperation(layer: String, detail: String)
  /// Several layers the format cannot express, all named at once (each as `unsupportedOperation`).
  case unsupportedOperations([CoreMLWriterError])
  /// A name given in the options is not an input or output of the graph.
  case unknownFeature(kind: String, name: String, available: [String])
  /// An image input must be `[H, W, 1]` or `[H, W, 3]`.
  case invalidImageInput(name: String, shape: [Int])
  /// The number of class labels differs from the width of the probability output.
  case labelCountMismatch(labels: Int, output: String, width: Int)
  /// A weight does not fit in float16.
  case float16Overflow(layer: String, value: Float)
  /// A name is empty or has a control character (see `CoreMLWriter.checkNames`); `layer` is the layer making a tensor.
  case invalidName(kind: String, name: String, layer: String?)
  /// Option values conflict or are empty.
  case invalidOption(String)
  /// The model needs a newer specification (or format) than the deployment target loads.
  case targetTooOld(target: String, needs: Int, reason: String)
  /// The serialized specification would be larger than one protobuf message may be (`CoreMLLimits`).
  case specificationTooLarge(bytes: Int, limit: Int, float32Weights: Bool)
  /// A layer of a flexible model that computes only the default input size: the same model written at
  /// another allowed size differs in this layer's parameters (a size is written into it).
  case fixedSizeLayer(layer: String, detail: String)

  public var description: String {
    switch self {
    case .unsupportedOperation(let layer, let detail): return "layer '\(layer)': \(detail)"
    case .unsupportedOperations(let errors):
      return "\(errors.count) layers cannot be written in this format: "
        + errors.map(\.description).joined(separator: "; ")
    case .unknownFeature(let kind, let name, let available):
      return "no \(kind) named '\(name)' (the model has: \(available.joined(separator: ", ")))"
    case .invalidImageInput(let name, let shape):
      return "input '\(name)' has shape \(shape); an image input needs [H, W, 1] (grayscale) or [H, W, 3] (color)"
    case .labelCountMismatch(let labels, let output, let width):
      return "\(labels) class labels, but the probability output '\(output)' has \(width) values"
    case .float16Overflow(let layer, let value):
      return "layer '\(layer)': weight \(value) is outside the float16 range (max 65504); write float32 weights"
    case .invalidName(let kind, let name, let layer):
      let owner = layer.map { " (made by layer \($0.debugDescription))" } ?? ""
      return
        "\(kind) name \(name.debugDescription)\(owner) is empty or contains a control character (NUL, newline, tab, ...); rename it in the source model before converting"
    case .invalidOption(let detail): return detail
    case .fixedSizeLayer(let layer, let detail):
      return
        "layer '\(layer)' cannot take flexible input sizes: \(detail); give that input one size, or sizes this layer allows"
    case .specificationTooLarge(let bytes, let limit, let float32Weights):
      let halves = float32Weights ? "float16 weights (half the size of float32) or " : ""
      return
        "the neural network would be \(bytes) bytes, more than the \(limit) bytes one protobuf message may hold, so Core ML could not read it; write \(halves)an ML Program, whose weights live in a separate weight file"
    case .targetTooOld(let target, let needs, let reason):
      return
        "\(reason), which \(target) cannot load (it reads specification versions up to \(DeploymentTarget.parse(target)?.specificationVersion ?? 0); version \(needs) needs a newer release)"
    }
  }
}

extension CoreMLWriterError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension CoreMLWriterError: KindedError {
  /// What the chosen format cannot express, or options that do not fit the model.
  public var kind: ErrorKind { .badModel }
}
