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
      checkRecurrent(layer, &report)
      found += report.found
    }
    found += modelViolations(spec)
    found += programViolations(spec)
    return found
  }

  /// Collects one layer's violations.
  struct Reporter {
    let layer: CoreMLModelSpec.Layer
    var found: [SpecificationViolation] = []

    mutating func add(_ rule: String, _ detail: String) {
      found.append(SpecificationViolation(layer: layer.name, layerType: layer.kind, rule: rule, detail: detail))
    }

    func int(_ key: String) -> Int? { layer.integers[key]?.first }
    func ints(_ key: String) -> [Int] { layer.integers[key] ?? [] }
    func flag(_ key: String) -> Bool { (layer.integers[key]?.first ?? 0) != 0 }

    /// Checks a weight blob's length against the size the layer's fields declare (only when the blob is present).
    mutating func expectCount(_ rule: String, _ weight: String, _ expected: Int?, _ what: String) {
      guard let values = layer.weights[weight], let expected else { return }
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
  static func checkPair(_ key: String, _ rule: String, _ r: inout Reporter, positive: Bool = true) {
    let values = r.ints(key)
    if !values.isEmpty && values.count != 2 { r.add(rule, "\(key) has \(values.count) entries (must be empty or [H, W])") }
    if positive, values.contains(where: { $0 <= 0 }) { r.add(rule, "\(key) \(values) has a zero entry") }
  }

  // MARK: Classic layers

  static func checkLayer(_ layer: CoreMLModelSpec.Layer, _ r: inout Reporter) {
    switch layer.kind {
    case "convolution": checkConvolution(&r)
    case "innerProduct":
      // [rule INNER-PRODUCT-WEIGHTS]
      guard let inputs = r.int("inputChannels"), let outputs = r.int("outputChannels") else { return }
      r.expectCount("INNER-PRODUCT-WEIGHTS", "weights", product([inputs, outputs]), "[outputChannels, inputChannels] = [\(outputs), \(inputs)]")
      if r.flag("hasBias") { r.expectCount("INNER-PRODUCT-WEIGHTS", "bias", outputs, "[outputChannels]") }
      // [rule INNER-PRODUCT-INT8]
      if r.flag("int8DynamicQuantize") && r.flag("hasBias") { r.add("INNER-PRODUCT-INT8", "int8DynamicQuantize requires hasBias == false") }
    case "embedding":
      // [rule EMBEDDING-WEIGHTS]
      guard let inputs = r.int("inputDim"), let outputs = r.int("outputChannels") else { return }
      r.expectCount("EMBEDDING-WEIGHTS", "weights", product([inputs, outputs]), "[outputChannels, inputDim] = [\(outputs), \(inputs)]")
      if r.flag("hasBias") { r.expectCount("EMBEDDING-WEIGHTS", "bias", outputs, "[outputChannels]") }
    case "batchnorm":
      // [rule BATCHNORM-PARAMS]: gamma and beta always; mean and variance unless computed from the input.
      let channels = r.int("channels")
      var names = ["gamma", "beta"]
      if !r.flag("computeMeanVar") { names += ["mean", "variance"] }
      for name in names { r.expectCount("BATCHNORM-PARAMS", name, channels, "[channels]") }
    case "pooling":
      // [rule POOLING-SIZES]
      // Global pooling takes its window from the input and ignores kernelSize and stride (coremltools'
      // own reduce-mean pooling layers, which Core ML loads, fail the stride check otherwise).
      if !r.flag("globalPooling") {
        checkPair("kernelSize", "POOLING-SIZES", &r)
        checkPair("stride", "POOLING-SIZES", &r)
      }
    case "padding":
      // [rule BORDER-AMOUNTS]
      let amounts = r.ints("paddingAmounts")
      if amounts.count != 4 { r.add("BORDER-AMOUNTS", "paddingAmounts has \(amounts.count / 2) edge pairs (must be 2: [H, W])") }
    case "crop":
      if layer.inputs.count == 1 {
        // [rule BORDER-AMOUNTS]
        let amounts = r.ints("cropAmounts")
        if amounts.count != 4 { r.add("BORDER-AMOUNTS", "cropAmounts has \(amounts.count / 2) edge pairs (must be 2: [H, W])") }
      } else if layer.inputs.count == 2 {
        // [rule CROP-OFFSET]
        if r.ints("offset").count != 2 { r.add("CROP-OFFSET", "a two-input crop needs offset [H, W], got \(r.ints("offset"))") }
      } else {
        r.add("CROP-OFFSET", "crop takes 1 or 2 inputs, has \(layer.inputs.count)")
      }
    case "upsample": checkUpsample(&r)
    case "lrn":
      // [rule LRN-K]
      if let k = layer.floats["k"], k < 0 || !k.isFinite { r.add("LRN-K", "k = \(k) (must be strictly positive; 0 means 1)") }
    case "reorganizeData":
      // [rule REORGANIZE-BLOCK]
      if let block = r.int("blockSize"), block <= 1 { r.add("REORGANIZE-BLOCK", "blockSize \(block) (must be greater than 1)") }
    case "slice":
      // [rule SLICE-STRIDE]
      if let stride = r.int("stride"), stride <= 0 { r.add("SLICE-STRIDE", "stride \(stride) (must be positive)") }
    case "reduce":
      // [rule REDUCE-ARGMAX]: ARGMAX (9) only along C (2), H (3) or W (4).
      if r.int("mode") == 9, let axis = r.int("axis"), ![2, 3, 4].contains(axis) {
        r.add("REDUCE-ARGMAX", "ARGMAX along axis enum \(axis) (only C, H or W)")
      }
    case "permute":
      // [rule PERMUTE-AXES]
      let axes = r.ints("axis")
      if !axes.isEmpty && axes.sorted() != [0, 1, 2, 3] { r.add("PERMUTE-AXES", "axis \(axes) is not a permutation of [0, 1, 2, 3]") }
    case "reshape":
      // [rule RESHAPE-TARGET]
      let target = r.ints("targetShape")
      if target.count != 3 && target.count != 4 { r.add("RESHAPE-TARGET", "targetShape \(target) (must have 3 or 4 entries)") }
    case "loadConstant":
      // [rule LOAD-CONSTANT-SHAPE]
      let shape = r.ints("shape")
      if shape.count != 3 { r.add("LOAD-CONSTANT-SHAPE", "shape \(shape) (must be [C, H, W])") }
      r.expectCount("LOAD-CONSTANT-SHAPE", "data", product(shape), "shape \(shape)")
    case "scale":
      // [rule SCALE-BIAS-SHAPE]
      checkBroadcastShape("shapeScale", "scale", &r)
      if r.flag("hasBias") { checkBroadcastShape("shapeBias", "bias", &r) }
    case "split":
      // [rule SPLIT-OUTPUTS]
      if let n = r.int("nOutputs"), n != layer.outputs.count { r.add("SPLIT-OUTPUTS", "nOutputs \(n) but \(layer.outputs.count) output blobs") }
    case "concat":
      // [rule CONCAT-INPUTS]
      if layer.inputs.count < 2 { r.add("CONCAT-INPUTS", "concat needs more than 1 input, has \(layer.inputs.count)") }
    case "transpose":
      // [rule TRANSPOSE-AXES]
      let axes = r.ints("axes")
      if axes.sorted() != Array(0..<axes.count) { r.add("TRANSPOSE-AXES", "axes \(axes) is not a permutation of 0..<\(axes.count)") }
    case "sliceStatic":
      // [rule SLICE-STATIC-LENGTHS]
      let lengths = ["beginIds", "beginMasks", "endIds", "endMasks", "strides"].map { r.ints($0).count }
      if Set(lengths).count > 1 { r.add("SLICE-STATIC-LENGTHS", "beginIds/beginMasks/endIds/endMasks/strides lengths \(lengths) differ") }
      let squeeze = r.ints("squeezeMasks").count
      if squeeze != 0 && squeeze != lengths[0] { r.add("SLICE-STATIC-LENGTHS", "squeezeMasks has \(squeeze) entries, the others \(lengths[0])") }
    case "constantPad":
      // [rule CONSTANT-PAD-AMOUNTS]
      let amounts = r.ints("padAmounts")
      if amounts.count % 2 != 0 { r.add("CONSTANT-PAD-AMOUNTS", "padAmounts has \(amounts.count) entries (one (before, after) pair per axis)") }
      if r.flag("padToGivenOutputSizeMode") {
        for pair in stride(from: 0, to: amounts.count - 1, by: 2) where amounts[pair] != 0 && amounts[pair + 1] != 0 {
          r.add("CONSTANT-PAD-AMOUNTS", "padToGivenOutputSizeMode with both entries of pair \(pair / 2) non-zero")
        }
      }
    case "batchedMatmul":
      // [rule BATCHED-MATMUL-WEIGHTS]
      if layer.inputs.count == 1 {
        let (rows, columns) = (r.int("weightMatrixFirstDimension") ?? 0, r.int("weightMatrixSecondDimension") ?? 0)
        r.expectCount("BATCHED-MATMUL-WEIGHTS", "weights", product([rows, columns]), "[X1, X2] = [\(rows), \(columns)]")
        if r.flag("hasBias") { r.expectCount("BATCHED-MATMUL-WEIGHTS", "bias", columns, "[X2]") }
      } else if r.flag("hasBias") {
        r.add("BATCHED-MATMUL-WEIGHTS", "hasBias is supported only with one input")
      }
    case "gelu":
      // [rule GELU-MODE]
      if let mode = r.int("mode"), !(0...2).contains(mode) { r.add("GELU-MODE", "mode \(mode) (EXACT, TANH_APPROXIMATION or SIGMOID_APPROXIMATION)") }
    default: break
    }
  }

  /// [rule SCALE-BIAS-SHAPE]: `[1]`, `[C]`, `[1, H, W]` or `[C, H, W]`, and as many values as the shape holds.
  static func checkBroadcastShape(_ shapeKey: String, _ weight: String, _ r: inout Reporter) {
    let shape = r.ints(shapeKey)
    let valid = shape.count == 1 || (shape.count == 3 && (shape[0] >= 1))
    if !valid { r.add("SCALE-BIAS-SHAPE", "\(shapeKey) \(shape) (must be [1], [C], [1, H, W] or [C, H, W])") }
    r.expectCount("SCALE-BIAS-SHAPE", weight, product(shape), "\(shapeKey) \(shape)")
  }

  static func checkConvolution(_ r: inout Reporter) {
    let deconvolution = r.flag("isDeconvolution")
    let outputs = r.int("outputChannels") ?? 0, kernelChannels = r.int("kernelChannels") ?? 0
    // [rule CONV-GROUPS]: 0 means 1; input and kernels are split into nGroups groups.
    let groups = max(r.int("nGroups") ?? 0, 1)
    if outputs % groups != 0 { r.add("CONV-GROUPS", "outputChannels \(outputs) is not divisible by nGroups \(groups)") }
    // [rule CONV-KERNEL]
    for key in ["kernelSize", "stride", "dilationFactor"] { checkPair(key, "CONV-KERNEL", &r) }
    let kernel = r.ints("kernelSize").count == 2 ? r.ints("kernelSize") : [3, 3]
    // [rule CONV-WEIGHTS]
    let shape = deconvolution ? [kernelChannels, outputs / groups] + kernel : [outputs, kernelChannels] + kernel
    r.expectCount("CONV-WEIGHTS", "weights", product(shape), deconvolution ? "[kernelChannels, outputChannels / nGroups, kH, kW]" : "[outputChannels, kernelChannels, kH, kW]")
    if r.flag("hasBias") { r.expectCount("CONV-WEIGHTS", "bias", outputs, "[outputChannels]") }
    if deconvolution {
      // [rule DECONV-DILATION]: ignored for deconvolution, so anything but 1 would be computed without it.
      let dilation = r.ints("dilationFactor")
      if dilation.contains(where: { $0 != 1 }) { r.add("DECONV-DILATION", "dilationFactor \(dilation) is ignored by a deconvolution") }
      // [rule DECONV-OUTPUT-SHAPE]
      let outputShape = r.ints("outputShape")
      if !outputShape.isEmpty && outputShape.count != 2 { r.add("DECONV-OUTPUT-SHAPE", "outputShape \(outputShape) (must be [H_out, W_out])") }
    }
    // [rule BORDER-AMOUNTS]: explicit valid padding has one (start, end) pair for H and one for W.
    if let valid = r.layer.integers["validPadding"], !valid.isEmpty, valid.count != 4 {
      r.add("BORDER-AMOUNTS", "valid paddingAmounts has \(valid.count / 2) edge pairs (must be 2: [H, W])")
    }
  }

  static func checkUpsample(_ r: inout Reporter) {
    // [rule UPSAMPLE-FACTORS]
    checkPair("scalingFactor", "UPSAMPLE-FACTORS", &r)
    let fractional = r.int("fractionalScalingFactorCount") ?? 0
    if fractional > 0 && !r.ints("scalingFactor").isEmpty {
      r.add("UPSAMPLE-FACTORS", "scalingFactor and fractionalScalingFactor are mutually exclusive")
    }
    if fractional != 0 && fractional != 2 { r.add("UPSAMPLE-FACTORS", "fractionalScalingFactor has \(fractional) entries (must be [H, W])") }
    // [rule UPSAMPLE-LINEAR-MODE]: linearUpsampleMode only applies to BILINEAR (1).
    if (r.int("linearUpsampleMode") ?? 0) != 0 && r.int("mode") != 1 {
      r.add("UPSAMPLE-LINEAR-MODE", "linearUpsampleMode \(r.int("linearUpsampleMode") ?? 0) is only valid with BILINEAR interpolation")
    }
  }
}
