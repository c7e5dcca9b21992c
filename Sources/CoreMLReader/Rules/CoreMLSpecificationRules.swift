import CoreMLCommon

/// The restrictions Apple's NeuralNetwork.proto (and coremltools' validator) state for the layers the reader
/// decodes, checked over a decoded model. Each check names its rule ID; the rule's text, in our words, is next to
/// the field it concerns in Schemas/NeuralNetwork.proto (`[rule ID]`).
///
/// Every number comes from an untrusted file: checks never trap, whatever the values.
public enum CoreMLSpecificationRules {
  /// Every rule the model breaks, in layer order, then the model-level ones.
  public static func violations(in spec: CoreMLModelSpec) -> [SpecificationViolation] {
    var found: [SpecificationViolation] = []
    for layer in spec.layers {
      var report = Reporter(layer: layer)
      checkLayer(layer, &report)
      found += report.found
    }
    found += modelViolations(spec)
    found += programViolations(spec)
    found += pipelineViolations(spec)
    return found
  }

  /// Collects one layer's violations.
  struct Reporter {
    let layer: CoreMLModelSpec.Layer
    var found: [SpecificationViolation] = []

    mutating func add(_ rule: String, _ detail: String) {
      found.append(SpecificationViolation(layer: layer.name, layerType: layer.kind, rule: rule, detail: detail))
    }

    /// Checks a weight blob's length against the size the layer's fields declare (only when the blob is present).
    mutating func expectCount(_ rule: String, _ weight: String, _ values: [Float]?, _ expected: Int?, _ what: String) {
      guard let values, let expected else { return }
      if values.count != expected { add(rule, "\(weight) holds \(values.count) values, \(what) needs \(expected)") }
    }
  }

  /// The product of sizes read from a file, or nil on overflow or a negative size.
  static func product(_ sizes: [Int]) -> Int? {
    var result = 1
    for size in sizes {
      guard size >= 0 else { return nil }
      let (next, overflow) = result.multipliedReportingOverflow(by: size)
      if overflow { return nil }
      result = next
    }
    return result
  }

  /// `[H, W]` lists may be empty (defaults) or have exactly two positive entries.
  static func checkPair(_ values: [Int], _ key: String, _ rule: String, _ r: inout Reporter, positive: Bool = true) {
    if !values.isEmpty && values.count != 2 {
      r.add(rule, "\(key) has \(values.count) entries (must be empty or [H, W])")
    }
    if positive, values.contains(where: { $0 <= 0 }) { r.add(rule, "\(key) \(values) has a zero entry") }
  }

  // MARK: Classic layers

  static func checkLayer(_ layer: CoreMLModelSpec.Layer, _ r: inout Reporter) {
    switch layer.parameters {
    case .convolution(let p): checkConvolution(p, &r)
    case .innerProduct(let p):
      // [rule INNER-PRODUCT-WEIGHTS]
      let (inputs, outputs) = (p.inputChannels, p.outputChannels)
      r.expectCount(
        "INNER-PRODUCT-WEIGHTS", "weights", p.weights, product([inputs, outputs]),
        "[outputChannels, inputChannels] = [\(outputs), \(inputs)]")
      if p.hasBias { r.expectCount("INNER-PRODUCT-WEIGHTS", "bias", p.bias, outputs, "[outputChannels]") }
      // [rule INNER-PRODUCT-INT8]
      if p.int8DynamicQuantize && p.hasBias {
        r.add("INNER-PRODUCT-INT8", "int8DynamicQuantize requires hasBias == false")
      }
    case .embedding(let p):
      // [rule EMBEDDING-WEIGHTS]
      let (inputs, outputs) = (p.inputDim, p.outputChannels)
      r.expectCount(
        "EMBEDDING-WEIGHTS", "weights", p.weights, product([inputs, outputs]),
        "[outputChannels, inputDim] = [\(outputs), \(inputs)]")
      if p.hasBias { r.expectCount("EMBEDDING-WEIGHTS", "bias", p.bias, outputs, "[outputChannels]") }
    case .batchnorm(let p):
      // [rule BATCHNORM-PARAMS]: gamma and beta always; mean and variance unless computed from the input.
      var blobs = [("gamma", p.gamma), ("beta", p.beta)]
      if !p.computeMeanVar { blobs += [("mean", p.mean), ("variance", p.variance)] }
      for (name, values) in blobs { r.expectCount("BATCHNORM-PARAMS", name, values, p.channels, "[channels]") }
    case .pooling(let p):
      // [rule POOLING-SIZES]
      // Global pooling takes its window from the input and ignores kernelSize and stride (coremltools'
      // own reduce-mean pooling layers, which Core ML loads, fail the stride check otherwise).
      if !p.globalPooling {
        checkPair(p.kernelSize, "kernelSize", "POOLING-SIZES", &r)
        checkPair(p.stride, "stride", "POOLING-SIZES", &r)
      }
    case .padding(let p):
      // [rule BORDER-AMOUNTS]
      let amounts = p.paddingAmounts
      if amounts.count != 4 {
        r.add("BORDER-AMOUNTS", "paddingAmounts has \(amounts.count / 2) edge pairs (must be 2: [H, W])")
      }
    case .crop(let p):
      if layer.inputs.count == 1 {
        // [rule BORDER-AMOUNTS]
        let amounts = p.cropAmounts
        if amounts.count != 4 {
          r.add("BORDER-AMOUNTS", "cropAmounts has \(amounts.count / 2) edge pairs (must be 2: [H, W])")
        }
      } else if layer.inputs.count == 2 {
        // [rule CROP-OFFSET]
        if p.offset.count != 2 { r.add("CROP-OFFSET", "a two-input crop needs offset [H, W], got \(p.offset)") }
      } else {
        r.add("CROP-OFFSET", "crop takes 1 or 2 inputs, has \(layer.inputs.count)")
      }
    case .upsample(let p): checkUpsample(p, &r)
    case .lrn(let p):
      // [rule LRN-K]
      if p.k < 0 || !p.k.isFinite { r.add("LRN-K", "k = \(p.k) (must be strictly positive; 0 means 1)") }
    case .reorganizeData(let p):
      // [rule REORGANIZE-BLOCK]
      if p.blockSize <= 1 { r.add("REORGANIZE-BLOCK", "blockSize \(p.blockSize) (must be greater than 1)") }
    case .slice(let p):
      // [rule SLICE-STRIDE]
      if p.stride <= 0 { r.add("SLICE-STRIDE", "stride \(p.stride) (must be positive)") }
    case .reduce(let p):
      // [rule REDUCE-ARGMAX]: ARGMAX only along C, H or W.
      if p.mode == .known(.argMax), ![.known(.c), .known(.h), .known(.w)].contains(p.axis) {
        r.add("REDUCE-ARGMAX", "ARGMAX along axis enum \(p.axis.rawValue) (only C, H or W)")
      }
    case .permute(let p):
      // [rule PERMUTE-AXES]
      if !p.axis.isEmpty && p.axis.sorted() != [0, 1, 2, 3] {
        r.add("PERMUTE-AXES", "axis \(p.axis) is not a permutation of [0, 1, 2, 3]")
      }
    case .reshape(let p):
      // [rule RESHAPE-TARGET]
      let target = p.targetShape
      if target.count != 3 && target.count != 4 {
        r.add("RESHAPE-TARGET", "targetShape \(target) (must have 3 or 4 entries)")
      }
    case .loadConstant(let p):
      // [rule LOAD-CONSTANT-SHAPE]
      if p.shape.count != 3 { r.add("LOAD-CONSTANT-SHAPE", "shape \(p.shape) (must be [C, H, W])") }
      r.expectCount("LOAD-CONSTANT-SHAPE", "data", p.data, product(p.shape), "shape \(p.shape)")
    case .scale(let p):
      // [rule SCALE-BIAS-SHAPE]
      checkBroadcastShape(p.shapeScale, "shapeScale", p.scale, "scale", &r)
      if p.hasBias { checkBroadcastShape(p.shapeBias, "shapeBias", p.bias, "bias", &r) }
    case .split(let p):
      // [rule SPLIT-OUTPUTS]
      if p.nOutputs != layer.outputs.count {
        r.add("SPLIT-OUTPUTS", "nOutputs \(p.nOutputs) but \(layer.outputs.count) output blobs")
      }
    case .concat:
      // [rule CONCAT-INPUTS]
      if layer.inputs.count < 2 { r.add("CONCAT-INPUTS", "concat needs more than 1 input, has \(layer.inputs.count)") }
    case .transpose(let p):
      // [rule TRANSPOSE-AXES]
      if p.axes.sorted() != Array(0..<p.axes.count) {
        r.add("TRANSPOSE-AXES", "axes \(p.axes) is not a permutation of 0..<\(p.axes.count)")
      }
    case .sliceStatic(let p):
      // [rule SLICE-STATIC-LENGTHS]
      let lengths = [p.beginIds.count, p.beginMasks.count, p.endIds.count, p.endMasks.count, p.strides.count]
      if Set(lengths).count > 1 {
        r.add("SLICE-STATIC-LENGTHS", "beginIds/beginMasks/endIds/endMasks/strides lengths \(lengths) differ")
      }
      let squeeze = p.squeezeMasks.count
      if squeeze != 0 && squeeze != lengths[0] {
        r.add("SLICE-STATIC-LENGTHS", "squeezeMasks has \(squeeze) entries, the others \(lengths[0])")
      }
    case .constantPad(let p):
      // [rule CONSTANT-PAD-AMOUNTS]
      let amounts = p.padAmounts
      if amounts.count % 2 != 0 {
        r.add("CONSTANT-PAD-AMOUNTS", "padAmounts has \(amounts.count) entries (one (before, after) pair per axis)")
      }
      if p.padToGivenOutputSizeMode {
        for pair in stride(from: 0, to: amounts.count - 1, by: 2) where amounts[pair] != 0 && amounts[pair + 1] != 0 {
          r.add("CONSTANT-PAD-AMOUNTS", "padToGivenOutputSizeMode with both entries of pair \(pair / 2) non-zero")
        }
      }
    case .batchedMatmul(let p):
      // [rule BATCHED-MATMUL-WEIGHTS]
      if layer.inputs.count == 1 {
        let (rows, columns) = (p.weightMatrixFirstDimension, p.weightMatrixSecondDimension)
        r.expectCount(
          "BATCHED-MATMUL-WEIGHTS", "weights", p.weights, product([rows, columns]), "[X1, X2] = [\(rows), \(columns)]")
        if p.hasBias { r.expectCount("BATCHED-MATMUL-WEIGHTS", "bias", p.bias, columns, "[X2]") }
      } else if p.hasBias {
        r.add("BATCHED-MATMUL-WEIGHTS", "hasBias is supported only with one input")
      }
    case .layerNormalization(let p):
      // [rule LAYER-NORM-SHAPE]
      let count =
        p.normalizedShape.allSatisfy { $0 > 0 }
        ? p.normalizedShape.reduce(1) { $0.multipliedReportingOverflow(by: $1).partialValue } : 0
      if p.normalizedShape.isEmpty || count <= 0 { r.add("LAYER-NORM-SHAPE", "normalizedShape \(p.normalizedShape)") }
      if p.gamma?.count != count || p.beta?.count != count {
        r.add(
          "LAYER-NORM-SHAPE",
          "gamma and beta need \(count) values each (normalizedShape \(p.normalizedShape)), have \(p.gamma?.count ?? 0) and \(p.beta?.count ?? 0)"
        )
      }
    case .gelu(let p):
      // [rule GELU-MODE]
      if case .unknown(let mode) = p.mode {
        r.add("GELU-MODE", "mode \(mode) (EXACT, TANH_APPROXIMATION or SIGMOID_APPROXIMATION)")
      }
    case .simpleRecurrent, .gru, .uniDirectionalLSTM, .biDirectionalLSTM:
      checkRecurrent(layer, &r)
    case .activation, .l2normalize, .softmax, .unary, .elementwise, .dot, .flatten, .sequenceRepeat, .custom, .copy,
      .clip, .elementwiseMath, .clampedReLU,
      .comparison, .broadcastable, .tile, .softmaxND, .concatND, .loadConstantND, .squeeze, .expandDims, .flattenTo2D,
      .reshapeStatic,
      .reduceND, .notDecoded:
      break
    }
  }

  /// [rule SCALE-BIAS-SHAPE]: `[1]`, `[C]`, `[1, H, W]` or `[C, H, W]`, and as many values as the shape holds.
  static func checkBroadcastShape(
    _ shape: [Int], _ shapeKey: String, _ values: [Float]?, _ weight: String, _ r: inout Reporter
  ) {
    let valid = shape.count == 1 || (shape.count == 3 && (shape[0] >= 1))
    if !valid { r.add("SCALE-BIAS-SHAPE", "\(shapeKey) \(shape) (must be [1], [C], [1, H, W] or [C, H, W])") }
    r.expectCount("SCALE-BIAS-SHAPE", weight, values, product(shape), "\(shapeKey) \(shape)")
  }

  static func checkConvolution(_ p: ConvolutionParameters, _ r: inout Reporter) {
    let deconvolution = p.isDeconvolution
    let (outputs, kernelChannels) = (p.outputChannels, p.kernelChannels)
    // [rule CONV-GROUPS]: 0 means 1; input and kernels are split into nGroups groups.
    let groups = max(p.nGroups, 1)
    if outputs % groups != 0 { r.add("CONV-GROUPS", "outputChannels \(outputs) is not divisible by nGroups \(groups)") }
    // [rule CONV-KERNEL]
    for (values, key) in [(p.kernelSize, "kernelSize"), (p.stride, "stride"), (p.dilationFactor, "dilationFactor")] {
      checkPair(values, key, "CONV-KERNEL", &r)
    }
    let kernel = p.kernelSize.count == 2 ? p.kernelSize : [3, 3]
    // [rule CONV-WEIGHTS]
    let shape = deconvolution ? [kernelChannels, outputs / groups] + kernel : [outputs, kernelChannels] + kernel
    r.expectCount(
      "CONV-WEIGHTS", "weights", p.weights, product(shape),
      deconvolution ? "[kernelChannels, outputChannels / nGroups, kH, kW]" : "[outputChannels, kernelChannels, kH, kW]")
    if p.hasBias { r.expectCount("CONV-WEIGHTS", "bias", p.bias, outputs, "[outputChannels]") }
    if deconvolution {
      // [rule DECONV-DILATION]: ignored for deconvolution, so anything but 1 would be computed without it.
      let dilation = p.dilationFactor
      if dilation.contains(where: { $0 != 1 }) {
        r.add("DECONV-DILATION", "dilationFactor \(dilation) is ignored by a deconvolution")
      }
      // [rule DECONV-OUTPUT-SHAPE]
      let outputShape = p.outputShape
      if !outputShape.isEmpty && outputShape.count != 2 {
        r.add("DECONV-OUTPUT-SHAPE", "outputShape \(outputShape) (must be [H_out, W_out])")
      }
    }
    // [rule BORDER-AMOUNTS]: explicit valid padding has one (start, end) pair for H and one for W.
    if case .valid(let valid) = p.padding, !valid.isEmpty, valid.count != 4 {
      r.add("BORDER-AMOUNTS", "valid paddingAmounts has \(valid.count / 2) edge pairs (must be 2: [H, W])")
    }
  }

  static func checkUpsample(_ p: UpsampleParameters, _ r: inout Reporter) {
    // [rule UPSAMPLE-FACTORS]
    checkPair(p.scalingFactor, "scalingFactor", "UPSAMPLE-FACTORS", &r)
    let fractional = p.fractionalScalingFactor.count
    if fractional > 0 && !p.scalingFactor.isEmpty {
      r.add("UPSAMPLE-FACTORS", "scalingFactor and fractionalScalingFactor are mutually exclusive")
    }
    if fractional != 0 && fractional != 2 {
      r.add("UPSAMPLE-FACTORS", "fractionalScalingFactor has \(fractional) entries (must be [H, W])")
    }
    // [rule UPSAMPLE-LINEAR-MODE]: linearUpsampleMode only applies to BILINEAR.
    if p.linearUpsampleMode != .known(.standard) && p.mode != .known(.bilinear) {
      r.add(
        "UPSAMPLE-LINEAR-MODE",
        "linearUpsampleMode \(p.linearUpsampleMode.rawValue) is only valid with BILINEAR interpolation")
    }
  }
}
