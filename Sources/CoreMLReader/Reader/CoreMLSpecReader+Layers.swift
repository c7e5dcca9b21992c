import CProtobufC
import CoreMLCommon
import CoreMLSpec

extension CoreMLSpecReader {
  /// Names of the layer oneof cases, by field number.
  static let layerKinds: [UInt32: String] = [
    100: "convolution", 120: "pooling", 130: "activation", 140: "innerProduct", 150: "embedding", 160: "batchnorm",
    165: "mvn", 170: "l2normalize", 175: "softmax", 180: "lrn", 190: "crop", 200: "padding", 210: "upsample",
    211: "resizeBilinear", 212: "cropResize", 220: "unary", 230: "add", 231: "multiply", 240: "average", 245: "scale",
    250: "bias", 260: "max", 261: "min", 270: "dot", 280: "reduce", 290: "loadConstant", 300: "reshape", 301: "flatten",
    310: "permute", 320: "concat", 330: "split", 340: "sequenceRepeat", 345: "reorganizeData", 350: "slice",
    400: "simpleRecurrent", 410: "gru", 420: "uniDirectionalLSTM", 430: "biDirectionalLSTM", 500: "custom", 600: "copy",
    660: "clip", 665: "ceil", 670: "floor", 710: "sin", 715: "cos", 795: "gelu", 815: "equal", 820: "notEqual",
    825: "lessThan", 827: "lessEqual", 830: "greaterThan",
    832: "greaterEqual", 870: "minBroadcastable", 875: "maxBroadcastable", 880: "addBroadcastable",
    885: "powBroadcastable",
    890: "divideBroadcastable", 900: "multiplyBroadcastable", 905: "subtractBroadcastable", 920: "tile",
    950: "softmaxND",
    980: "concatND", 985: "transpose", 995: "sliceStatic", 1045: "batchedMatmul", 1070: "loadConstantND",
    1120: "squeeze", 1125: "expandDims", 1130: "flattenTo2D", 1140: "reshapeStatic", 1155: "constantPad",
    1260: "reduceMax", 1265: "reduceMin", 1270: "reduceSum", 1280: "reduceMean", 1330: "whereBroadcastable",
    1350: "layerNormalization", 1460: "clampedReLU",
  ]

  /// Names of the activation oneof cases, by field number.
  static let activationKinds: [UInt32: String] = [
    5: "linear", 10: "ReLU", 15: "leakyReLU", 20: "thresholdedReLU", 25: "PReLU", 30: "tanh", 31: "scaledTanh",
    40: "sigmoid", 41: "sigmoidHard", 50: "ELU", 60: "softsign", 70: "softplus", 71: "parametricSoftplus",
  ]

  /// A decoded weight blob.
  struct DecodedWeights {
    var values: [Float]
    var half = false
    var bits = 0
  }

  /// A weight blob as floats: float32 as is, float16 widened, `rawValue` dequantized (linear or lookup table).
  /// `count`, when known, is the number of weights the layer needs; packed codes beyond it are padding.
  static func decodeWeights(
    _ pointer: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, count expected: Int? = nil,
    fail: (String) -> Error
  ) throws -> DecodedWeights? {
    guard let params = pointer?.pointee else { return nil }
    if params.n_floatvalue > 0 { return DecodedWeights(values: buffer(params.floatvalue, params.n_floatvalue)) }
    let half = params.float16value
    if half.len > 0, let data = half.data {
      guard half.len % 2 == 0 else { throw fail("float16Value has an odd number of bytes (\(half.len))") }
      let values = stride(from: 0, to: half.len, by: 2).map { offset -> Float in
        Float(Float16(bitPattern: UInt16(data[offset]) | UInt16(data[offset + 1]) << 8))
      }
      return DecodedWeights(values: values, half: true)
    }
    let raw = params.rawvalue
    guard raw.len > 0, let data = raw.data else { return DecodedWeights(values: []) }
    guard let quantization = params.quantization?.pointee else {
      throw fail("rawValue without quantization parameters")
    }
    let bits = Int(clamping: quantization.numberofbits)
    guard (1...8).contains(bits) else { throw fail("quantization with \(bits) bits (1 to 8 are valid)") }
    // Values are packed most significant bit first, as coremltools packs them.
    let available = raw.len * 8 / bits
    if let expected, expected > available { throw fail("\(available) quantized values for \(expected) weights") }
    let count = expected ?? available
    var codes = [Int](repeating: 0, count: count)
    for index in 0..<count {
      var code = 0
      for bit in 0..<bits {
        let position = index * bits + bit
        code = code << 1 | Int(data[position / 8] >> (7 - position % 8) & 1)
      }
      codes[index] = code
    }
    switch quantization.quantization_type_case {
    case CORE_ML__SPECIFICATION__QUANTIZATION_PARAMS__QUANTIZATION_TYPE_LINEAR_QUANTIZATION:
      let linear = quantization.linearquantization.pointee
      let scales = buffer(linear.scale, linear.n_scale)
      let biases = buffer(linear.bias, linear.n_bias)
      guard !scales.isEmpty, scales.count == biases.count, count % scales.count == 0 || count >= scales.count else {
        throw fail("linear quantization has \(scales.count) scales and \(biases.count) biases")
      }
      return DecodedWeights(values: codes.map { Float($0) }, bits: bits).dequantizedLinear(
        scales: scales, biases: biases)
    case CORE_ML__SPECIFICATION__QUANTIZATION_PARAMS__QUANTIZATION_TYPE_LOOKUP_TABLE_QUANTIZATION:
      let table = quantization.lookuptablequantization.pointee
      let entries = buffer(table.floatvalue, table.n_floatvalue)
      guard entries.count == 1 << bits else {
        throw fail("lookup table has \(entries.count) entries for \(bits)-bit codes")
      }
      return DecodedWeights(values: codes.map { entries[$0] }, bits: bits)
    default:
      throw fail("rawValue with neither linear nor lookup-table quantization")
    }
  }

  /// The product of sizes read from a file, or nil when it is not a plausible element count (overflow,
  /// more than 2^31), so corrupt sizes never trap.
  static func product(_ sizes: [UInt64]) -> Int? {
    var result: UInt64 = 1
    for size in sizes {
      let (next, overflow) = result.multipliedReportingOverflow(by: size)
      guard !overflow, next <= 1 << 31 else { return nil }
      result = next
    }
    return Int(result)
  }

  static func borders(_ pointer: UnsafeMutablePointer<CoreML__Specification__BorderAmounts>?) -> [Int] {
    guard let border = pointer?.pointee else { return [] }
    return buffer(border.borderamounts, border.n_borderamounts).flatMap { edge -> [Int] in
      guard let edge = edge?.pointee else { return [] }
      return [Int(clamping: edge.startedgesize), Int(clamping: edge.endedgesize)]
    }
  }

  static func layer(_ pointer: UnsafeMutablePointer<CoreML__Specification__NeuralNetworkLayer>, path: String) throws
    -> CoreMLModelSpec.Layer
  {
    let l = pointer.pointee
    let layerName = text(l.name)
    var half = false
    var bits = 0
    let decode: WeightDecoder = { name, params, count in
      let fail = { (detail: String) -> Error in
        CoreMLReaderError.invalidWeights(path: path, layer: layerName, detail: "\(name): \(detail)")
      }
      guard let decoded = try decodeWeights(params, count: count, fail: fail) else { return nil }
      half = half || decoded.half
      bits = max(bits, decoded.bits)
      return decoded.values
    }
    var kind = layerKinds[l.layer_case.rawValue] ?? "layer\(l.layer_case.rawValue)"
    let parameters: CoreMLLayerParameters
    if l.layer_case == CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ACTIVATION, let a = l.activation?.pointee {
      kind = "activation." + (activationKinds[a.nonlinearity_type_case.rawValue] ?? "unknown")
      parameters = .activation(try activation(a, decode: decode))
    } else if let classic = try classicParameters(l, decode: decode) {
      parameters = classic
    } else if let nd = try ndParameters(l, decode: decode) {
      parameters = nd
    } else {
      parameters = try recurrentParameters(l, decode: decode) ?? .notDecoded
    }
    return CoreMLModelSpec.Layer(
      name: layerName, kind: kind, inputs: buffer(l.input, l.n_input).map { text($0) },
      outputs: buffer(l.output, l.n_output).map { text($0) },
      parameters: parameters, usesFloat16: half, quantizationBits: bits)
  }

  /// An `ActivationParams` message; `decode` is nil for a recurrent layer's activations, whose PReLU slopes are not read.
  static func activation(_ a: CoreML__Specification__ActivationParams, decode: WeightDecoder?) throws
    -> ActivationParameters
  {
    switch a.nonlinearity_type_case {
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR:
      guard let p = a.linear?.pointee else { return .linear(alpha: 0, beta: 0) }
      return .linear(alpha: p.alpha, beta: p.beta)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_RE_LU: return .relu
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LEAKY_RE_LU:
      return .leakyReLU(alpha: a.leakyrelu?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_THRESHOLDED_RE_LU:
      return .thresholdedReLU(alpha: a.thresholdedrelu?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PRE_LU:
      return .preLU(alpha: try decode?("alpha", a.prelu?.pointee.alpha, nil) ?? nil)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_TANH: return .tanh
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SCALED_TANH:
      guard let p = a.scaledtanh?.pointee else { return .scaledTanh(alpha: 0, beta: 0) }
      return .scaledTanh(alpha: p.alpha, beta: p.beta)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID: return .sigmoid
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD:
      guard let p = a.sigmoidhard?.pointee else { return .sigmoidHard(alpha: 0, beta: 0) }
      return .sigmoidHard(alpha: p.alpha, beta: p.beta)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_ELU: return .elu(alpha: a.elu?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SOFTSIGN: return .softsign
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SOFTPLUS: return .softplus
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PARAMETRIC_SOFTPLUS: return .parametricSoftplus
    default: return .unknown(fieldNumber: Int(a.nonlinearity_type_case.rawValue))
    }
  }

  static func flag(_ value: protobuf_c_boolean) -> Bool { value != 0 }

  /// The classic (Core ML 1 and 2) layers other than activations and the recurrent family; nil for other layers.
  static func classicParameters(_ l: CoreML__Specification__NeuralNetworkLayer, decode: WeightDecoder) throws
    -> CoreMLLayerParameters?
  {
    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONVOLUTION:
      guard let c = l.convolution?.pointee else { return .convolution(ConvolutionParameters()) }
      var p = ConvolutionParameters()
      (p.outputChannels, p.kernelChannels, p.nGroups) = (
        Int(clamping: c.outputchannels), Int(clamping: c.kernelchannels), Int(clamping: c.ngroups)
      )
      (p.kernelSize, p.stride, p.dilationFactor) = (
        ints(c.kernelsize, c.n_kernelsize), ints(c.stride, c.n_stride), ints(c.dilationfactor, c.n_dilationfactor)
      )
      (p.hasBias, p.isDeconvolution, p.outputShape) = (
        flag(c.hasbias), flag(c.isdeconvolution), ints(c.outputshape, c.n_outputshape)
      )
      switch c.convolution_padding_type_case {
      case CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID:
        p.padding = .valid(paddingAmounts: borders(c.valid?.pointee.paddingamounts))
      case CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_SAME:
        p.padding = .same(asymmetryMode: .init(rawValue: Int(c.same?.pointee.asymmetrymode.rawValue ?? 0)))
      default: p.padding = .unset
      }
      let kernel = buffer(c.kernelsize, c.n_kernelsize)
      let groups = max(c.ngroups, 1)
      // A deconvolution stores [kernelChannels, outputChannels / groups, kh, kw].
      let perGroupOut = c.isdeconvolution != 0 ? c.outputchannels / groups : c.outputchannels
      p.weights = try decode("weights", c.weights, product([perGroupOut, c.kernelchannels] + kernel))
      p.bias = try decode("bias", c.bias, product([c.outputchannels]))
      return .convolution(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_INNER_PRODUCT:
      guard let c = l.innerproduct?.pointee else { return .innerProduct(InnerProductParameters()) }
      var p = InnerProductParameters()
      (p.inputChannels, p.outputChannels) = (Int(clamping: c.inputchannels), Int(clamping: c.outputchannels))
      (p.hasBias, p.int8DynamicQuantize) = (flag(c.hasbias), flag(c.int8dynamicquantize))
      p.weights = try decode("weights", c.weights, product([c.inputchannels, c.outputchannels]))
      p.bias = try decode("bias", c.bias, product([c.outputchannels]))
      return .innerProduct(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHNORM:
      guard let c = l.batchnorm?.pointee else { return .batchnorm(BatchnormParameters()) }
      var p = BatchnormParameters()
      (p.channels, p.computeMeanVar, p.instanceNormalization, p.epsilon) =
        (Int(clamping: c.channels), flag(c.computemeanvar), flag(c.instancenormalization), c.epsilon)
      p.gamma = try decode("gamma", c.gamma, nil)
      p.beta = try decode("beta", c.beta, nil)
      p.mean = try decode("mean", c.mean, nil)
      p.variance = try decode("variance", c.variance, nil)
      return .batchnorm(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POOLING:
      guard let c = l.pooling?.pointee else { return .pooling(PoolingParameters()) }
      var p = PoolingParameters()
      p.type = .init(rawValue: Int(c.type.rawValue))
      (p.kernelSize, p.stride) = (ints(c.kernelsize, c.n_kernelsize), ints(c.stride, c.n_stride))
      (p.avgPoolExcludePadding, p.globalPooling) = (flag(c.avgpoolexcludepadding), flag(c.globalpooling))
      switch c.pooling_padding_type_case {
      case CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID:
        p.padding = .valid
        p.paddingAmounts = borders(c.valid?.pointee.paddingamounts)
      case CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME: p.padding = .same
      case CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_INCLUDE_LAST_PIXEL:
        p.padding = .includeLastPixel
      default: p.padding = .unset
      }
      return .pooling(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN:
      return .flatten(FlattenParameters(mode: .init(rawValue: Int(l.flatten?.pointee.mode.rawValue ?? 0))))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE:
      var p = ReshapeParameters()
      if let c = l.reshape?.pointee {
        (p.targetShape, p.mode) = (
          buffer(c.targetshape, c.n_targetshape).map { Int($0) }, .init(rawValue: Int(c.mode.rawValue))
        )
      }
      return .reshape(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PERMUTE:
      return .permute(PermuteParameters(axis: l.permute.map { ints($0.pointee.axis, $0.pointee.n_axis) } ?? []))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PADDING:
      var p = PaddingParameters()
      guard let c = l.padding?.pointee else { return .padding(p) }
      p.paddingAmounts = borders(c.paddingamounts)
      switch c.padding_type_case {
      case CORE_ML__SPECIFICATION__PADDING_LAYER_PARAMS__PADDING_TYPE_CONSTANT:
        p.type = .constant(value: c.constant?.pointee.value ?? 0)
      case CORE_ML__SPECIFICATION__PADDING_LAYER_PARAMS__PADDING_TYPE_REFLECTION: p.type = .reflection
      case CORE_ML__SPECIFICATION__PADDING_LAYER_PARAMS__PADDING_TYPE_REPLICATION: p.type = .replication
      default: p.type = .unset
      }
      return .padding(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CROP:
      var p = CropParameters()
      if let c = l.crop?.pointee { (p.cropAmounts, p.offset) = (borders(c.cropamounts), ints(c.offset, c.n_offset)) }
      return .crop(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REORGANIZE_DATA:
      var p = ReorganizeDataParameters()
      if let c = l.reorganizedata?.pointee {
        (p.mode, p.blockSize) = (.init(rawValue: Int(c.mode.rawValue)), Int(clamping: c.blocksize))
      }
      return .reorganizeData(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LRN:
      var p = LRNParameters()
      if let c = l.lrn?.pointee {
        (p.alpha, p.beta, p.localSize, p.k) = (c.alpha, c.beta, Int(clamping: c.localsize), c.k)
      }
      return .lrn(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UPSAMPLE:
      var p = UpsampleParameters()
      if let c = l.upsample?.pointee {
        (p.scalingFactor, p.fractionalScalingFactor) = (
          ints(c.scalingfactor, c.n_scalingfactor), buffer(c.fractionalscalingfactor, c.n_fractionalscalingfactor)
        )
        (p.mode, p.linearUpsampleMode) = (
          .init(rawValue: Int(c.mode.rawValue)), .init(rawValue: Int(c.linearupsamplemode.rawValue))
        )
      }
      return .upsample(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY:
      var p = UnaryParameters()
      if let c = l.unary?.pointee {
        p.type = .init(rawValue: Int(c.type.rawValue))
        (p.alpha, p.epsilon, p.shift, p.scale) = (c.alpha, c.epsilon, c.shift, c.scale)
      }
      return .unary(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GELU:
      return .gelu(GeluParameters(mode: .init(rawValue: Int(l.gelu?.pointee.mode.rawValue ?? 0))))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT:
      return .concat(ConcatParameters(sequenceConcat: flag(l.concat?.pointee.sequenceconcat ?? 0)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX: return .softmax
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_COPY: return .copy
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD:
      return .elementwise(.add(alpha: l.add?.pointee.alpha ?? 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY:
      return .elementwise(.multiply(alpha: l.multiply?.pointee.alpha ?? 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_AVERAGE: return .elementwise(.average)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MAX: return .elementwise(.max)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MIN: return .elementwise(.min)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT:
      var p = LoadConstantParameters()
      if let c = l.loadconstant?.pointee {
        (p.shape, p.data) = (ints(c.shape, c.n_shape), try decode("data", c.data, nil))
      }
      return .loadConstant(p)
    default: return nil
    }
  }
}

extension CoreMLSpecReader.DecodedWeights {
  /// `w = q * scale + bias`, with one scale and bias per tensor or per leading-axis channel.
  func dequantizedLinear(scales: [Float], biases: [Float]) -> Self {
    var copy = self
    let perChannel = Swift.max(1, values.count / scales.count)
    copy.values = values.enumerated().map { index, q in
      let channel = Swift.min(index / perChannel, scales.count - 1)
      return q * scales[channel] + biases[channel]
    }
    return copy
  }
}
