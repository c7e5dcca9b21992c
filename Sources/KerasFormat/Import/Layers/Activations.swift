import ModelFormats
import ModelIR

extension KerasLayerRegistry {
  /// Activation layers (`Activation` by function name; the named activation classes).
  static let activationStoredWeights: [String: @Sendable (JSONValue) -> [String]] = ["PReLU": { _ in ["alpha"] }]

  static let activationHandlers: [String: KerasLayerHandler] = [
    "Activation": { try $0.convertActivation($1) },
    "ReLU": { try $0.convertReLU($1) },
    "LeakyReLU": { try $0.convertLeakyReLU($1) },
    "PReLU": { try $0.convertPReLU($1) },
    "ELU": { try $0.convertELU($1) },
    "ThresholdedReLU": { try $0.convertThresholdedReLU($1) },
    "Softmax": { try $0.convertSoftmax($1) },
  ]
}

extension KerasGraphImporter {
  mutating func convertActivation(_ call: KerasLayerCall) throws -> ValueID {
    try applyActivation(call.reader.activationName(), to: try call.single(), reader: call.reader, standalone: true)
  }

  mutating func convertReLU(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    // Keras refuses negative values for all three.
    let maxValue = try reader.optionalFloat("max_value", range: 0...Double(Float.greatestFiniteMagnitude))
    let slope = try reader.float("negative_slope", default: 0, range: 0...Double(Float.greatestFiniteMagnitude))
    let threshold = try reader.float("threshold", default: 0, range: 0...Double(Float.greatestFiniteMagnitude))
    let activation: Activation =
      maxValue == nil && slope == 0 && threshold == 0
      ? .relu
      : .clippedReLU(maxValue: maxValue, negativeSlope: slope, threshold: threshold)
    return try add(.activation(activation), [try call.single()], call)
  }

  mutating func convertLeakyReLU(_ call: KerasLayerCall) throws -> ValueID {
    let alpha = try call.reader.optionalFloat("negative_slope") ?? call.reader.float("alpha", default: 0.3)
    return try add(.activation(.leakyReLU(alpha: alpha)), [try call.single()], call)
  }

  mutating func convertPReLU(_ call: KerasLayerCall) throws -> ValueID {
    let input = try call.single()
    let alpha = try weight(["alpha"], nil, call)
    let channels = shape(input).last ?? 0
    guard try alpha.count == channels || alpha.count == checkedProduct(shape(input), call.reader) else {
      throw KerasReaderError.weightShapeMismatch(
        path: model.path, layer: call.layer.name, weight: "alpha", expected: shape(input), actual: alpha.shape)
    }
    let values =
      alpha.count == channels
      ? Constant(shape: [channels], values: alpha.values) : Constant(shape: shape(input), values: alpha.values)
    return try add(.activation(.parametricReLU(alpha: values)), [input], call)
  }

  mutating func convertELU(_ call: KerasLayerCall) throws -> ValueID {
    try add(.activation(.elu(alpha: try call.reader.float("alpha", default: 1))), [try call.single()], call)
  }

  mutating func convertThresholdedReLU(_ call: KerasLayerCall) throws -> ValueID {
    try add(
      .activation(
        .thresholdedReLU(
          theta: try call.reader.float("theta", default: 1, range: 0...Double(Float.greatestFiniteMagnitude)))),
      [try call.single()], call)
  }

  mutating func convertSoftmax(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    let axes = try reader.axes("axis", default: [-1], rank: shape(input).count)
    guard axes.count == 1 else { throw reader.fail("softmax over axes \(axes) is not supported; only one axis") }
    return try add(.softmax(axis: try normalizedAxis(axes[0], rank: shape(input).count, reader)), [input], call)
  }
}
