import ModelIR

extension KerasLayerRegistry {
  /// 1-D layers on a `[T, C]` sequence, run as their 2-D counterparts on its `[1, T, C]` row view, and
  /// RepeatVector, which makes a sequence from a vector.
  static let sequence1DHandlers: [String: KerasLayerHandler] = [
    "Conv1D": { try $0.convertConv1D($1) },
    "Convolution1D": { try $0.convertConv1D($1) },
    "MaxPooling1D": { try $0.convertPooling1D($1) },
    "MaxPool1D": { try $0.convertPooling1D($1) },
    "AveragePooling1D": { try $0.convertPooling1D($1) },
    "AvgPool1D": { try $0.convertPooling1D($1) },
    "GlobalAveragePooling1D": { try $0.convertGlobalPooling1D($1) },
    "GlobalAvgPool1D": { try $0.convertGlobalPooling1D($1) },
    "GlobalMaxPooling1D": { try $0.convertGlobalPooling1D($1) },
    "GlobalMaxPool1D": { try $0.convertGlobalPooling1D($1) },
    "ZeroPadding1D": { try $0.convertPaddingOrCropping1D($1, padding: true) },
    "Cropping1D": { try $0.convertPaddingOrCropping1D($1, padding: false) },
    "UpSampling1D": { try $0.convertUpSampling1D($1) },
    "RepeatVector": { try $0.convertRepeatVector($1) },
  ]
}

extension KerasGraphImporter {
  /// The steps and channels of a `[T, C]` sequence input.
  private func sequence(_ input: ValueID, _ reader: LayerConfigReader) throws -> (steps: Int, channels: Int) {
    let s = shape(input)
    guard s.count == 2 else { throw reader.fail("expects a [steps, channels] sequence, got \(s)") }
    return (s[0], s[1])
  }

  /// Runs a 2-D operation on the `[1, T, C]` view of a sequence and returns the `[T', C']` result.
  private mutating func asRow(_ input: ValueID, _ operation: Operation, _ call: KerasLayerCall) throws -> ValueID {
    let (steps, channels) = try sequence(input, call.reader)
    let row = try add(.reshape(targetShape: [1, steps, channels]), [input], call, suffix: "__row")
    let result = try add(operation, [row], call)
    let s = shape(result)
    return s.count == 3 ? try add(.reshape(targetShape: [s[1], s[2]]), [result], call, suffix: "__sequence") : result
  }

  mutating func convertConv1D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    /// A 1-D size given as an integer or a one-element list.
    func length(_ key: String, default fallback: Int? = nil) throws -> Int { try reader.int(key, default: fallback) }
    try reader.requireChannelsLast()
    let input = try call.single()
    let (_, channels) = try sequence(input, reader)
    let filters = try reader.int("filters")
    let size = try length("kernel_size")
    let dilation = try length("dilation_rate", default: 1)
    let stride = try length("strides", default: 1)
    guard try reader.int("groups", default: 1) == 1 else { throw reader.fail("grouped Conv1D is not supported") }
    let kernel = try weight(["kernel"], [size, channels, filters], call)
    let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters], call) : nil
    let paddingName = try reader.string("padding", default: "valid").lowercased()
    var source = input
    if paddingName == "causal" {
      // Causal: pad the start with (size - 1) * dilation steps, then a valid convolution.
      let (span, overflow) = (size - 1).multipliedReportingOverflow(by: dilation)
      guard !overflow, span <= LayerConfigReader.maxConfigInteger else {
        throw reader.invalid(
          "dilation_rate", reader.present("dilation_rate"),
          expected: "a dilation whose causal padding fits \(LayerConfigReader.maxConfigInteger)")
      }
      source = try asRow(input, .zeroPadding2D(Box2D(top: 0, bottom: 0, left: span, right: 0)), call)
    } else if Padding(rawValue: paddingName) == nil {
      throw reader.fail("padding '\(paddingName)' is not supported (same, valid or causal)")
    }
    let conv = Convolution2D(
      kernel: Constant(shape: [1, size, channels, filters], values: kernel.values), bias: bias, strides: [1, stride],
      dilations: [1, dilation], padding: paddingName == "same" ? .same : .valid, groups: 1)
    return try applyActivation(
      reader.activationName(), to: try asRow(source, .convolution2D(conv), call), reader: reader)
  }

  mutating func convertPooling1D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let size = try reader.int("pool_size", default: 2)
    let stride = try reader.present("strides") == nil ? size : reader.int("strides")
    let pooling = Pooling2D(
      kind: call.className.hasPrefix("Max") ? .max : .average, pool: [1, size], strides: [1, stride],
      padding: try reader.padding())
    return try asRow(try call.single(), .pooling2D(pooling), call)
  }

  mutating func convertGlobalPooling1D(_ call: KerasLayerCall) throws -> ValueID {
    try call.reader.requireChannelsLast()
    let kind: PoolingKind = call.className.hasPrefix("GlobalMax") ? .max : .average
    let keepDims = call.reader.bool("keepdims", default: false)
    let pooled = try asRow(try call.single(), .globalPooling2D(kind: kind, keepDims: false), call)
    return keepDims
      ? try add(.reshape(targetShape: [1, shape(pooled)[0]]), [pooled], call, suffix: "__keepdims") : pooled
  }

  mutating func convertPaddingOrCropping1D(_ call: KerasLayerCall, padding: Bool) throws -> ValueID {
    let amounts = try call.reader.amounts(padding ? "padding" : "cropping")
    let box = Box2D(top: 0, bottom: 0, left: amounts[0], right: amounts[1])
    return try asRow(try call.single(), padding ? .zeroPadding2D(box) : .cropping2D(box), call)
  }

  mutating func convertUpSampling1D(_ call: KerasLayerCall) throws -> ValueID {
    try asRow(
      try call.single(), .upsampling2D(height: 1, width: try call.reader.int("size", default: 2), mode: .nearest), call)
  }

  mutating func convertRepeatVector(_ call: KerasLayerCall) throws -> ValueID {
    let input = try call.single()
    let s = shape(input)
    guard s.count == 1 else { throw call.reader.fail("expects a vector, got \(s)") }
    let row = try add(.reshape(targetShape: [1, s[0]]), [input], call, suffix: "__row")
    // n copies become one concatenation with n inputs; the limit keeps that (and any unrolled layer after it) small.
    let n = try call.reader.int("n", range: 1...GraphLimits.maxRepeatCount)
    return n == 1 ? row : try add(.concatenate(axis: 0), [ValueID](repeating: row, count: n), call)
  }
}
