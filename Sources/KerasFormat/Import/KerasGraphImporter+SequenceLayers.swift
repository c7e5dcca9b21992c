import ModelIR

extension KerasGraphImporter {
  /// Converts the sequence and 1-D layers (and wrappers); nil when `layer` is none of them.
  ///
  /// 1-D layers run as their 2-D counterparts on a `[1, T, C]` view of the `[T, C]` sequence.
  mutating func convertSequenceLayer(_ layer: KerasLayerConfig, inputs: [ValueID], weightGroup: String, direction: String? = nil) throws -> ValueID? {
    let reader = LayerConfigReader(layer: layer, path: model.path)
    func single() throws -> ValueID { try reader.single(inputs) }
    func weight(_ kinds: [String], _ shape: [Int]?) throws -> Constant {
      try model.weights.weight(kinds, layer: layer.name, topLevel: weightGroup, expectedShape: shape, direction: direction)
    }
    func add(_ operation: Operation, _ nodeInputs: [ValueID], suffix: String = "") throws -> ValueID {
      try graphCall { try $0.add(operation, name: layer.name + suffix, inputs: nodeInputs) }
    }
    func shape(_ id: ValueID) -> [Int] { builder.type(of: id).shape }
    let className = layer.className
    func sequence(_ input: ValueID) throws -> (steps: Int, channels: Int) {
      let s = shape(input)
      guard s.count == 2 else { throw reader.fail("expects a [steps, channels] sequence, got \(s)") }
      return (s[0], s[1])
    }
    /// Runs a 2-D operation on the `[1, T, C]` view of a sequence and returns the `[T', C']` result.
    func asRow(_ input: ValueID, _ operation: Operation) throws -> ValueID {
      let (steps, channels) = try sequence(input)
      let row = try add(.reshape(targetShape: [1, steps, channels]), [input], suffix: "__row")
      let result = try add(operation, [row])
      let s = shape(result)
      return s.count == 3 ? try add(.reshape(targetShape: [s[1], s[2]]), [result], suffix: "__sequence") : result
    }
    /// A 1-D size given as an integer or a one-element list.
    func length(_ key: String, default fallback: Int? = nil) throws -> Int { try reader.int(key, default: fallback) }

    switch className {
    case "Embedding":
      let input = try single()
      let table = try weight(["embeddings", "kernel"], [try reader.int("input_dim"), try reader.int("output_dim")])
      return try add(.embedding(table: table), [input])

    case "SimpleRNN", "LSTM", "GRU":
      return try add(.recurrent(try recurrent(layer, input: try single(), weightGroup: weightGroup)), [try single()])

    case "Bidirectional":
      guard let inner = reader.value("layer").flatMap(KerasLayerConfig.init(wrapped:)) else { throw reader.fail("no wrapped layer") }
      guard ["SimpleRNN", "LSTM", "GRU"].contains(inner.className) else { throw reader.fail("wraps \(inner.className); only SimpleRNN, LSTM and GRU") }
      let mergeName = try reader.string("merge_mode", default: "concat")
      guard let merge = Recurrent.Merge(rawValue: mergeName) else { throw reader.fail("merge_mode '\(mergeName)' is not supported") }
      let input = try single()
      var forward = try recurrent(inner, input: input, weightGroup: weightGroup, owner: layer.name, direction: "forward")
      let backward = try recurrent(inner, input: input, weightGroup: weightGroup, owner: layer.name, direction: "backward")
      guard !forward.goBackwards else { throw reader.fail("a wrapped layer with go_backwards is not supported") }
      forward.backward = backward.forward
      forward.merge = merge
      return try add(.recurrent(forward), [input])

    case "TimeDistributed":
      guard let inner = reader.value("layer").flatMap(KerasLayerConfig.init(wrapped:)) else { throw reader.fail("no wrapped layer") }
      let input = try single()
      switch inner.className {
      case "Dense", "Activation", "Dropout", "ReLU", "LeakyReLU", "ELU", "Softmax":
        // These act on the last axis only, so the time axis passes through.
        let renamed = KerasLayerConfig(className: inner.className, name: layer.name, config: inner.config)
        return try convert(renamed, inputs: [input], weightGroup: weightGroup)
      case "Flatten":
        let s = shape(input)
        guard s.count >= 2 else { throw reader.fail("TimeDistributed(Flatten) of \(s) (needs a time axis)") }
        return try add(.reshape(targetShape: [s[0], try checkedProduct(Array(s.dropFirst()), reader)]), [input])
      default:
        // Image layers take the time axis as a leading axis.
        guard shape(input).count == 4, KerasLayerCatalog.supportedClassNames.contains(inner.className) else {
          throw reader.fail("TimeDistributed(\(inner.className)) is not supported (Dense, activations, Flatten and image layers are)")
        }
        let renamed = KerasLayerConfig(className: inner.className, name: layer.name, config: inner.config)
        return try convert(renamed, inputs: [input], weightGroup: weightGroup)
      }

    case "Conv1D", "Convolution1D":
      try reader.requireChannelsLast()
      let input = try single()
      let (_, channels) = try sequence(input)
      let filters = try reader.int("filters"), size = try length("kernel_size")
      let dilation = try length("dilation_rate", default: 1), stride = try length("strides", default: 1)
      guard try reader.int("groups", default: 1) == 1 else { throw reader.fail("grouped Conv1D is not supported") }
      let kernel = try weight(["kernel"], [size, channels, filters])
      let bias = reader.bool("use_bias", default: true) ? try weight(["bias"], [filters]) : nil
      let paddingName = try reader.string("padding", default: "valid").lowercased()
      var source = input
      if paddingName == "causal" {
        // Causal: pad the start with (size - 1) * dilation steps, then a valid convolution.
        let (span, overflow) = (size - 1).multipliedReportingOverflow(by: dilation)
        guard !overflow, span <= LayerConfigReader.maxConfigInteger else {
          throw reader.invalid("dilation_rate", reader.present("dilation_rate"), expected: "a dilation whose causal padding fits \(LayerConfigReader.maxConfigInteger)")
        }
        source = try asRow(input, .zeroPadding2D(Box2D(top: 0, bottom: 0, left: span, right: 0)))
      } else if Padding(rawValue: paddingName) == nil {
        throw reader.fail("padding '\(paddingName)' is not supported (same, valid or causal)")
      }
      let conv = Convolution2D(
        kernel: Constant(shape: [1, size, channels, filters], values: kernel.values), bias: bias, strides: [1, stride],
        dilations: [1, dilation], padding: paddingName == "same" ? .same : .valid, groups: 1)
      return try applyActivation(reader.activationName(), to: try asRow(source, .convolution2D(conv)), reader: reader)

    case "MaxPooling1D", "MaxPool1D", "AveragePooling1D", "AvgPool1D":
      try reader.requireChannelsLast()
      let size = try length("pool_size", default: 2)
      let stride = try reader.present("strides") == nil ? size : length("strides")
      let pooling = Pooling2D(kind: className.hasPrefix("Max") ? .max : .average, pool: [1, size], strides: [1, stride], padding: try reader.padding())
      return try asRow(try single(), .pooling2D(pooling))

    case "GlobalAveragePooling1D", "GlobalAvgPool1D", "GlobalMaxPooling1D", "GlobalMaxPool1D":
      try reader.requireChannelsLast()
      let kind: PoolingKind = className.hasPrefix("GlobalMax") ? .max : .average
      let keepDims = reader.bool("keepdims", default: false)
      let pooled = try asRow(try single(), .globalPooling2D(kind: kind, keepDims: false))
      return keepDims ? try add(.reshape(targetShape: [1, shape(pooled)[0]]), [pooled], suffix: "__keepdims") : pooled

    case "ZeroPadding1D", "Cropping1D":
      let key = className == "ZeroPadding1D" ? "padding" : "cropping"
      let amounts = try reader.amounts(key)
      let box = Box2D(top: 0, bottom: 0, left: amounts[0], right: amounts[1])
      return try asRow(try single(), className == "ZeroPadding1D" ? .zeroPadding2D(box) : .cropping2D(box))

    case "UpSampling1D":
      return try asRow(try single(), .upsampling2D(height: 1, width: try length("size", default: 2), bilinear: false))

    case "Rescaling":
      let scale = try reader.float("scale"), offset = try reader.float("offset", default: 0)
      return try add(.activation(.linear(scale: scale, offset: offset)), [try single()])

    case "Normalization":
      // (x - mean) / sqrt(variance) along the last axis, from the weights (adapted) or the config.
      let input = try single()
      let channels = shape(input).last ?? 1
      // A null axis means one mean and variance for every element (broadcast below).
      if reader.value("axis") != nil, case let axis = try reader.axes("axis", default: [-1], rank: shape(input).count), axis != [-1], axis != [shape(input).count] {
        throw reader.fail("normalizing axis \(axis) is not supported; only the last axis is")
      }
      guard !reader.bool("invert", default: false) else { throw reader.fail("invert=True is not supported") }
      func statistic(_ key: String) throws -> [Float] {
        if let stored = try? weight([key], nil), stored.count == channels || stored.count == 1 { return stored.values }
        if let json = reader.value(key) {
          // A number or a list of numbers, each finite.
          let items = json.array ?? [json]
          let values = items.compactMap { item -> Float? in
            guard case .number(let n) = item, n.isFinite, abs(n) <= Double(Float.greatestFiniteMagnitude) else { return nil }
            return Float(n)
          }
          guard !items.isEmpty, values.count == items.count else { throw reader.invalid(key, json, expected: "a finite number or a list of them") }
          return values
        }
        throw reader.fail("no \(key) in its weights or config")
      }
      var mean = try statistic("mean"), variance = try statistic("variance")
      if mean.count == 1 { mean = [Float](repeating: mean[0], count: channels) }
      if variance.count == 1 { variance = [Float](repeating: variance[0], count: channels) }
      guard mean.count == channels, variance.count == channels else { throw reader.fail("statistics do not fit \(channels) channels") }
      // Keras divides by max(sqrt(variance), 1e-7); a variance floor of 1e-14 gives the same. The epsilon
      // is tiny but not 0, which Core ML would read as 1e-5.
      let norm = BatchNormalization(
        gamma: .filled(1, shape: [channels]), beta: .filled(0, shape: [channels]), mean: Constant(shape: [channels], values: mean),
        variance: Constant(shape: [channels], values: variance.map { max($0, 1e-14) }), epsilon: 1e-20)
      return try add(.batchNormalization(norm), [input])

    case "LayerNormalization":
      // (x - mean) / sqrt(variance + epsilon) * gamma + beta over the last axis, from reductions.
      let input = try single()
      let rank = shape(input).count, channels = shape(input).last ?? 1
      let axes = try reader.axes("axis", default: [-1], rank: rank)
      guard axes.count == 1, axes[0] == -1 || axes[0] == rank else { throw reader.fail("normalizing axes \(axes) (only the last axis)") }
      guard !reader.bool("rms_scaling", default: false) else { throw reader.fail("rms_scaling is not supported") }
      let norm = LayerNormalization(
        gamma: reader.bool("scale", default: true) ? try weight(["gamma"], [channels]) : nil,
        beta: reader.bool("center", default: true) ? try weight(["beta"], [channels]) : nil, epsilon: try reader.float("epsilon", default: 1e-3, range: 0...1e10))
      return try add(.layerNormalization(norm), [input])

    case "UnitNormalization":
      let input = try single()
      let axes = try reader.axes("axis", default: [-1], rank: shape(input).count)
      guard axes == [-1] || axes == [shape(input).count] else { throw reader.fail("normalizing axes \(axes) (only the last axis)") }
      // Keras divides by sqrt(max(sum, 1e-12)); adding 1e-12 instead differs only for all-but-zero vectors.
      return try add(.l2Normalize(epsilon: 1e-12), [input])

    case "Dot":
      guard inputs.count == 2, shape(inputs[0]).count == 1, shape(inputs[0]) == shape(inputs[1]) else {
        throw reader.fail("Dot of \(inputs.map(shape)) (two vectors of one length only)")
      }
      let axes = try reader.axes("axes", default: [1], rank: 1)
      guard axes.allSatisfy({ $0 == 1 || $0 == -1 }) else { throw reader.fail("axes \(axes) (only the feature axis)") }
      return try add(.dot(cosine: reader.bool("normalize", default: false)), inputs)

    case "RepeatVector":
      let input = try single()
      let s = shape(input)
      guard s.count == 1 else { throw reader.fail("expects a vector, got \(s)") }
      let row = try add(.reshape(targetShape: [1, s[0]]), [input], suffix: "__row")
      // n copies become one concatenation with n inputs; the limit keeps that (and any unrolled layer after it) small.
      let n = try reader.int("n", range: 1...GraphLimits.maxRepeatCount)
      return n == 1 ? row : try add(.concatenate(axis: 0), [ValueID](repeating: row, count: n))

    default:
      return nil
    }
  }

  /// The IR form of a SimpleRNN, LSTM or GRU config; `owner` and `direction` locate a Bidirectional half's weights.
  func recurrent(_ layer: KerasLayerConfig, input: ValueID, weightGroup: String, owner: String? = nil, direction: String? = nil) throws -> Recurrent {
    let reader = LayerConfigReader(layer: layer, path: model.path)
    let s = builder.type(of: input).shape
    guard s.count == 2 else { throw reader.fail("expects a [steps, channels] sequence, got \(s)") }
    guard !reader.bool("return_state", default: false) else { throw reader.fail("return_state is not supported") }
    let units = try reader.int("units")
    let cell: Recurrent.Cell
    switch layer.className {
    case "SimpleRNN": cell = .simple
    case "LSTM": cell = .lstm
    // Keras 2.0-2.2 had no reset_after and used the older formula.
    default: cell = .gru(resetAfter: reader.bool("reset_after", default: false))
    }
    let width = try checkedProduct([cell.gates, units], reader)
    /// Keras 1 stored one matrix per gate (`W_i`, `U_i`, `b_i`, ...), Keras 2 and 3 one for all gates.
    let legacyGates: [String]? = ["LSTM": ["i", "f", "c", "o"], "GRU": ["z", "r", "h"]][layer.className]
    func weight(_ kind: String, _ shape: [Int]) throws -> Constant {
      func stored(_ kinds: [String], _ shape: [Int]?) throws -> Constant {
        try model.weights.weight(kinds, layer: owner ?? layer.name, topLevel: weightGroup, expectedShape: shape, direction: direction)
      }
      do {
        return try stored([kind], shape)
      } catch let error as KerasReaderError {
        guard case .missingWeight = error, let gates = legacyGates else { throw error }
        let prefix = ["kernel": "W", "recurrent_kernel": "U", "bias": "b"][kind]!
        let parts = try gates.map { try stored([prefix + "_" + $0], shape.count == 2 ? [shape[0], units] : [units]) }
        // Concatenate the gates along the last axis.
        let rows = shape.count == 2 ? shape[0] : 1
        var values: [Float] = []
        for row in 0..<rows { for part in parts { values += part.values[row * units..<(row + 1) * units] } }
        return Constant(shape: shape, values: values)
      }
    }
    var bias: Constant?
    if reader.bool("use_bias", default: true) {
      let stored = try weight("bias", cell == .gru(resetAfter: true) ? [2, width] : [width])
      bias = Constant(shape: [stored.count], values: stored.values)
    }
    let gateName = layer.className == "SimpleRNN" ? "sigmoid" : try reader.activationName("recurrent_activation")
    let outputName = try reader.activationName()
    guard let outputActivation = activation(named: outputName), let gateActivation = activation(named: gateName) else {
      throw reader.fail("activation '\(outputName)' or '\(gateName)' is not supported")
    }
    return Recurrent(
      cell: cell, units: units, activation: outputActivation, recurrentActivation: gateActivation,
      forward: .init(kernel: try weight("kernel", [s[1], width]), recurrentKernel: try weight("recurrent_kernel", [units, width]), bias: bias),
      returnSequences: reader.bool("return_sequences", default: false), goBackwards: reader.bool("go_backwards", default: false))
  }
}
