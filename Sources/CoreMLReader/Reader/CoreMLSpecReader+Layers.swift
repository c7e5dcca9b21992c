import CoreMLCommon
import CProtobufC
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
    660: "clip", 795: "gelu", 815: "equal", 820: "notEqual", 825: "lessThan", 827: "lessEqual", 830: "greaterThan",
    832: "greaterEqual", 870: "minBroadcastable", 875: "maxBroadcastable", 880: "addBroadcastable", 885: "powBroadcastable",
    890: "divideBroadcastable", 900: "multiplyBroadcastable", 905: "subtractBroadcastable", 920: "tile", 950: "softmaxND",
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
    _ pointer: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, count expected: Int? = nil, fail: (String) -> Error
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
    guard let quantization = params.quantization?.pointee else { throw fail("rawValue without quantization parameters") }
    let bits = Int(quantization.numberofbits)
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
      let scales = buffer(linear.scale, linear.n_scale), biases = buffer(linear.bias, linear.n_bias)
      guard !scales.isEmpty, scales.count == biases.count, count % scales.count == 0 || count >= scales.count else {
        throw fail("linear quantization has \(scales.count) scales and \(biases.count) biases")
      }
      return DecodedWeights(values: codes.map { Float($0) }, bits: bits).dequantizedLinear(scales: scales, biases: biases)
    case CORE_ML__SPECIFICATION__QUANTIZATION_PARAMS__QUANTIZATION_TYPE_LOOKUP_TABLE_QUANTIZATION:
      let table = quantization.lookuptablequantization.pointee
      let entries = buffer(table.floatvalue, table.n_floatvalue)
      guard entries.count == 1 << bits else { throw fail("lookup table has \(entries.count) entries for \(bits)-bit codes") }
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

  static func layer(_ pointer: UnsafeMutablePointer<CoreML__Specification__NeuralNetworkLayer>, path: String) throws -> CoreMLModelSpec.Layer {
    let l = pointer.pointee
    var result = CoreMLModelSpec.Layer(
      name: text(l.name), kind: layerKinds[l.layer_case.rawValue] ?? "layer\(l.layer_case.rawValue)",
      inputs: buffer(l.input, l.n_input).map { text($0) }, outputs: buffer(l.output, l.n_output).map { text($0) },
      weights: [:], integers: [:], floats: [:], usesFloat16: false)
    let layerName = result.name
    func weight(_ name: String, _ params: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, count: Int? = nil) throws {
      let fail = { (detail: String) -> Error in CoreMLReaderError.invalidWeights(path: path, layer: layerName, detail: "\(name): \(detail)") }
      guard let decoded = try decodeWeights(params, count: count, fail: fail) else { return }
      result.weights[name] = decoded.values
      result.usesFloat16 = result.usesFloat16 || decoded.half
      result.quantizationBits = max(result.quantizationBits, decoded.bits)
    }

    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONVOLUTION:
      let c = l.convolution.pointee
      result.integers = [
        "outputChannels": [Int(clamping: c.outputchannels)], "kernelChannels": [Int(clamping: c.kernelchannels)], "nGroups": [Int(clamping: c.ngroups)],
        "kernelSize": ints(c.kernelsize, c.n_kernelsize), "stride": ints(c.stride, c.n_stride),
        "dilationFactor": ints(c.dilationfactor, c.n_dilationfactor), "hasBias": [Int(c.hasbias)],
        "isDeconvolution": [Int(c.isdeconvolution)], "outputShape": ints(c.outputshape, c.n_outputshape),
        "same": [c.convolution_padding_type_case == CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_SAME ? 1 : 0],
      ]
      if c.convolution_padding_type_case == CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID {
        result.integers["validPadding"] = borders(c.valid.pointee.paddingamounts)
      } else if let same = c.same {
        result.integers["asymmetryMode"] = [Int(same.pointee.asymmetrymode.rawValue)]
      }
      let kernel = buffer(c.kernelsize, c.n_kernelsize)
      let groups = max(c.ngroups, 1)
      // A deconvolution stores [kernelChannels, outputChannels / groups, kh, kw].
      let perGroupOut = c.isdeconvolution != 0 ? c.outputchannels / groups : c.outputchannels
      try weight("weights", c.weights, count: product([perGroupOut, c.kernelchannels] + kernel))
      try weight("bias", c.bias, count: product([c.outputchannels]))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_INNER_PRODUCT:
      let p = l.innerproduct.pointee
      result.integers = [
        "inputChannels": [Int(clamping: p.inputchannels)], "outputChannels": [Int(clamping: p.outputchannels)], "hasBias": [Int(p.hasbias)],
        "int8DynamicQuantize": [Int(p.int8dynamicquantize)],
      ]
      try weight("weights", p.weights, count: product([p.inputchannels, p.outputchannels]))
      try weight("bias", p.bias, count: product([p.outputchannels]))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHNORM:
      let b = l.batchnorm.pointee
      result.integers = ["channels": [Int(clamping: b.channels)], "computeMeanVar": [Int(b.computemeanvar)], "instanceNormalization": [Int(b.instancenormalization)]]
      result.floats["epsilon"] = b.epsilon
      try weight("gamma", b.gamma)
      try weight("beta", b.beta)
      try weight("mean", b.mean)
      try weight("variance", b.variance)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ACTIVATION:
      let a = l.activation.pointee
      let kind = activationKinds[a.nonlinearity_type_case.rawValue] ?? "unknown"
      result.kind = "activation." + kind
      switch a.nonlinearity_type_case {
      case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR:
        result.floats = ["alpha": a.linear.pointee.alpha, "beta": a.linear.pointee.beta]
      case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LEAKY_RE_LU: result.floats = ["alpha": a.leakyrelu.pointee.alpha]
      case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_THRESHOLDED_RE_LU: result.floats = ["alpha": a.thresholdedrelu.pointee.alpha]
      case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_ELU: result.floats = ["alpha": a.elu.pointee.alpha]
      case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD:
        result.floats = ["alpha": a.sigmoidhard.pointee.alpha, "beta": a.sigmoidhard.pointee.beta]
      case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PRE_LU: try weight("alpha", a.prelu.pointee.alpha)
      default: break
      }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POOLING:
      let p = l.pooling.pointee
      result.integers = [
        "type": [Int(p.type.rawValue)], "kernelSize": ints(p.kernelsize, p.n_kernelsize), "stride": ints(p.stride, p.n_stride),
        "avgPoolExcludePadding": [Int(p.avgpoolexcludepadding)], "globalPooling": [Int(p.globalpooling)],
        "same": [p.pooling_padding_type_case == CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME ? 1 : 0],
      ]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN:
      result.integers = ["mode": [Int(l.flatten.pointee.mode.rawValue)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE:
      let r = l.reshape.pointee
      result.integers = ["targetShape": buffer(r.targetshape, r.n_targetshape).map { Int($0) }, "mode": [Int(r.mode.rawValue)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PERMUTE:
      result.integers = ["axis": ints(l.permute.pointee.axis, l.permute.pointee.n_axis)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PADDING:
      result.integers = ["paddingAmounts": borders(l.padding.pointee.paddingamounts)]
      if l.padding.pointee.padding_type_case == CORE_ML__SPECIFICATION__PADDING_LAYER_PARAMS__PADDING_TYPE_CONSTANT {
        result.floats["value"] = l.padding.pointee.constant.pointee.value
      }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CROP:
      result.integers = ["cropAmounts": borders(l.crop.pointee.cropamounts), "offset": ints(l.crop.pointee.offset, l.crop.pointee.n_offset)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REORGANIZE_DATA:
      result.integers = ["mode": [Int(l.reorganizedata.pointee.mode.rawValue)], "blockSize": [Int(clamping: l.reorganizedata.pointee.blocksize)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LRN:
      let n = l.lrn.pointee
      result.integers = ["localSize": [Int(clamping: n.localsize)]]
      result.floats = ["alpha": n.alpha, "beta": n.beta, "k": n.k]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UPSAMPLE:
      let u = l.upsample.pointee
      result.integers = [
        "scalingFactor": ints(u.scalingfactor, u.n_scalingfactor), "mode": [Int(u.mode.rawValue)],
        "linearUpsampleMode": [Int(u.linearupsamplemode.rawValue)], "fractionalScalingFactorCount": [u.n_fractionalscalingfactor],
      ]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY:
      let u = l.unary.pointee
      result.integers = ["type": [Int(u.type.rawValue)]]
      result.floats = ["alpha": u.alpha, "epsilon": u.epsilon, "shift": u.shift, "scale": u.scale]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GELU:
      result.integers = ["mode": [Int(l.gelu.pointee.mode.rawValue)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT:
      result.integers = ["sequenceConcat": [Int(l.concat.pointee.sequenceconcat)]]
    default:
      let decode: WeightDecoder = { name, params, count in
        try decodeWeights(params, count: count) { CoreMLReaderError.invalidWeights(path: path, layer: layerName, detail: "\(name): \($0)") }
      }
      try decodeNDLayer(l, into: &result, decode: decode)
      try decodeRecurrentLayer(l, into: &result, decode: decode)
    }
    return result
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
