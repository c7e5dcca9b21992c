import CoreMLCommon
import ModelIR

extension CoreMLGraphImporter {
  /// Adds the IR nodes of one Core ML layer and returns the values of its output blobs.
  mutating func importLayer(_ layer: CoreMLModelSpec.Layer) throws -> [ValueID] {
    let ints = layer.integers
    func int(_ key: String, _ fallback: Int = 0) -> Int { ints[key]?.first ?? fallback }
    func float(_ key: String) -> Float { layer.floats[key] ?? 0 }
    if layer.kind == "loadConstant" || layer.kind == "loadConstantND" {
      var constantShape = try sizes(ints["shape"] ?? [], "shape")
      _ = try elementCount(constantShape, "shape")
      if layer.kind == "loadConstant" && !spec.exactArrayMapping { constantShape = [1] + Array(([1, 1, 1] + constantShape).suffix(3)) }
      let values = try weights(layer, "data", count: constantShape.reduce(1, *))
      return [try add(.constant(Constant(shape: constantShape, values: values)), [])]
    }
    let x = try input(layer)
    let rank = shape(x).count

    switch layer.kind {
    case "convolution": return [try convolution(layer, x)]
    case "pooling": return [try pooling(layer, x)]

    case "innerProduct":
      let channels = try sizes([int("inputChannels"), int("outputChannels")], "channels")
      let (inputs, outputs) = (channels[0], channels[1])
      let stored = try weights(layer, "weights", count: inputs * outputs)
      let bias = int("hasBias") == 1 ? Constant(shape: [outputs], values: try weights(layer, "bias", count: outputs)) : nil
      // Core ML stores [out, in]; the IR's dense kernel is [in, out].
      let dense = Dense(kernel: Constant(shape: [inputs, outputs], values: Matrix.transposed(stored, rows: outputs, columns: inputs)), bias: bias)
      let s = shape(x)
      if !spec.exactArrayMapping || (s.count >= 3 && s.suffix(2) == [1, 1]) {
        // (…, C, H, W): the C*H*W values, in that order, are the input vector.
        let leading = Array(s.dropLast(3))
        let flat = try reshape(x, to: leading + [s.suffix(3).reduce(1, *)])
        return [try reshape(try add(.dense(dense), [flat]), to: leading + [outputs, 1, 1])]
      }
      return [try add(.dense(dense), [x])]

    case "batchedMatmul":
      guard layer.inputs.count == 1 else { throw unsupported("a product of two inputs is not supported") }
      guard int("transposeA") == 0, int("int8DynamicQuantize") == 0 else { throw unsupported("transposeA or int8DynamicQuantize") }
      let dimensions = try sizes([int("weightMatrixFirstDimension"), int("weightMatrixSecondDimension")], "weight matrix dimensions")
      let (rows, columns) = (dimensions[0], dimensions[1])
      // Stored as the transpose of the [rows, columns] matrix (coremltools writes W.T flattened).
      let stored = try weights(layer, "weights", count: rows * columns)
      let bias = int("hasBias") == 1 ? Constant(shape: [columns], values: try weights(layer, "bias", count: columns)) : nil
      let kernel = Constant(shape: [rows, columns], values: Matrix.transposed(stored, rows: columns, columns: rows))
      return [try add(.dense(Dense(kernel: kernel, bias: bias)), [x])]

    case "batchnorm":
      guard int("computeMeanVar") == 0, int("instanceNormalization") == 0 else { throw unsupported("computeMeanVar / instance normalization") }
      let c = try sizes([int("channels")], "channels")[0]
      let norm = BatchNormalization(
        gamma: Constant(shape: [c], values: try weights(layer, "gamma", count: c)), beta: Constant(shape: [c], values: try weights(layer, "beta", count: c)),
        mean: Constant(shape: [c], values: try weights(layer, "mean", count: c)),
        variance: Constant(shape: [c], values: try weights(layer, "variance", count: c)),
        // Core ML reads an epsilon of 0 as 1e-5.
        epsilon: float("epsilon") == 0 ? 1e-5 : float("epsilon"))
      return [try spatial(.batchNormalization(norm), x)]

    case let kind where kind.hasPrefix("activation."): return [try activation(layer, x)]

    case "unary":
      let kinds: [UnaryFunction.Kind] = [.sqrt, .rsqrt, .inverse, .power, .exp, .log, .abs, .threshold]
      guard kinds.indices.contains(int("type")) else { throw unsupported("unary type \(int("type"))") }
      // Apple's defaults: an epsilon of 0 means 1e-6, a scale of 0 means 1 ([rule UNARY-DEFAULTS] in Schemas/NeuralNetwork.proto).
      let epsilon = float("epsilon") == 0 ? 1e-6 : float("epsilon")
      let scale = float("scale") == 0 ? 1 : float("scale")
      let function = UnaryFunction(kind: kinds[int("type")], alpha: float("alpha"), epsilon: epsilon, scale: scale, shift: float("shift"))
      return [try layoutPreserving(.activation(.unary(function)), [x])]

    case "gelu":
      guard int("mode") < 2 else { throw unsupported("the sigmoid approximation of GELU") }
      return [try layoutPreserving(.activation(.gelu(approximate: int("mode") == 1)), [x])]
    case "clip": return [try layoutPreserving(.activation(.clip(min: float("minVal"), max: float("maxVal"))), [x])]
    case "clampedReLU":
      return [try layoutPreserving(.activation(.clippedReLU(maxValue: float("beta"), negativeSlope: float("alpha"), threshold: 0)), [x])]

    case "softmax": return [try add(.softmax(axis: rank - 3 >= 0 ? rank - 3 : 0), [x])]
    case "softmaxND": return [try add(.softmax(axis: try axis(int("axis"), rank: rank)), [x])]

    case "add", "multiply", "average", "max", "min":
      let kinds: [String: ElementwiseKind] = ["add": .add, "multiply": .multiply, "average": .average, "max": .maximum, "min": .minimum]
      var operands = try layer.inputs.indices.map { try input(layer, $0) }
      if operands.count == 1 {
        guard layer.kind == "add" || layer.kind == "multiply" else { return [x] }
        operands.append(try add(.constant(Constant(shape: [1], values: [float("alpha")])), [], suffix: "__alpha"))
      }
      return [try layoutPreserving(.elementwise(kinds[layer.kind]!), operands)]

    case "addBroadcastable", "subtractBroadcastable", "multiplyBroadcastable", "divideBroadcastable", "maxBroadcastable",
      "minBroadcastable", "powBroadcastable", "whereBroadcastable":
      let kinds: [String: ElementwiseKind] = [
        "addBroadcastable": .add, "subtractBroadcastable": .subtract, "multiplyBroadcastable": .multiply,
        "divideBroadcastable": .divide, "maxBroadcastable": .maximum, "minBroadcastable": .minimum, "powBroadcastable": .power,
        "whereBroadcastable": .select,
      ]
      let operands = try layer.inputs.indices.map { try input(layer, $0) }
      return [try add(.elementwise(kinds[layer.kind]!), operands)]

    case "greaterThan", "greaterEqual", "lessThan", "lessEqual", "equal", "notEqual":
      let kinds: [String: ElementwiseKind] = [
        "greaterThan": .greaterThan, "greaterEqual": .greaterEqual, "lessThan": .lessThan, "lessEqual": .lessEqual,
        "equal": .equal, "notEqual": .notEqual,
      ]
      var operands = try layer.inputs.indices.map { try input(layer, $0) }
      if operands.count == 1 { operands.append(try add(.constant(Constant(shape: [1], values: [float("alpha")])), [], suffix: "__alpha")) }
      return [try add(.elementwise(kinds[layer.kind]!), operands)]

    case "reduceMean", "reduceMax", "reduceMin", "reduceSum":
      let kinds: [String: ReductionKind] = ["reduceMean": .mean, "reduceMax": .max, "reduceMin": .min, "reduceSum": .sum]
      let axes = int("reduceAll") == 1 ? Array(0..<rank) : try Set((ints["axes"] ?? []).map { try axis($0, rank: rank) }).sorted()
      return [try add(.reduce(Reduction(kind: kinds[layer.kind]!, axes: axes, keepDims: int("keepDims") == 1)), [x])]

    case "flatten":
      guard rank >= 3 else { return [x] }
      let s = shape(x)
      let leading = Array(s.dropLast(3))
      let count = s.suffix(3).reduce(1, *)
      if int("mode") == 1 {
        // CHANNEL_LAST: elements in H, W, C order.
        let (hwc, _) = try channelsLast(x)
        return [try reshape(try add(.flatten, [hwc]), to: leading + [count, 1, 1])]
      }
      return [try reshape(x, to: leading + [count, 1, 1])]

    case "reshape":
      var target = try sizes(ints["targetShape"] ?? [], "targetShape")
      if target.count == 3 { target = [1] + target }
      guard target.count == 4, rank >= 3 else { throw unsupported("target shape \(ints["targetShape"] ?? []) on \(shape(x))") }
      if int("mode") == 0 || target[0] != 1 || shape(x).first != 1 { return [try reshape(x, to: Array(shape(x).dropLast(4)) + target)] }
      target.removeFirst()
      let leading = Array(shape(x).dropLast(3))
      if int("mode") == 1 {
        // CHANNEL_LAST: reshape the H, W, C element order, then back to channels first.
        let (hwc, _) = try channelsLast(x)
        let reshaped = try add(.reshape(targetShape: [target[1], target[2], target[0]]), [hwc])
        return [try channelsFirst(reshaped, leading: leading)]
      }
      return [try reshape(x, to: leading + target)]

    case "permute":
      // Axes of [Seq, C, H, W]: under the classic mapping the blob has exactly these.
      let axes = ints["axis"] ?? []
      guard axes.count == 4, rank == 4 else { throw unsupported("permutation \(axes) of a rank-\(rank) blob") }
      return [try add(.permute(order: axes), [x])]

    case "concat":
      let operands = try layer.inputs.indices.map { try input(layer, $0) }
      if int("sequenceConcat") == 1 {
        guard rank == 4, !spec.exactArrayMapping else { throw unsupported("sequence concatenation of rank-\(rank) blobs") }
        return [try add(.concatenate(axis: 0), operands)]
      }
      if !spec.exactArrayMapping, operands.allSatisfy({ shape($0).count == 4 && shape($0)[0] == 1 }) {
        // Classic [1, C, H, W] blobs: vectors join as [C], images along the channels of [H, W, C].
        if operands.allSatisfy({ shape($0)[2] == 1 && shape($0)[3] == 1 }) {
          let joined = try add(.concatenate(axis: 0), try operands.map { try reshape($0, to: [shape($0)[1]]) })
          return [try reshape(joined, to: [1, shape(joined)[0], 1, 1])]
        }
        let images = try operands.map { try channelsLast($0).value }
        return [try channelsFirst(try add(.concatenate(axis: 2), images), leading: [1])]
      }
      return [try add(.concatenate(axis: max(rank - 3, 0)), operands)]

    case "split":
      // Equal parts along C (the classic channel axis).
      let parts = try sizes([int("nOutputs")], "nOutputs")[0]
      let s = shape(x)
      let axis = max(rank - 3, 0)
      guard s[axis] % parts == 0 else { throw unsupported("\(s[axis]) channels in \(parts) parts") }
      let size = s[axis] / parts
      return try (0..<parts).map { part in
        var begin = [Int](repeating: 0, count: rank), end = s
        begin[axis] = part * size
        end[axis] = (part + 1) * size
        return try add(.slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: rank))), [x], suffix: "__part\(part)")
      }

    case "sequenceRepeat":
      guard rank == 4, !spec.exactArrayMapping else { throw unsupported("sequence repeat of a rank-\(rank) blob") }
      let count = try sizes([int("nRepetitions", 1)], "nRepetitions")[0]
      return [count == 1 ? x : try add(.concatenate(axis: 0), [ValueID](repeating: x, count: count))]

    case "embedding", "simpleRecurrent", "gru", "uniDirectionalLSTM", "biDirectionalLSTM":
      return try sequenceLayer(layer, x)
    case "concatND":
      guard int("interleave") == 0 else { throw unsupported("interleaved concatenation") }
      let operands = try layer.inputs.indices.map { try input(layer, $0) }
      return [try add(.concatenate(axis: try axis(int("axis"), rank: rank)), operands)]

    case "padding":
      guard layer.floats["value"] != nil else { throw unsupported("reflection or replication padding") }
      let amounts = try sizes(ints["paddingAmounts"] ?? [], "paddingAmounts", allowZero: true)
      let (top, bottom, left, right) = amounts.count == 4 ? (amounts[0], amounts[1], amounts[2], amounts[3]) : (0, 0, 0, 0)
      if float("value") == 0, rank >= 3 { return [try spatial(.zeroPadding2D(Box2D(top: top, bottom: bottom, left: left, right: right)), x)] }
      let before = [Int](repeating: 0, count: rank - 2) + [top, left], after = [Int](repeating: 0, count: rank - 2) + [bottom, right]
      return [try add(.constantPad(ConstantPadding(before: before, after: after, value: float("value"))), [x])]
    case "constantPad":
      guard int("padToGivenOutputSizeMode") == 0 else { throw unsupported("padToGivenOutputSizeMode") }
      let amounts = try sizes(ints["padAmounts"] ?? [], "padAmounts", allowZero: true)
      guard amounts.count % 2 == 0, amounts.count / 2 <= rank else { throw unsupported("padAmounts \(amounts) on rank \(rank)") }
      let padded = amounts.count / 2
      let before = [Int](repeating: 0, count: rank - padded) + stride(from: 0, to: amounts.count, by: 2).map { amounts[$0] }
      let after = [Int](repeating: 0, count: rank - padded) + stride(from: 1, to: amounts.count, by: 2).map { amounts[$0] }
      return [try add(.constantPad(ConstantPadding(before: before, after: after, value: float("value"))), [x])]

    case "crop":
      guard layer.inputs.count == 1 else { throw unsupported("cropping to a second input's size") }
      let amounts = try sizes(ints["cropAmounts"] ?? [], "cropAmounts", allowZero: true)
      guard amounts.count == 4, rank >= 2 else { throw unsupported("cropAmounts \(amounts)") }
      let s = shape(x)
      var begin = [Int](repeating: 0, count: rank), end = s
      begin[rank - 2] = amounts[0]
      end[rank - 2] = s[rank - 2] - amounts[1]
      begin[rank - 1] = amounts[2]
      end[rank - 1] = s[rank - 1] - amounts[3]
      return [try add(.slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: rank))), [x])]

    case "sliceStatic": return [try sliceStatic(layer, x)]

    case "upsample":
      guard (ints["scalingFactor"] ?? []).count == 2 else { throw unsupported("fractional scaling factors") }
      let factors = try sizes(ints["scalingFactor"] ?? [], "scalingFactor", count: 2)
      let bilinear = int("mode") == 1
      // Only ALIGN_CORNERS_FALSE (half-pixel centres) matches the IR's bilinear resize.
      guard !bilinear || int("linearUpsampleMode") == 2 else { throw unsupported("bilinear mode \(int("linearUpsampleMode")) (only ALIGN_CORNERS_FALSE)") }
      return [try spatial(.upsampling2D(height: factors[0], width: factors[1], bilinear: bilinear), x)]

    case "transpose": return [try add(.permute(order: ints["axes"] ?? []), [x])]

    case "reshapeStatic":
      var target = ints["targetShape"] ?? []
      guard target.allSatisfy({ $0 == -1 || ($0 > 0 && $0 <= 1 << 24) }), target.filter({ $0 == -1 }).count <= 1 else {
        throw unsupported("target shape \(target)")
      }
      let total = shape(x).reduce(1, *)
      if let unknown = target.firstIndex(of: -1) {
        let known = target.enumerated().filter { $0.offset != unknown }.reduce(1) { $0 * $1.element }
        guard known > 0 else { throw unsupported("target shape \(target)") }
        target[unknown] = total / known
      }
      return [try reshape(x, to: target)]

    case "flattenTo2D":
      let s = shape(x)
      let split = try int("axis") == rank ? rank : axis(int("axis"), rank: rank)
      return [try reshape(x, to: [s.prefix(split).reduce(1, *), s.suffix(from: split).reduce(1, *)])]

    case "squeeze":
      let s = shape(x)
      let axes = int("squeezeAll") == 1 ? s.indices.filter { s[$0] == 1 } : try (ints["axes"] ?? []).map { try axis($0, rank: rank) }
      var target = s.enumerated().filter { !axes.contains($0.offset) }.map(\.element)
      if target.isEmpty { target = [1] }
      return [try reshape(x, to: target)]

    case "expandDims":
      let outputRank = rank + (ints["axes"] ?? []).count
      let axes = try (ints["axes"] ?? []).map { try axis($0, rank: outputRank) }
      var target: [Int] = []
      var remaining = shape(x)[...]
      for position in 0..<outputRank { target.append(axes.contains(position) ? 1 : remaining.popFirst() ?? 1) }
      return [try reshape(x, to: target)]

    case "tile":
      let reps = try sizes(ints["reps"] ?? [], "reps", count: rank)
      var value = x
      // Repeating along an axis is concatenating copies along it.
      for (axis, count) in reps.enumerated() where count > 1 {
        value = try add(.concatenate(axis: axis), [ValueID](repeating: value, count: count), suffix: "__tile\(axis)")
      }
      return [value]

    case "slice":
      // Classic slice of C, H or W; a negative end counts from the end (-1 keeps the last element).
      guard rank >= 3, (0...2).contains(int("axis")) else { throw unsupported("slice axis \(int("axis")) on rank \(rank)") }
      let axis = rank - 3 + int("axis"), length = shape(x)[axis]
      let start = int("startIndex"), end = int("endIndex") < 0 ? length + int("endIndex") + 1 : int("endIndex")
      let step = max(int("stride", 1), 1)
      guard start >= 0, start < end, end <= length else { throw unsupported("slice \(int("startIndex"))..<\(int("endIndex")) of \(length)") }
      var begin = [Int](repeating: 0, count: rank), stop = shape(x), strides = [Int](repeating: 1, count: rank)
      (begin[axis], stop[axis], strides[axis]) = (start, end, step)
      return [try add(.slice(StridedSlice(begin: begin, end: stop, strides: strides)), [x])]

    case "reduce":
      // Classic reduce: over C, H, W, or both H and W, keeping the reduced axes.
      // SUMSQUARE (4) is a sum of the squared input.
      let kinds: [Int: ReductionKind] = [0: .sum, 1: .mean, 4: .sum, 7: .max, 8: .min]
      guard let kind = kinds[int("mode")], rank >= 3 else { throw unsupported("reduce mode \(int("mode")) on rank \(rank)") }
      let axes = [[rank - 3, rank - 2, rank - 1], [rank - 2, rank - 1], [rank - 3], [rank - 2], [rank - 1]]
      guard axes.indices.contains(int("axis")) else { throw unsupported("reduce axis \(int("axis"))") }
      let source = int("mode") == 4 ? try add(.elementwise(.multiply), [x, x], suffix: "__squared") : x
      return [try add(.reduce(Reduction(kind: kind, axes: axes[int("axis")], keepDims: true)), [source])]

    case "scale":
      // Per-channel (or scalar, or [C, H, W]) scale and bias, broadcast over the blob.
      func constant(_ field: String, _ shapeKey: String, _ suffix: String) throws -> ValueID {
        let declared = try sizes(ints[shapeKey] ?? [1], shapeKey)
        let values = try weights(layer, field, count: try elementCount(declared, shapeKey))
        let aligned = declared.count == 1 && declared[0] > 1 ? [declared[0], 1, 1] : declared
        return try add(.constant(Constant(shape: aligned, values: values)), [], suffix: suffix)
      }
      var result = try add(.elementwise(.multiply), [x, try constant("scale", "shapeScale", "__scale")], suffix: "__scaled")
      if int("hasBias") == 1 { result = try add(.elementwise(.add), [result, try constant("bias", "shapeBias", "__bias")]) }
      return [result]

    case "l2normalize":
      // Over C, H and W of each sequence step; the IR op normalizes the last axis.
      let s = shape(x)
      guard !spec.exactArrayMapping, rank == 4, s[2] == 1, s[3] == 1 else { throw unsupported("l2normalize of \(s) (classic [Seq, C, 1, 1] blobs only)") }
      // Core ML reads an epsilon of 0 as 1e-6.
      let epsilon = float("epsilon") == 0 ? 1e-6 : float("epsilon")
      let normalized = try add(.l2Normalize(epsilon: epsilon), [try reshape(x, to: [s[0], s[1]])])
      return [try reshape(normalized, to: s)]

    case "dot":
      let operands = try layer.inputs.indices.map { try input(layer, $0) }
      guard operands.count == 2, !spec.exactArrayMapping else { throw unsupported("dot of \(operands.count) inputs") }
      let vectors = try operands.map { try reshape($0, to: [shape($0).reduce(1, *)]) }
      let product = try add(.dot(cosine: int("cosineSimilarity") == 1), vectors)
      return [try reshape(product, to: [1, 1, 1, 1])]

    case "custom":
      // The app implements it; the graph keeps a placeholder the runtime reports as not runnable.
      let custom = CustomLayer(className: layer.texts["className"] ?? "?", outputShape: shape(x))
      return [try add(.custom(custom), try layer.inputs.indices.map { try input(layer, $0) })]

    case "copy": return [x]

    default:
      throw unsupported("this layer type is not supported by the reader")
    }
  }

  mutating func convolution(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> ValueID {
    let ints = layer.integers
    if ints["isDeconvolution"]?.first == 1 { return try deconvolution(layer, x) }
    let kernelSize = try sizes((ints["kernelSize"] ?? []).isEmpty ? [3, 3] : ints["kernelSize"]!, "kernelSize", count: 2)
    let strides = try sizes((ints["stride"] ?? []).isEmpty ? [1, 1] : ints["stride"]!, "stride", count: 2)
    let dilations = try sizes((ints["dilationFactor"] ?? []).isEmpty ? [1, 1] : ints["dilationFactor"]!, "dilationFactor", count: 2)
    let channels = try sizes([ints["outputChannels"]?.first ?? 0, ints["kernelChannels"]?.first ?? 0], "channels")
    let (outputs, perGroup) = (channels[0], channels[1])
    let groups = try sizes([max(ints["nGroups"]?.first ?? 1, 1)], "nGroups")[0]
    let (kh, kw) = (kernelSize[0], kernelSize[1])
    let stored = try weights(layer, "weights", count: outputs * perGroup * kh * kw)
    // [out, in, kh, kw] -> [kh, kw, in, out]
    var kernel = [Float](repeating: 0, count: stored.count)
    for o in 0..<outputs {
      for i in 0..<perGroup {
        for y in 0..<kh { for xx in 0..<kw { kernel[((y * kw + xx) * perGroup + i) * outputs + o] = stored[((o * perGroup + i) * kh + y) * kw + xx] } }
      }
    }
    let bias = ints["hasBias"]?.first == 1 ? Constant(shape: [outputs], values: try weights(layer, "bias", count: outputs)) : nil
    var padding = Padding.valid
    var (hwc, leading) = try channelsLast(x)
    if ints["same"]?.first == 1 {
      guard (ints["asymmetryMode"]?.first ?? 0) == 0 else { throw unsupported("TOP_LEFT_HEAVY same padding") }
      padding = .same
    } else if let amounts = try ints["validPadding"].map({ try sizes($0, "paddingAmounts", allowZero: true) }), amounts.count == 4,
      amounts.contains(where: { $0 != 0 }) {
      hwc = try add(.zeroPadding2D(Box2D(top: amounts[0], bottom: amounts[1], left: amounts[2], right: amounts[3])), [hwc], suffix: "__pad")
    }
    let conv = Convolution2D(
      kernel: Constant(shape: [kh, kw, perGroup, outputs], values: kernel), bias: bias, strides: strides, dilations: dilations,
      padding: padding, groups: groups)
    return try channelsFirst(try add(.convolution2D(conv), [hwc]), leading: leading)
  }

  mutating func deconvolution(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> ValueID {
    let ints = layer.integers
    let kernelSize = try sizes((ints["kernelSize"] ?? []).isEmpty ? [3, 3] : ints["kernelSize"]!, "kernelSize", count: 2)
    let strides = try sizes((ints["stride"] ?? []).isEmpty ? [1, 1] : ints["stride"]!, "stride", count: 2)
    let channels = try sizes([ints["outputChannels"]?.first ?? 0, ints["kernelChannels"]?.first ?? 0], "channels")
    let (outputs, inputs) = (channels[0], channels[1])
    guard max(ints["nGroups"]?.first ?? 1, 1) == 1 else { throw unsupported("grouped deconvolution") }
    guard (ints["dilationFactor"] ?? [1, 1]).allSatisfy({ $0 == 1 }) || (ints["dilationFactor"] ?? []).isEmpty else { throw unsupported("dilated deconvolution") }
    let (kh, kw) = (kernelSize[0], kernelSize[1])
    // Core ML [in, out, kh, kw] -> Keras [kh, kw, out, in].
    let stored = try weights(layer, "weights", count: inputs * outputs * kh * kw)
    var kernel = [Float](repeating: 0, count: stored.count)
    for i in 0..<inputs {
      for o in 0..<outputs {
        for y in 0..<kh { for xx in 0..<kw { kernel[((y * kw + xx) * outputs + o) * inputs + i] = stored[((i * outputs + o) * kh + y) * kw + xx] } }
      }
    }
    let bias = ints["hasBias"]?.first == 1 ? Constant(shape: [outputs], values: try weights(layer, "bias", count: outputs)) : nil
    let same = ints["same"]?.first == 1
    if !same, let amounts = ints["validPadding"], amounts.contains(where: { $0 != 0 }) { throw unsupported("deconvolution with padding amounts") }
    let (hwc, leading) = try channelsLast(x)
    let input = shape(hwc)
    var outputSize = (0..<2).map { axis in
      ConvolutionTranspose.outputLength(input: input[axis], kernel: kernelSize[axis], stride: strides[axis], padding: same ? .same : .valid, outputPadding: nil)
    }
    if let explicit = ints["outputShape"], explicit.count == 2 { outputSize = try sizes(explicit, "outputShape") }
    let conv = ConvolutionTranspose(
      kernel: Constant(shape: [kh, kw, outputs, inputs], values: kernel), bias: bias, strides: strides, padding: same ? .same : .valid,
      outputSize: outputSize)
    return try channelsFirst(try add(.convolutionTranspose(conv), [hwc]), leading: leading)
  }

  mutating func pooling(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> ValueID {
    let ints = layer.integers
    let type = ints["type"]?.first ?? 0
    guard type < 2 else { throw unsupported("L2 pooling") }
    let kind: PoolingKind = type == 0 ? .max : .average
    if ints["globalPooling"]?.first == 1 { return try spatial(.globalPooling2D(kind: kind, keepDims: true), x) }
    let same = ints["same"]?.first == 1
    // The IR's average excludes padding (TensorFlow); Core ML must say so too when padding is involved.
    if kind == .average && same && ints["avgPoolExcludePadding"]?.first != 1 { throw unsupported("average pooling that counts padding") }
    let kernel = try sizes((ints["kernelSize"] ?? []).isEmpty ? [3, 3] : ints["kernelSize"]!, "kernelSize", count: 2)
    let strides = try sizes((ints["stride"] ?? []).isEmpty ? [1, 1] : ints["stride"]!, "stride", count: 2)
    return try spatial(.pooling2D(Pooling2D(kind: kind, pool: kernel, strides: strides, padding: same ? .same : .valid)), x)
  }

  mutating func activation(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> ValueID {
    let alpha = layer.floats["alpha"] ?? 0, beta = layer.floats["beta"] ?? 0
    let simple: [String: Activation] = [
      "ReLU": .relu, "tanh": .tanh, "sigmoid": .sigmoid, "softsign": .softsign, "softplus": .softplus,
      "linear": .linear(scale: alpha, offset: beta), "leakyReLU": .leakyReLU(alpha: alpha), "ELU": .elu(alpha: alpha),
      "thresholdedReLU": .thresholdedReLU(theta: alpha), "sigmoidHard": .hardSigmoid(slope: alpha, offset: beta),
    ]
    let name = String(layer.kind.dropFirst("activation.".count))
    if let activation = simple[name] { return try layoutPreserving(.activation(activation), [x]) }
    guard name == "PReLU" else { throw unsupported("activation \(name) is not supported") }
    let s = shape(x)
    let channels = s.count >= 3 ? s[s.count - 3] : s.last ?? 1
    var slopes = layer.weights["alpha"] ?? []
    if slopes.count == 1 { slopes = [Float](repeating: slopes[0], count: channels) }
    guard slopes.count == channels else { throw unsupported("PReLU with \(slopes.count) slopes for \(channels) channels") }
    return try spatial(.activation(.parametricReLU(alpha: Constant(shape: [channels], values: slopes))), x)
  }

  mutating func sliceStatic(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> ValueID {
    let s = shape(x)
    let ints = layer.integers
    let begins = ints["beginIds"] ?? [], ends = ints["endIds"] ?? [], steps = ints["strides"] ?? []
    let beginMasks = ints["beginMasks"] ?? [], endMasks = ints["endMasks"] ?? [], squeezes = ints["squeezeMasks"] ?? []
    guard begins.count == s.count, ends.count == s.count, steps.count == s.count else { throw unsupported("slice of rank \(begins.count) on \(s)") }
    var begin: [Int] = [], end: [Int] = []
    for axis in s.indices {
      guard steps[axis] > 0 else { throw unsupported("negative slice strides") }
      let b = beginMasks.count > axis && beginMasks[axis] == 1 ? 0 : begins[axis] < 0 ? begins[axis] + s[axis] : begins[axis]
      let e = endMasks.count > axis && endMasks[axis] == 1 ? s[axis] : ends[axis] < 0 ? ends[axis] + s[axis] : ends[axis]
      begin.append(min(max(b, 0), s[axis]))
      end.append(min(max(e, 0), s[axis]))
    }
    let sliced = try add(.slice(StridedSlice(begin: begin, end: end, strides: steps)), [x])
    let kept = shape(sliced).enumerated().filter { !(squeezes.count > $0.offset && squeezes[$0.offset] == 1) }.map(\.element)
    return try reshape(sliced, to: kept.isEmpty ? [1] : kept)
  }
}
