import Foundation
import ModelFormats

/// Why a conversion was refused before or after the readers and writers ran.
public enum ConversionError: Error, Equatable, CustomStringConvertible {
  /// More or fewer names than the model has inputs or outputs.
  case nameCountMismatch(kind: String, given: Int, expected: Int)
  /// A labels file could not be read.
  case labelsFileUnreadable(path: String)
  /// An option that only means something for another source format (`option` in the library's terms).
  case notApplicable(path: String, option: String, format: String)
  /// A labels path names a FIFO, device, socket or folder: reading it could block forever.
  case labelsFileNotRegular(path: String, kind: String)
  /// A labels file or list has no labels, or mixes forms.
  case invalidLabels(String)
  /// An image input's preprocessing does not fit the input (per-channel factors for another channel count).
  case invalidImagePreprocessing(input: String, detail: String)
  /// A weight holds a value Core ML cannot compute with (NaN, infinity, beyond float32, a negative variance);
  /// `ConversionOptions.allowNonFinite` lets it through.
  case invalidWeightValue(layer: String, weight: String, detail: String)
  /// The source's own image preprocessing cannot be computed (a scale or bias that is not finite, or that
  /// takes pixels 0-255 beyond float32).
  case invalidSourcePreprocessing(path: String, input: String, detail: String)
  /// A shape was given for an input the model does not have (by its source or its new name).
  case unknownInput(name: String, known: [String])
  /// An output asked to be an image is not one of the model's outputs, or not an `[H, W, 1]` / `[H, W, 3]` tensor.
  case invalidImageOutput(output: String, detail: String)
  /// Weight compression the writers cannot make (a bit width, fraction or size out of range).
  case invalidCompression(String)
  /// A detector was asked of a network that is not one the decoding reads, or with settings out of range.
  case invalidDetector(String)
  /// Flexible input shapes Core ML cannot load or this conversion cannot make (the rule named).
  case invalidInputShape(input: String, detail: String)

  public var description: String {
    switch self {
    case .nameCountMismatch(let kind, let given, let expected):
      return
        "\(given) \(kind) name\(given == 1 ? "" : "s") given, but the model has \(expected) \(kind)\(expected == 1 ? "" : "s")"
    case .labelsFileUnreadable(let path): return "\(path): cannot read the labels file"
    case .notApplicable(let path, let option, let format): return "\(path): \(option) does not apply to \(format)"
    case .labelsFileNotRegular(let path, let kind):
      return
        "\(path) is \(kind), not a regular file; labels are read only from regular files (a pipe or device could block forever)"
    case .invalidLabels(let detail): return detail
    case .invalidCompression(let detail): return "weight compression: \(detail)"
    case .invalidDetector(let detail): return "detector: \(detail)"
    case .invalidInputShape(let input, let detail): return "input '\(input)' shapes: \(detail)"
    case .invalidImageOutput(let output, let detail): return "image output '\(output)': \(detail)"
    case .invalidImagePreprocessing(let input, let detail): return "image input '\(input)': \(detail)"
    case .invalidSourcePreprocessing(let path, let input, let detail):
      return "\(path): image input '\(input)': \(detail)"
    case .unknownInput(let name, let known):
      return
        "a shape is given for input '\(name)', but the model's inputs are \(known.map { "'\($0)'" }.joined(separator: ", "))"
    case .invalidWeightValue(let layer, let weight, let detail):
      return
        "layer '\(layer)' weight '\(weight)': \(detail); Core ML cannot compute with it (it converts only when non-finite weights are allowed)"
    }
  }
}

extension ConversionError: KindedError {
  /// Options that do not fit the model are usage errors; unreadable labels a missing input; the rest
  /// is about the model.
  public var kind: ErrorKind {
    switch self {
    case .nameCountMismatch, .notApplicable, .invalidImagePreprocessing, .unknownInput, .invalidCompression,
      .invalidImageOutput, .invalidDetector, .invalidInputShape:
      return .usage
    case .labelsFileUnreadable, .labelsFileNotRegular: return .missingInput
    case .invalidLabels, .invalidWeightValue, .invalidSourcePreprocessing: return .badModel
    }
  }
}

extension ConversionError: RemediableError {
  public var remedy: ErrorRemedy? {
    if case .invalidWeightValue = self { return .allowNonFinite }
    return nil
  }
}

extension ConversionError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
