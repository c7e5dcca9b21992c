import Foundation

/// One deliberate error in a written Core ML file, of the kind a wrong converter could make.
///
/// A mutation is identified by all of its fields: `CoreMLMutator.apply` looks it up again among the
/// mutations of the file it is given, so it only applies to files it was listed for.
public struct CoreMLMutation: Sendable, Hashable, CustomStringConvertible {
  public enum Kind: String, Sendable, Hashable, CaseIterable {
    /// A square kernel's height and width axes swapped.
    case transposedKernel
    /// A kernel reversed spatially (rotated by 180°).
    case flippedKernel
    /// Two output channels' weights and biases swapped.
    case swappedOutputChannels
    /// Two input channels' weight slices swapped.
    case swappedInputChannels
    /// One bias element moved by a clearly visible amount.
    case changedBias
    /// A parameter of an activation (alpha, beta, slopes, thresholds, clip bounds) changed.
    case activationParameter
    /// Convolution or pooling padding (same / valid / explicit amounts), or a padding layer's amounts.
    case paddingMode
    /// Max and average pooling exchanged, or average pooling's padding exclusion toggled.
    case poolingMode
    /// A normalization epsilon made large.
    case epsilon
    /// An axis-like setting changed (concat, flatten, reshape, permute, softmax, reduce, split, slice, upsample).
    case axis
    /// Two recurrent gates' weights and biases swapped.
    case swappedGates
    /// The first two class labels swapped.
    case swappedLabels
    /// An image input's channel scale doubled.
    case doubledImageScale
    /// 0.25 added to every bias of an image input's scaler.
    case movedImageBias
    /// An image input's color space switched between RGB and BGR.
    case swappedColorOrder
  }

  public var kind: Kind
  /// The Core ML layer it changes; nil for model-level mutations (labels, image scaler, color space).
  public var layer: String?
  /// Which blob shows the change first: the layer's first output, or nil for model-level ones.
  public var blob: String?
  public var detail: String

  public init(kind: Kind, layer: String?, blob: String?, detail: String) {
    self.kind = kind
    self.layer = layer
    self.blob = blob
    self.detail = detail
  }

  public var description: String {
    if let layer { return "\(kind.rawValue) in '\(layer)': \(detail)" }
    return "\(kind.rawValue): \(detail)"
  }
}

/// Why a file cannot be mutated or measured.
public enum CoreMLMutationError: Error, Equatable, CustomStringConvertible {
  /// The bytes are not a Core ML `Model` protobuf.
  case malformed
  /// The file is not a neural network (classifier, regressor or plain).
  case notANeuralNetwork
  /// The mutation is not among those this file offers.
  case notApplicable(CoreMLMutation)
  /// The original model has layers our runtime cannot run (custom layers).
  case notRunnable([String])

  public var description: String {
    switch self {
    case .malformed: return "the bytes are not a Core ML model"
    case .notANeuralNetwork: return "the model is not a neural network"
    case .notApplicable(let mutation): return "the mutation \(mutation) does not apply to this file"
    case .notRunnable(let layers):
      return "the model has layers the runtime cannot run: \(layers.joined(separator: ", "))"
    }
  }
}

extension CoreMLMutationError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
