/// The image color layouts Core ML's classic image inputs take.
public enum ImageColorSpace: String, Sendable, Equatable {
  case grayscale = "GRAYSCALE"
  case rgb = "RGB"
  case bgr = "BGR"

  /// The channels the network receives: 1 for grayscale, else 3.
  public var channels: Int { self == .grayscale ? 1 : 3 }
}

/// How one input becomes a Core ML image: `y = scale * pixel + bias[channel]`, then times
/// `channelScales[channel]` when given (PyTorch's `(pixel / 255 - mean) / std` with a different std per
/// channel, which Core ML's one-number scale cannot hold: the converter computes it in the graph).
public struct ImagePreprocessing: Sendable, Equatable {
  public var scale: Float
  public var redBias: Float
  public var greenBias: Float
  public var blueBias: Float
  public var grayBias: Float
  /// Whether the model expects BGR channel order (a 3-channel input only).
  public var isBGR: Bool
  /// Per-channel factors applied after the bias, in the network's channel order; nil for none.
  public var channelScales: [Float]?
  /// The channels a per-channel normalization (`init(mean:std:)`) was given for (1 or 3), so that one
  /// meant for gray is not applied to a color input as nothing; nil for scale and biases.
  public var normalizationChannels: Int?

  public init(
    scale: Float = 1, redBias: Float = 0, greenBias: Float = 0, blueBias: Float = 0, grayBias: Float = 0,
    isBGR: Bool = false
  ) {
    self.scale = scale
    self.redBias = redBias
    self.greenBias = greenBias
    self.blueBias = blueBias
    self.grayBias = grayBias
    self.isBGR = isBGR
  }

  /// The preprocessing of an image in `colorSpace` whose biases are given in the network's channel order
  /// (gray; B, G, R for BGR; else R, G, B), as a reader finds it in a model.
  public init(colorSpace: ImageColorSpace, scale: Float, networkBiases biases: [Float]) {
    precondition(
      biases.count == colorSpace.channels,
      "\(colorSpace.rawValue) takes \(colorSpace.channels) biases, not \(biases.count)")
    self.init(scale: scale, isBGR: colorSpace == .bgr)
    switch colorSpace {
    case .grayscale: grayBias = biases[0]
    case .bgr: (blueBias, greenBias, redBias) = (biases[0], biases[1], biases[2])
    case .rgb: (redBias, greenBias, blueBias) = (biases[0], biases[1], biases[2])
    }
  }

  /// The channel order the network receives for an input of `channels` channels.
  public func colorSpace(channels: Int) -> ImageColorSpace {
    channels == 1 ? .grayscale : isBGR ? .bgr : .rgb
  }

  /// The biases in the network's channel order: gray for one channel, B, G, R for BGR, else R, G, B.
  public func networkBiases(channels: Int) -> [Float] {
    channels == 1 ? [grayBias] : isBGR ? [blueBias, greenBias, redBias] : [redBias, greenBias, blueBias]
  }

  /// PyTorch's normalization `(pixel / 255 - mean) / std`, `mean` and `std` in R, G, B order (one value
  /// for grayscale): Core ML's scaler alone when every std is the same, else the scaler's
  /// `pixel / 255 - mean` and per-channel factors `1 / std`.
  public init(mean: [Float], std: [Float], isBGR: Bool = false) {
    precondition(mean.count == std.count && (mean.count == 1 || mean.count == 3), "one or three means and stds")
    let gray = mean.count == 1
    defer { normalizationChannels = mean.count }
    func biases(_ values: [Float]) -> (Float, Float, Float, Float) {
      gray ? (0, 0, 0, values[0]) : (values[0], values[1], values[2], 0)
    }
    if Set(std).count == 1 {
      let (r, g, b, y) = biases(zip(mean, std).map { -$0 / $1 })
      self.init(scale: 1 / (255 * std[0]), redBias: r, greenBias: g, blueBias: b, grayBias: y, isBGR: isBGR)
    } else {
      let (r, g, b, y) = biases(mean.map { -$0 })
      self.init(scale: 1 / 255, redBias: r, greenBias: g, blueBias: b, grayBias: y, isBGR: isBGR)
      let factors = std.map { 1 / $0 }
      channelScales = gray ? factors : isBGR ? factors.reversed() : factors
    }
  }

  /// `scale * pixel + bias`, times the channel scales, for pixels of `channels` channels in the
  /// network's order (channels last).
  public func apply(_ pixels: [Float], channels: Int) -> [Float] {
    let biases = networkBiases(channels: channels)
    let factors = channelScales ?? [Float](repeating: 1, count: channels)
    return pixels.enumerated().map { (scale * $1 + biases[$0 % channels]) * factors[$0 % channels] }
  }

  /// The part Core ML's image scaler holds (no channel scales).
  public var scaler: ImagePreprocessing {
    var copy = self
    copy.channelScales = nil
    return copy
  }
}

/// Class labels of a classifier: all strings, or all integers.
public enum ClassLabels: Sendable, Equatable {
  case strings([String])
  case integers([Int64])

  public var count: Int {
    switch self {
    case .strings(let labels): return labels.count
    case .integers(let labels): return labels.count
    }
  }

  /// The labels as text, for summaries.
  public var descriptions: [String] {
    switch self {
    case .strings(let labels): return labels
    case .integers(let labels): return labels.map(String.init)
    }
  }
}

/// How a model becomes a `NeuralNetworkClassifier`.
public struct ClassifierSettings: Sendable, Equatable {
  public var labels: ClassLabels
  /// The name of the extra output holding the top label.
  public var predictedFeatureName: String
  /// The graph output holding the probabilities; nil means the first output.
  public var probabilitiesOutput: String?
  /// Where the predicted label stands among the model's outputs (a source's own order, such as
  /// coremltools' label first); nil: after the others.
  public var labelPosition: Int?

  /// The description's outputs with the label feature placed at `labelPosition`.
  package func placingLabel<T>(_ label: T, in outputs: [T]) -> [T] {
    var result = outputs
    result.insert(label, at: min(max(labelPosition ?? outputs.count, 0), outputs.count))
    return result
  }

  public init(labels: ClassLabels, predictedFeatureName: String = "classLabel", probabilitiesOutput: String? = nil) {
    self.labels = labels
    self.predictedFeatureName = predictedFeatureName
    self.probabilitiesOutput = probabilitiesOutput
  }
}

/// How weights are stored; for an ML Program also the precision it computes in (coremltools'
/// `compute_precision`): float16 programs cast their inputs to float16 and their outputs back.
public enum WeightPrecision: String, Sendable, Equatable {
  case float32
  case float16
}

/// Descriptive fields stored in the model's metadata.
public struct ModelMetadata: Sendable, Equatable {
  public var shortDescription: String?
  public var author: String?
  public var license: String?
  public var version: String?
  /// Extra key/value pairs (`userDefined`), such as the converter and source versions.
  public var userDefined: [String: String]

  public init(
    shortDescription: String? = nil, author: String? = nil, license: String? = nil, version: String? = nil,
    userDefined: [String: String] = [:]
  ) {
    self.shortDescription = shortDescription
    self.author = author
    self.license = license
    self.version = version
    self.userDefined = userDefined
  }
}
