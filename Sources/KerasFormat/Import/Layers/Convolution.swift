import ModelFormats
import ModelIR

extension KerasLayerRegistry {
  /// 2-D convolutions: plain, depthwise, separable and transposed.
  /// Weights stored in another order than `kernel`, `bias`.
  static let convolutionStoredWeights: [String: @Sendable (JSONValue) -> [String]] = [
    "SeparableConv1D": { _ in ["depthwise_kernel", "pointwise_kernel", "bias"] },
    "SeparableConv2D": { _ in ["depthwise_kernel", "pointwise_kernel", "bias"] },
  ]

  static let convolutionHandlers: [String: KerasLayerHandler] = [
    "Conv2D": { try $0.convertConv2D($1) },
    "Convolution2D": { try $0.convertConv2D($1) },
    "DepthwiseConv2D": { try $0.convertDepthwiseConv2D($1) },
    "SeparableConv2D": { try $0.convertSeparableConv2D($1) },
    "SeparableConvolution2D": { try $0.convertSeparableConv2D($1) },
    "Conv2DTranspose": { try $0.convertConv2DTranspose($1) },
    "Convolution2DTranspose": { try $0.convertConv2DTranspose($1) },
    "Deconvolution2D": { try $0.convertConv2DTranspose($1) },
  ]
}

extension KerasGraphImporter {
  mutating func convertConv2D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let input = try call.single()
    let channels = shape(input).last ?? 0
    let groups = try reader.int("groups", default: 1)
    let filters = try reader.int("filters")
    let size = try reader.pair("kernel_size")
    guard channels % groups == 0, filters % groups == 0 else {
      throw reader.invalid(
        "groups", reader.present("groups"),
        expected: "a divisor of both the \(channels) input channels and the \(filters) filters")
    }
    let kernel = try weight(["kernel"], [size[0], size[1], channels / groups, filters], call)
    let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters], call) : nil
    let conv = Convolution2D(
      kernel: kernel, bias: bias, strides: try reader.pair("strides", default: [1, 1]),
      dilations: try reader.pair("dilation_rate", default: [1, 1]), padding: try reader.padding(), groups: groups)
    let output = try add(.convolution2D(conv), [input], call)
    return try applyActivation(reader.activationName(), to: output, reader: reader)
  }

  mutating func convertDepthwiseConv2D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let input = try call.single()
    let channels = shape(input).last ?? 0
    let multiplier = try reader.int("depth_multiplier", default: 1)
    let size = try reader.pair("kernel_size")
    let depthwise = try weight(["depthwise_kernel", "kernel"], [size[0], size[1], channels, multiplier], call)
    let bias =
      reader.bool("use_bias", default: true)
      ? try weight(["bias"], [try checkedProduct([channels, multiplier], reader)], call) : nil
    let conv = Convolution2D(
      kernel: Self.groupedDepthwiseKernel(depthwise), bias: bias, strides: try reader.pair("strides", default: [1, 1]),
      dilations: try reader.pair("dilation_rate", default: [1, 1]), padding: try reader.padding(), groups: channels)
    let output = try add(.convolution2D(conv), [input], call)
    return try applyActivation(reader.activationName(), to: output, reader: reader)
  }

  mutating func convertSeparableConv2D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let input = try call.single()
    let channels = shape(input).last ?? 0
    let multiplier = try reader.int("depth_multiplier", default: 1)
    let filters = try reader.int("filters")
    let size = try reader.pair("kernel_size")
    let depthwise = try weight(["depthwise_kernel"], [size[0], size[1], channels, multiplier], call)
    let pointwise = try weight(
      ["pointwise_kernel"], [1, 1, try checkedProduct([channels, multiplier], reader), filters], call)
    let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters], call) : nil
    let depthwiseConv = Convolution2D(
      kernel: Self.groupedDepthwiseKernel(depthwise), bias: nil, strides: try reader.pair("strides", default: [1, 1]),
      dilations: try reader.pair("dilation_rate", default: [1, 1]), padding: try reader.padding(), groups: channels)
    let middle = try add(.convolution2D(depthwiseConv), [input], call, suffix: "_depthwise")
    let pointwiseConv = Convolution2D(
      kernel: pointwise, bias: bias, strides: [1, 1], dilations: [1, 1], padding: .valid, groups: 1)
    let output = try add(.convolution2D(pointwiseConv), [middle], call)
    return try applyActivation(reader.activationName(), to: output, reader: reader)
  }

  mutating func convertConv2DTranspose(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let input = try call.single()
    let s = shape(input)
    guard s.count == 3 else { throw reader.fail("expects an [H, W, C] input, got \(s)") }
    guard try reader.pair("dilation_rate", default: [1, 1]) == [1, 1] else {
      throw reader.fail("dilated Conv2DTranspose is not supported")
    }
    let filters = try reader.int("filters")
    let size = try reader.pair("kernel_size")
    let strides = try reader.pair("strides", default: [1, 1])
    let padding = try reader.padding()
    let outputPadding =
      reader.value("output_padding") == nil
      ? nil : try reader.pair("output_padding", range: 0...LayerConfigReader.maxConfigInteger)
    // Keras 1's Deconvolution2D (the one with `output_shape`) stored [kh, kw, in, out]; Keras 2 and 3 [kh, kw, out, in].
    let keras1 = reader.value("output_shape") != nil
    var kernel = try weight(
      ["kernel"], keras1 ? [size[0], size[1], s[2], filters] : [size[0], size[1], filters, s[2]], call)
    if keras1 { kernel = Self.swappingLastAxes(kernel) }
    let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters], call) : nil
    var outputSize = (0..<2).map {
      ConvolutionTranspose.outputLength(
        input: s[$0], kernel: size[$0], stride: strides[$0], padding: padding, outputPadding: outputPadding?[$0])
    }
    // Keras 1's Deconvolution2D names its output size: [batch, H, W, C].
    if let given = reader.value("output_shape") {
      // [batch, H, W, C], the batch size possibly null.
      guard let items = given.array, items.count == 4, let h = items[1].int, let w = items[2].int, h >= 1, w >= 1 else {
        throw reader.invalid("output_shape", given, expected: "[batch, H, W, C] with H and W of 1 or more")
      }
      outputSize = [h, w]
    }
    let conv = ConvolutionTranspose(
      kernel: kernel, bias: bias, strides: strides, padding: padding, outputSize: outputSize)
    return try applyActivation(
      reader.activationName(), to: try add(.convolutionTranspose(conv), [input], call), reader: reader)
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

}
