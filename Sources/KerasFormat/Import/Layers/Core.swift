import ModelIR

extension KerasLayerRegistry {
  /// Dense and BatchNormalization.
  static let coreHandlers: [String: KerasLayerHandler] = [
    "Dense": { try $0.convertDense($1) },
    "BatchNormalization": { try $0.convertBatchNormalization($1) },
  ]
}

extension KerasGraphImporter {
  mutating func convertDense(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    let units = try reader.int("units")
    let inputShape = shape(input)
    let kernel = try weight(["kernel"], [inputShape.last ?? 0, units], call)
    let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [units], call) : nil
    // Dense acts on the last axis; on an [H, W, C] image that is a 1x1 convolution, which Core ML has.
    let operation: Operation =
      inputShape.count == 3
      ? .convolution2D(
        Convolution2D(
          kernel: Constant(shape: [1, 1] + kernel.shape, values: kernel.values), bias: bias, strides: [1, 1],
          dilations: [1, 1],
          padding: .valid, groups: 1))
      : .dense(Dense(kernel: kernel, bias: bias))
    let output = try add(operation, [input], call)
    return try applyActivation(reader.activationName(), to: output, reader: reader)
  }

  mutating func convertBatchNormalization(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    let rank = shape(input).count
    let axes = try reader.axes("axis", default: [-1], rank: rank)
    guard axes.count == 1 else {
      throw reader.fail("normalizing axes \(axes) is not supported; only the channel (last) axis is")
    }
    let axis = axes[0]
    guard axis == -1 || axis == rank else {
      throw reader.fail("normalizing axis \(axis) is not supported; only the channel (last) axis is")
    }
    let channels = shape(input).last ?? 0
    let gamma =
      reader.bool("scale", default: true) ? try weight(["gamma"], [channels], call) : .filled(1, shape: [channels])
    let beta =
      reader.bool("center", default: true) ? try weight(["beta"], [channels], call) : .filled(0, shape: [channels])
    let norm = BatchNormalization(
      gamma: gamma, beta: beta, mean: try weight(["moving_mean"], [channels], call),
      variance: try weight(["moving_variance"], [channels], call),
      epsilon: try reader.float("epsilon", default: 1e-3, range: 0...1e10))
    return try add(.batchNormalization(norm), [input], call)
  }
}
