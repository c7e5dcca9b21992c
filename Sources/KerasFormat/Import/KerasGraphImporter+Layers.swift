import ModelIR

extension KerasGraphImporter {
  /// Converts one call of a (non-model) layer with its registered handler (or a custom conversion) and
  /// returns its output value.
  mutating func convert(_ layer: KerasLayerConfig, inputs: [ValueID], weightGroup: String) throws -> ValueID {
    let reader = LayerConfigReader(layer: layer, path: model.path)
    let className = layer.className
    builder.origin = LayerOrigin(name: layer.name, type: className)
    defer { builder.origin = nil }
    let call = KerasLayerCall(layer: layer, inputs: inputs, weightGroup: weightGroup, reader: reader)

    if let conversion = customLayers.conversions[className]
      ?? (KerasLayerCatalog.supportedClassNames.contains(className)
        ? nil : customLayers.handles(className) ? KerasCustomLayers.defaultConversion : nil)
    {
      let context = KerasCustomLayerContext(
        className: className, name: layer.name, config: layer.config,
        weights: try model.weights.allWeights(layer: layer.name, topLevel: weightGroup),
        inputShapes: inputs.map { shape($0) })
      return try add(.custom(try conversion(context)), inputs, call)
    }
    guard let handler = KerasLayerRegistry.handlers[className] else {
      throw KerasReaderError.unsupportedLayers(
        path: model.path, layers: [.init(name: layer.name, className: className)])
    }
    return try handler(&self, call)
  }

  /// The element count of a shape built from config values, refused beyond `GraphLimits.maxElementCount`.
  func checkedProduct(_ shape: [Int], _ reader: LayerConfigReader) throws -> Int {
    guard let count = GraphLimits.elementCount(shape) else {
      throw reader.fail("a tensor of shape \(shape) is beyond the limit of \(GraphLimits.maxElementCount) elements")
    }
    return count
  }

  /// Maps a Keras axis (counting the batch dimension, or negative) to an IR axis.
  func normalizedAxis(_ axis: Int, rank: Int, _ reader: LayerConfigReader) throws -> Int {
    let normalized = axis < 0 ? rank + axis : axis - 1
    guard normalized >= 0, normalized < rank else {
      throw reader.fail("axis \(axis) does not fit a rank-\(rank + 1) tensor")
    }
    return normalized
  }

  /// Adds the node for a named Keras activation after `input`; `linear` adds nothing unless standalone.
  mutating func applyActivation(_ name: String, to input: ValueID, reader: LayerConfigReader, standalone: Bool = false)
    throws -> ValueID
  {
    let nodeName = standalone ? reader.layer.name : reader.layer.name + "__activation__"
    let operation: Operation
    switch name {
    case "linear":
      if !standalone { return input }
      operation = .activation(.identity)
    case "softmax":
      operation = .softmax(axis: builder.type(of: input).shape.count - 1)
    default:
      guard let activation = activation(named: name) else { throw reader.fail("activation '\(name)' is not supported") }
      operation = .activation(activation)
    }
    return try graphCall { try $0.add(operation, name: nodeName, inputs: [input]) }
  }

  /// The IR activation for a Keras activation function name, reading version-dependent constants.
  func activation(named name: String) -> Activation? {
    switch name {
    case "relu": return .relu
    case "relu6": return .clippedReLU(maxValue: 6, negativeSlope: 0, threshold: 0)
    case "sigmoid": return .sigmoid
    case "tanh": return .tanh
    case "elu": return .elu(alpha: 1)
    case "selu": return .selu
    case "softplus": return .softplus
    case "softsign": return .softsign
    // Keras 2 uses 0.2x + 0.5; Keras 3 uses relu6(x + 3) / 6.
    case "hard_sigmoid":
      return model.isKeras3 ? .hardSigmoid(slope: 1.0 / 6, offset: 0.5) : .hardSigmoid(slope: 0.2, offset: 0.5)
    case "swish", "silu": return .swish
    // Keras 3 only: x * relu6(x + 3) / 6, serialized under either name.
    case "hard_silu", "hard_swish": return .hardSwish
    // The serialized name carries no `approximate` flag: both Keras 2 and 3 default to the exact (erf) form.
    case "gelu": return .gelu(approximate: false)
    case "exponential": return .exponential
    default: return nil
    }
  }
}
