import ModelIR

extension KerasGraphImporter {
  /// Converts one call of a (non-model) layer and returns its output value.
  mutating func convert(_ layer: KerasLayerConfig, inputs: [ValueID], weightGroup: String) throws -> ValueID {
    let reader = LayerConfigReader(layer: layer, path: model.path)
    let className = layer.className
    builder.origin = LayerOrigin(name: layer.name, type: className)
    defer { builder.origin = nil }
    func single() throws -> ValueID { try reader.single(inputs) }
    func weight(_ kinds: [String], _ shape: [Int]?) throws -> Constant {
      try model.weights.weight(kinds, layer: layer.name, topLevel: weightGroup, expectedShape: shape)
    }
    func add(_ operation: Operation, _ nodeInputs: [ValueID], name: String? = nil) throws -> ValueID {
      try graphCall { try $0.add(operation, name: name ?? layer.name, inputs: nodeInputs) }
    }
    func shape(_ id: ValueID) -> [Int] { builder.type(of: id).shape }

    if KerasLayerCatalog.inferenceNoOps.contains(className) && customLayers.conversions[className] == nil {
      // No-ops still have their documented ranges: a dropout rate is a probability.
      if reader.present("rate") != nil { _ = try reader.float("rate", range: 0...1) }
      return try single()
    }
    if let conversion = customLayers.conversions[className] ?? (KerasLayerCatalog.supportedClassNames.contains(className) ? nil : customLayers.handles(className) ? KerasCustomLayers.defaultConversion : nil) {
      let context = KerasCustomLayerContext(
        className: className, name: layer.name, config: layer.config,
        weights: try model.weights.allWeights(layer: layer.name, topLevel: weightGroup), inputShapes: inputs.map(shape))
      return try add(.custom(try conversion(context)), inputs)
    }

    switch className {
    case "Conv2D", "Convolution2D":
      try reader.requireChannelsLast()
      let input = try single()
      let channels = shape(input).last ?? 0
      let groups = try reader.int("groups", default: 1)
      let filters = try reader.int("filters")
      let size = try reader.pair("kernel_size")
      guard channels % groups == 0, filters % groups == 0 else {
        throw reader.invalid("groups", reader.present("groups"), expected: "a divisor of both the \(channels) input channels and the \(filters) filters")
      }
      let kernel = try weight(["kernel"], [size[0], size[1], channels / groups, filters])
      let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters]) : nil
      let conv = Convolution2D(
        kernel: kernel, bias: bias, strides: try reader.pair("strides", default: [1, 1]),
        dilations: try reader.pair("dilation_rate", default: [1, 1]), padding: try reader.padding(), groups: groups)
      let output = try add(.convolution2D(conv), [input])
      return try applyActivation(reader.activationName(), to: output, reader: reader)

    case "DepthwiseConv2D":
      try reader.requireChannelsLast()
      let input = try single()
      let channels = shape(input).last ?? 0
      let multiplier = try reader.int("depth_multiplier", default: 1)
      let size = try reader.pair("kernel_size")
      let depthwise = try weight(["depthwise_kernel", "kernel"], [size[0], size[1], channels, multiplier])
      let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [try checkedProduct([channels, multiplier], reader)]) : nil
      let conv = Convolution2D(
        kernel: Self.groupedDepthwiseKernel(depthwise), bias: bias, strides: try reader.pair("strides", default: [1, 1]),
        dilations: try reader.pair("dilation_rate", default: [1, 1]), padding: try reader.padding(), groups: channels)
      let output = try add(.convolution2D(conv), [input])
      return try applyActivation(reader.activationName(), to: output, reader: reader)

    case "SeparableConv2D", "SeparableConvolution2D":
      try reader.requireChannelsLast()
      let input = try single()
      let channels = shape(input).last ?? 0
      let multiplier = try reader.int("depth_multiplier", default: 1)
      let filters = try reader.int("filters")
      let size = try reader.pair("kernel_size")
      let depthwise = try weight(["depthwise_kernel"], [size[0], size[1], channels, multiplier])
      let pointwise = try weight(["pointwise_kernel"], [1, 1, try checkedProduct([channels, multiplier], reader), filters])
      let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters]) : nil
      let depthwiseConv = Convolution2D(
        kernel: Self.groupedDepthwiseKernel(depthwise), bias: nil, strides: try reader.pair("strides", default: [1, 1]),
        dilations: try reader.pair("dilation_rate", default: [1, 1]), padding: try reader.padding(), groups: channels)
      let middle = try add(.convolution2D(depthwiseConv), [input], name: layer.name + "_depthwise")
      let pointwiseConv = Convolution2D(kernel: pointwise, bias: bias, strides: [1, 1], dilations: [1, 1], padding: .valid, groups: 1)
      let output = try add(.convolution2D(pointwiseConv), [middle])
      return try applyActivation(reader.activationName(), to: output, reader: reader)

    case "Conv2DTranspose", "Convolution2DTranspose", "Deconvolution2D":
      try reader.requireChannelsLast()
      let input = try single()
      let s = shape(input)
      guard s.count == 3 else { throw reader.fail("expects an [H, W, C] input, got \(s)") }
      guard try reader.pair("dilation_rate", default: [1, 1]) == [1, 1] else { throw reader.fail("dilated Conv2DTranspose is not supported") }
      let filters = try reader.int("filters"), size = try reader.pair("kernel_size"), strides = try reader.pair("strides", default: [1, 1])
      let padding = try reader.padding()
      let outputPadding = reader.value("output_padding") == nil ? nil : try reader.pair("output_padding", range: 0...LayerConfigReader.maxConfigInteger)
      // Keras 1's Deconvolution2D (the one with `output_shape`) stored [kh, kw, in, out]; Keras 2 and 3 [kh, kw, out, in].
      let keras1 = reader.value("output_shape") != nil
      var kernel = try weight(["kernel"], keras1 ? [size[0], size[1], s[2], filters] : [size[0], size[1], filters, s[2]])
      if keras1 { kernel = Self.swappingLastAxes(kernel) }
      let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters]) : nil
      var outputSize = (0..<2).map {
        ConvolutionTranspose.outputLength(input: s[$0], kernel: size[$0], stride: strides[$0], padding: padding, outputPadding: outputPadding?[$0])
      }
      // Keras 1's Deconvolution2D names its output size: [batch, H, W, C].
      if let given = reader.value("output_shape") {
        // [batch, H, W, C], the batch size possibly null.
        guard let items = given.array, items.count == 4, let h = items[1].int, let w = items[2].int, h >= 1, w >= 1 else {
          throw reader.invalid("output_shape", given, expected: "[batch, H, W, C] with H and W of 1 or more")
        }
        outputSize = [h, w]
      }
      let conv = ConvolutionTranspose(kernel: kernel, bias: bias, strides: strides, padding: padding, outputSize: outputSize)
      return try applyActivation(reader.activationName(), to: try add(.convolutionTranspose(conv), [input]), reader: reader)

    case "Dense":
      let input = try single()
      let units = try reader.int("units")
      let inputShape = shape(input)
      let kernel = try weight(["kernel"], [inputShape.last ?? 0, units])
      let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [units]) : nil
      // Dense acts on the last axis; on an [H, W, C] image that is a 1x1 convolution, which Core ML has.
      let operation: Operation =
        inputShape.count == 3
        ? .convolution2D(Convolution2D(
          kernel: Constant(shape: [1, 1] + kernel.shape, values: kernel.values), bias: bias, strides: [1, 1], dilations: [1, 1],
          padding: .valid, groups: 1))
        : .dense(Dense(kernel: kernel, bias: bias))
      let output = try add(operation, [input])
      return try applyActivation(reader.activationName(), to: output, reader: reader)

    case "BatchNormalization":
      let input = try single()
      let rank = shape(input).count
      let axes = try reader.axes("axis", default: [-1], rank: rank)
      guard axes.count == 1 else { throw reader.fail("normalizing axes \(axes) is not supported; only the channel (last) axis is") }
      let axis = axes[0]
      guard axis == -1 || axis == rank else { throw reader.fail("normalizing axis \(axis) is not supported; only the channel (last) axis is") }
      let channels = shape(input).last ?? 0
      let gamma = reader.bool("scale", default: true) ? try weight(["gamma"], [channels]) : .filled(1, shape: [channels])
      let beta = reader.bool("center", default: true) ? try weight(["beta"], [channels]) : .filled(0, shape: [channels])
      let norm = BatchNormalization(
        gamma: gamma, beta: beta, mean: try weight(["moving_mean"], [channels]),
        variance: try weight(["moving_variance"], [channels]), epsilon: try reader.float("epsilon", default: 1e-3, range: 0...1e10))
      return try add(.batchNormalization(norm), [input])

    case "Activation":
      return try applyActivation(reader.activationName(), to: try single(), reader: reader, standalone: true)

    case "ReLU":
      // Keras refuses negative values for all three.
      let maxValue = try reader.optionalFloat("max_value", range: 0...Double(Float.greatestFiniteMagnitude))
      let slope = try reader.float("negative_slope", default: 0, range: 0...Double(Float.greatestFiniteMagnitude))
      let threshold = try reader.float("threshold", default: 0, range: 0...Double(Float.greatestFiniteMagnitude))
      let activation: Activation =
        maxValue == nil && slope == 0 && threshold == 0 ? .relu
        : .clippedReLU(maxValue: maxValue, negativeSlope: slope, threshold: threshold)
      return try add(.activation(activation), [try single()])

    case "LeakyReLU":
      let alpha = try reader.optionalFloat("negative_slope") ?? reader.float("alpha", default: 0.3)
      return try add(.activation(.leakyReLU(alpha: alpha)), [try single()])

    case "PReLU":
      let input = try single()
      let alpha = try weight(["alpha"], nil)
      let channels = shape(input).last ?? 0
      guard try alpha.count == channels || alpha.count == checkedProduct(shape(input), reader) else {
        throw KerasReaderError.weightShapeMismatch(path: model.path, layer: layer.name, weight: "alpha", expected: shape(input), actual: alpha.shape)
      }
      let values = alpha.count == channels ? Constant(shape: [channels], values: alpha.values) : Constant(shape: shape(input), values: alpha.values)
      return try add(.activation(.parametricReLU(alpha: values)), [input])

    case "ELU":
      return try add(.activation(.elu(alpha: try reader.float("alpha", default: 1))), [try single()])

    case "ThresholdedReLU":
      return try add(.activation(.thresholdedReLU(theta: try reader.float("theta", default: 1, range: 0...Double(Float.greatestFiniteMagnitude)))), [try single()])

    case "Softmax":
      let input = try single()
      let axes = try reader.axes("axis", default: [-1], rank: shape(input).count)
      guard axes.count == 1 else { throw reader.fail("softmax over axes \(axes) is not supported; only one axis") }
      return try add(.softmax(axis: try normalizedAxis(axes[0], rank: shape(input).count, reader)), [input])

    case "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D":
      try reader.requireChannelsLast()
      let pool = try reader.pair("pool_size", default: [2, 2])
      let pooling = Pooling2D(
        kind: className.hasPrefix("Max") ? .max : .average, pool: pool,
        strides: try reader.pair("strides", default: pool), padding: try reader.padding())
      return try add(.pooling2D(pooling), [try single()])

    case "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPooling2D", "GlobalMaxPool2D":
      try reader.requireChannelsLast()
      let kind: PoolingKind = className.hasPrefix("GlobalMax") ? .max : .average
      return try add(.globalPooling2D(kind: kind, keepDims: reader.bool("keepdims", default: false)), [try single()])

    case "Flatten":
      let input = try single()
      return shape(input).count == 1 ? input : try add(.flatten, [input])

    case "Reshape":
      let input = try single()
      var target = try reader.ints("target_shape", range: -1...LayerConfigReader.maxConfigInteger)
      guard !target.contains(0), target.filter({ $0 == -1 }).count <= 1 else {
        throw reader.invalid("target_shape", reader.present("target_shape"), expected: "sizes of 1 or more, at most one of them -1")
      }
      if let unknown = target.firstIndex(of: -1) {
        // Keras fills the -1 so the element count stays; it must divide exactly.
        let total = try checkedProduct(shape(input), reader)
        guard let known = GraphLimits.elementCount(target.filter { $0 != -1 }), known >= 1, total % known == 0 else {
          throw reader.invalid("target_shape", reader.present("target_shape"), expected: "a shape with as many elements as the input \(shape(input))")
        }
        target[unknown] = total / known
      }
      return try add(.reshape(targetShape: target), [input])

    case "Permute":
      let input = try single()
      let rank = shape(input).count
      let dims = try reader.ints("dims", range: 1...max(rank, 1))
      guard dims.sorted() == Array(1...max(rank, 1)) else {
        throw reader.invalid("dims", reader.present("dims"), expected: "a permutation of 1...\(rank)")
      }
      return try add(.permute(order: dims.map { $0 - 1 }), [input])

    case "ZeroPadding2D":
      try reader.requireChannelsLast()
      return try add(.zeroPadding2D(reader.box("padding")), [try single()])

    case "Cropping2D":
      try reader.requireChannelsLast()
      return try add(.cropping2D(reader.box("cropping")), [try single()])

    case "UpSampling2D":
      try reader.requireChannelsLast()
      let size = try reader.pair("size", default: [2, 2])
      let interpolation = try reader.string("interpolation", default: "nearest")
      guard interpolation == "nearest" || interpolation == "bilinear" else {
        throw reader.fail("interpolation '\(interpolation)' is not supported (nearest or bilinear)")
      }
      return try add(.upsampling2D(height: size[0], width: size[1], bilinear: interpolation == "bilinear"), [try single()])

    case "Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum":
      let kinds: [String: ElementwiseKind] = [
        "Add": .add, "Subtract": .subtract, "Multiply": .multiply, "Average": .average, "Maximum": .maximum, "Minimum": .minimum,
      ]
      return try add(.elementwise(kinds[className]!), inputs)

    case "Concatenate":
      let rank = inputs.first.map { shape($0).count } ?? 0
      let axes = try reader.axes("axis", default: [-1], rank: rank)
      guard axes.count == 1 else { throw reader.invalid("axis", reader.present("axis"), expected: "one axis") }
      return try add(.concatenate(axis: try normalizedAxis(axes[0], rank: rank, reader)), inputs)

    default:
      if let output = try convertSequenceLayer(layer, inputs: inputs, weightGroup: weightGroup) { return output }
      throw KerasReaderError.unsupportedLayers(path: model.path, layers: [.init(name: layer.name, className: className)])
    }
  }

  /// The element count of a shape built from config values, refused beyond `GraphLimits.maxElementCount`.
  func checkedProduct(_ shape: [Int], _ reader: LayerConfigReader) throws -> Int {
    guard let count = GraphLimits.elementCount(shape) else {
      throw reader.fail("a tensor of shape \(shape) is beyond the limit of \(GraphLimits.maxElementCount) elements")
    }
    return count
  }

  /// Maps a Keras axis (counting the batch dimension, or negative) to an IR axis.
  private func normalizedAxis(_ axis: Int, rank: Int, _ reader: LayerConfigReader) throws -> Int {
    let normalized = axis < 0 ? rank + axis : axis - 1
    guard normalized >= 0, normalized < rank else { throw reader.fail("axis \(axis) does not fit a rank-\(rank + 1) tensor") }
    return normalized
  }

  /// A `[a, b, c, d]` constant as `[a, b, d, c]`.
  static func swappingLastAxes(_ constant: Constant) -> Constant {
    let s = constant.shape
    let (c, d) = (s[2], s[3])
    var values = [Float](repeating: 0, count: constant.count)
    for outer in 0..<s[0] * s[1] {
      for i in 0..<c { for j in 0..<d { values[(outer * d + j) * c + i] = constant.values[(outer * c + i) * d + j] } }
    }
    return Constant(shape: [s[0], s[1], d, c], values: values)
  }

  /// A depthwise kernel `[kh, kw, C, m]` as a grouped kernel `[kh, kw, 1, C*m]`; the row-major data is unchanged.
  static func groupedDepthwiseKernel(_ kernel: Constant) -> Constant {
    let s = kernel.shape
    return Constant(shape: [s[0], s[1], 1, s[2] * s[3]], values: kernel.values)
  }

  /// Adds the node for a named Keras activation after `input`; `linear` adds nothing unless standalone.
  mutating func applyActivation(_ name: String, to input: ValueID, reader: LayerConfigReader, standalone: Bool = false) throws -> ValueID {
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
    case "hard_sigmoid": return model.isKeras3 ? .hardSigmoid(slope: 1.0 / 6, offset: 0.5) : .hardSigmoid(slope: 0.2, offset: 0.5)
    case "swish", "silu": return .swish
    // The serialized name carries no `approximate` flag: both Keras 2 and 3 default to the exact (erf) form.
    case "gelu": return .gelu(approximate: false)
    case "exponential": return .exponential
    default: return nil
    }
  }
}
