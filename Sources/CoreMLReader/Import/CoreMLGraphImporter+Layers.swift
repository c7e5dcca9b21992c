import CoreMLCommon
import ModelIR

extension CoreMLGraphImporter {
  /// Adds the IR nodes of one Core ML layer and returns the values of its output blobs.
  mutating func importLayer(_ layer: CoreMLModelSpec.Layer) throws -> [ValueID] {
    switch layer.parameters {
    case .loadConstant(let p), .loadConstantND(let p):
      var constantShape = try sizes(p.shape, "shape")
      _ = try elementCount(constantShape, "shape")
      if case .loadConstant = layer.parameters, !spec.exactArrayMapping {
        constantShape = [1] + Array(([1, 1, 1] + constantShape).suffix(3))
      }
      let values = try weights(p.data, "data", count: constantShape.reduce(1, *))
      return [try add(.constant(Constant(shape: constantShape, values: values)), [])]
    default: break
    }
    let x = try input(layer)
    let rank = shape(x).count
    func operands() throws -> [ValueID] { try layer.inputs.indices.map { try input(layer, $0) } }

    switch layer.parameters {
    case .loadConstant, .loadConstantND: throw unsupported("a constant read as a layer")  // handled above
    case .convolution(let p): return [try p.isDeconvolution ? deconvolution(p, x) : convolution(p, x)]
    case .pooling(let p): return [try pooling(p, x)]

    case .innerProduct(let p):
      let channels = try sizes([p.inputChannels, p.outputChannels], "channels")
      let (inputs, outputs) = (channels[0], channels[1])
      let stored = try weights(p.weights, "weights", count: inputs * outputs)
      let bias = p.hasBias ? Constant(shape: [outputs], values: try weights(p.bias, "bias", count: outputs)) : nil
      // Core ML stores [out, in]; the IR's dense kernel is [in, out].
      let dense = Dense(
        kernel: Constant(shape: [inputs, outputs], values: Matrix.transposed(stored, rows: outputs, columns: inputs)),
        bias: bias)
      let s = shape(x)
      if !spec.exactArrayMapping || (s.count >= 3 && s.suffix(2) == [1, 1]) {
        // (…, C, H, W): the C*H*W values, in that order, are the input vector.
        let leading = Array(s.dropLast(3))
        let flat = try reshape(x, to: leading + [s.suffix(3).reduce(1, *)])
        return [try reshape(try add(.dense(dense), [flat]), to: leading + [outputs, 1, 1])]
      }
      return [try add(.dense(dense), [x])]

    case .batchedMatmul(let p) where layer.inputs.count == 2:
      // Apple: the product over the last two axes, the others broadcast; a rank-1 first input is read as
      // (1, D) and a rank-1 second input as (D, 1), and the output keeps those axes (rank max(2, ...)).
      // transposeA / transposeB swap the last two axes of an input first. No bias with two inputs.
      guard !p.hasBias, !p.int8DynamicQuantize else {
        throw unsupported("hasBias or int8DynamicQuantize with two inputs")
      }
      var (a, b) = (try input(layer, 0), try input(layer, 1))
      if shape(a).count == 1 { a = try reshape(a, to: [1] + shape(a)) }
      if shape(b).count == 1 { b = try reshape(b, to: shape(b) + [1]) }
      func swapped(_ v: ValueID, _ label: String) throws -> ValueID {
        var order = Array(shape(v).indices)
        order.swapAt(order.count - 1, order.count - 2)
        return try add(.permute(order: order), [v], suffix: "__transpose\(label)")
      }
      if p.transposeA { a = try swapped(a, "A") }
      if p.transposeB { b = try swapped(b, "B") }
      guard shape(a).last == shape(b).dropLast().last else {
        throw unsupported("inner dimensions \(shape(a)) and \(shape(b)) differ")
      }
      return [try add(.matMul, [a, b])]

    case .batchedMatmul(let p):
      guard layer.inputs.count == 1 else { throw unsupported("batchedMatMul of \(layer.inputs.count) inputs") }
      guard !p.transposeA, !p.int8DynamicQuantize else { throw unsupported("transposeA or int8DynamicQuantize") }
      let dimensions = try sizes(
        [p.weightMatrixFirstDimension, p.weightMatrixSecondDimension], "weight matrix dimensions")
      let (rows, columns) = (dimensions[0], dimensions[1])
      // Stored as the transpose of the [rows, columns] matrix (coremltools writes W.T flattened).
      let stored = try weights(p.weights, "weights", count: rows * columns)
      let bias = p.hasBias ? Constant(shape: [columns], values: try weights(p.bias, "bias", count: columns)) : nil
      let kernel = Constant(shape: [rows, columns], values: Matrix.transposed(stored, rows: columns, columns: rows))
      return [try add(.dense(Dense(kernel: kernel, bias: bias)), [x])]

    case .batchnorm(let p):
      guard !p.computeMeanVar, !p.instanceNormalization else {
        throw unsupported("computeMeanVar / instance normalization")
      }
      let c = try sizes([p.channels], "channels")[0]
      let norm = BatchNormalization(
        gamma: Constant(shape: [c], values: try weights(p.gamma, "gamma", count: c)),
        beta: Constant(shape: [c], values: try weights(p.beta, "beta", count: c)),
        mean: Constant(shape: [c], values: try weights(p.mean, "mean", count: c)),
        variance: Constant(shape: [c], values: try weights(p.variance, "variance", count: c)),
        // Core ML reads an epsilon of 0 as 1e-5.
        epsilon: p.epsilon == 0 ? 1e-5 : p.epsilon)
      return [try spatial(.batchNormalization(norm), x)]

    case .activation(let a): return [try activation(a, x)]

    case .unary(let p):
      let kinds: [UnaryParameters.Operation: UnaryFunction.Kind] = [
        .sqrt: .sqrt, .rsqrt: .rsqrt, .inverse: .inverse, .power: .power, .exp: .exp, .log: .log, .abs: .abs,
        .threshold: .threshold,
      ]
      guard let kind = p.type.value.flatMap({ kinds[$0] }) else { throw unsupported("unary type \(p.type.rawValue)") }
      // Apple's defaults: an epsilon of 0 means 1e-6, a scale of 0 means 1 ([rule UNARY-DEFAULTS] in Schemas/NeuralNetwork.proto).
      let epsilon = p.epsilon == 0 ? 1e-6 : p.epsilon
      let scale = p.scale == 0 ? 1 : p.scale
      let function = UnaryFunction(kind: kind, alpha: p.alpha, epsilon: epsilon, scale: scale, shift: p.shift)
      return [try layoutPreserving(.activation(.unary(function)), [x])]

    case .gelu(let p):
      switch p.mode {
      case .known(.exact): return [try layoutPreserving(.activation(.gelu(approximate: false)), [x])]
      case .known(.tanhApproximation): return [try layoutPreserving(.activation(.gelu(approximate: true)), [x])]
      case .known(.sigmoidApproximation), .unknown: throw unsupported("the sigmoid approximation of GELU")
      }
    case .clip(let p): return [try layoutPreserving(.activation(.clip(min: p.minVal, max: p.maxVal)), [x])]
    case .elementwiseMath(let kind):
      let function: Activation =
        switch kind {
        case .sin: .sin
        case .cos: .cos
        case .floor: .floor
        case .ceil: .ceil
        }
      return [try layoutPreserving(.activation(function), [x])]
    case .clampedReLU(let p):
      return [
        try layoutPreserving(.activation(.clippedReLU(maxValue: p.beta, negativeSlope: p.alpha, threshold: 0)), [x])
      ]

    case .softmax: return [try add(.softmax(axis: rank - 3 >= 0 ? rank - 3 : 0), [x])]
    case .softmaxND(let p): return [try add(.softmax(axis: try axis(p.axis, rank: rank)), [x])]

    case .elementwise(let operation):
      var inputs = try operands()
      let kind: ElementwiseKind
      var alpha: Float?
      switch operation {
      case .add(let value): (kind, alpha) = (.add, value)
      case .multiply(let value): (kind, alpha) = (.multiply, value)
      case .average: kind = .average
      case .max: kind = .maximum
      case .min: kind = .minimum
      }
      if inputs.count == 1 {
        guard let alpha else { return [x] }
        inputs.append(try add(.constant(Constant(shape: [1], values: [alpha])), [], suffix: "__alpha"))
      }
      return [try layoutPreserving(.elementwise(kind), inputs)]

    case .broadcastable(let operation):
      let kinds: [BroadcastableKind: ElementwiseKind] = [
        .add: .add, .subtract: .subtract, .multiply: .multiply, .divide: .divide, .max: .maximum, .min: .minimum,
        .pow: .power, .where: .select,
      ]
      return [try add(.elementwise(kinds[operation]!), try operands())]

    case .comparison(let operation, let alpha):
      let kinds: [ComparisonKind: ElementwiseKind] = [
        .greaterThan: .greaterThan, .greaterEqual: .greaterEqual, .lessThan: .lessThan, .lessEqual: .lessEqual,
        .equal: .equal, .notEqual: .notEqual,
      ]
      var inputs = try operands()
      if inputs.count == 1 {
        inputs.append(try add(.constant(Constant(shape: [1], values: [alpha])), [], suffix: "__alpha"))
      }
      return [try add(.elementwise(kinds[operation]!), inputs)]

    case .reduceND(let operation, let p):
      let kinds: [ReduceNDKind: ReductionKind] = [.mean: .mean, .max: .max, .min: .min, .sum: .sum]
      let axes = p.reduceAll ? Array(0..<rank) : try Set(p.axes.map { try axis($0, rank: rank) }).sorted()
      return [try add(.reduce(Reduction(kind: kinds[operation]!, axes: axes, keepDims: p.keepDims)), [x])]

    case .flatten(let p):
      guard rank >= 3 else { return [x] }
      let s = shape(x)
      let leading = Array(s.dropLast(3))
      let count = s.suffix(3).reduce(1, *)
      if p.mode == .known(.channelLast) {
        // CHANNEL_LAST: elements in H, W, C order.
        let (hwc, _) = try channelsLast(x)
        return [try reshape(try add(.flatten, [hwc]), to: leading + [count, 1, 1])]
      }
      return [try reshape(x, to: leading + [count, 1, 1])]

    case .reshape(let p):
      var target = try sizes(p.targetShape, "targetShape")
      if target.count == 3 { target = [1] + target }
      guard target.count == 4, rank >= 3 else { throw unsupported("target shape \(p.targetShape) on \(shape(x))") }
      if p.mode == .known(.channelFirst) || target[0] != 1 || shape(x).first != 1 {
        return [try reshape(x, to: Array(shape(x).dropLast(4)) + target)]
      }
      target.removeFirst()
      let leading = Array(shape(x).dropLast(3))
      if p.mode == .known(.channelLast) {
        // CHANNEL_LAST: reshape the H, W, C element order, then back to channels first.
        let (hwc, _) = try channelsLast(x)
        let reshaped = try add(.reshape(targetShape: [target[1], target[2], target[0]]), [hwc])
        return [try channelsFirst(reshaped, leading: leading)]
      }
      return [try reshape(x, to: leading + target)]

    case .permute(let p):
      // Axes of [Seq, C, H, W]: under the classic mapping the blob has exactly these.
      guard p.axis.count == 4, rank == 4 else { throw unsupported("permutation \(p.axis) of a rank-\(rank) blob") }
      return [try add(.permute(order: p.axis), [x])]

    case .concat(let p):
      let operands = try operands()
      if p.sequenceConcat {
        guard rank == 4, !spec.exactArrayMapping else {
          throw unsupported("sequence concatenation of rank-\(rank) blobs")
        }
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

    case .split(let p):
      // Equal parts along C (the classic channel axis).
      let parts = try sizes([p.nOutputs], "nOutputs")[0]
      let s = shape(x)
      let axis = max(rank - 3, 0)
      guard s[axis] % parts == 0 else { throw unsupported("\(s[axis]) channels in \(parts) parts") }
      let size = s[axis] / parts
      return try (0..<parts).map { part in
        var begin = [Int](repeating: 0, count: rank)
        var end = s
        begin[axis] = part * size
        end[axis] = (part + 1) * size
        return try add(
          .slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: rank))), [x],
          suffix: "__part\(part)")
      }

    case .sequenceRepeat(let p):
      guard rank == 4, !spec.exactArrayMapping else { throw unsupported("sequence repeat of a rank-\(rank) blob") }
      let count = try sizes([p.nRepetitions], "nRepetitions")[0]
      return [count == 1 ? x : try add(.concatenate(axis: 0), [ValueID](repeating: x, count: count))]

    case .embedding, .simpleRecurrent, .gru, .uniDirectionalLSTM, .biDirectionalLSTM:
      return try sequenceLayer(layer, x)
    case .concatND(let p):
      guard !p.interleave else { throw unsupported("interleaved concatenation") }
      return [try add(.concatenate(axis: try axis(p.axis, rank: rank)), try operands())]

    case .padding(let p):
      guard case .constant(let value) = p.type else { throw unsupported("reflection or replication padding") }
      let amounts = try sizes(p.paddingAmounts, "paddingAmounts", allowZero: true)
      let (top, bottom, left, right) =
        amounts.count == 4 ? (amounts[0], amounts[1], amounts[2], amounts[3]) : (0, 0, 0, 0)
      if value == 0, rank >= 3 {
        return [try spatial(.zeroPadding2D(Box2D(top: top, bottom: bottom, left: left, right: right)), x)]
      }
      let before = [Int](repeating: 0, count: rank - 2) + [top, left]
      let after = [Int](repeating: 0, count: rank - 2) + [bottom, right]
      return [try add(.constantPad(ConstantPadding(before: before, after: after, value: value)), [x])]
    case .constantPad(let p):
      guard !p.padToGivenOutputSizeMode else { throw unsupported("padToGivenOutputSizeMode") }
      let amounts = try sizes(p.padAmounts, "padAmounts", allowZero: true)
      guard amounts.count % 2 == 0, amounts.count / 2 <= rank else {
        throw unsupported("padAmounts \(amounts) on rank \(rank)")
      }
      let padded = amounts.count / 2
      let before =
        [Int](repeating: 0, count: rank - padded) + stride(from: 0, to: amounts.count, by: 2).map { amounts[$0] }
      let after =
        [Int](repeating: 0, count: rank - padded) + stride(from: 1, to: amounts.count, by: 2).map { amounts[$0] }
      return [try add(.constantPad(ConstantPadding(before: before, after: after, value: p.value)), [x])]

    case .crop(let p):
      guard layer.inputs.count == 1 else { throw unsupported("cropping to a second input's size") }
      let amounts = try sizes(p.cropAmounts, "cropAmounts", allowZero: true)
      guard amounts.count == 4, rank >= 2 else { throw unsupported("cropAmounts \(amounts)") }
      let s = shape(x)
      var begin = [Int](repeating: 0, count: rank)
      var end = s
      begin[rank - 2] = amounts[0]
      end[rank - 2] = s[rank - 2] - amounts[1]
      begin[rank - 1] = amounts[2]
      end[rank - 1] = s[rank - 1] - amounts[3]
      return [try add(.slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: rank))), [x])]

    case .sliceStatic(let p): return [try sliceStatic(p, x)]

    case .upsample(let p):
      guard p.scalingFactor.count == 2 else { throw unsupported("fractional scaling factors") }
      let factors = try sizes(p.scalingFactor, "scalingFactor", count: 2)
      var mode = UpsamplingMode.nearest
      if p.mode == .known(.bilinear) {
        // NeuralNetwork.proto: DEFAULT samples at i * (Xin - Xin / Xout) / (Xout - 1), which for an
        // integer factor f is i / f; ALIGN_CORNERS_TRUE at i * (Xin - 1) / (Xout - 1); ALIGN_CORNERS_FALSE
        // at half-pixel centres.
        switch p.linearUpsampleMode {
        case .known(.standard): mode = .bilinearAsymmetric
        case .known(.alignCornersTrue): mode = .bilinearAlignCorners
        case .known(.alignCornersFalse): mode = .bilinear
        default: throw unsupported("linearUpsampleMode \(p.linearUpsampleMode.rawValue)")
        }
      } else if p.mode != .known(.nearestNeighbor) {
        throw unsupported("interpolation mode \(p.mode.rawValue)")
      }
      return [try spatial(.upsampling2D(height: factors[0], width: factors[1], mode: mode), x)]

    case .transpose(let p): return [try add(.permute(order: p.axes), [x])]

    case .reshapeStatic(let p):
      var target = p.targetShape
      guard target.allSatisfy({ $0 == -1 || GraphLimits.areSizes([$0]) }), target.filter({ $0 == -1 }).count <= 1 else {
        throw unsupported("target shape \(target)")
      }
      let total = shape(x).reduce(1, *)
      if let unknown = target.firstIndex(of: -1) {
        let known = target.enumerated().filter { $0.offset != unknown }.reduce(1) { $0 * $1.element }
        guard known > 0 else { throw unsupported("target shape \(target)") }
        target[unknown] = total / known
      }
      return [try reshape(x, to: target)]

    case .flattenTo2D(let p):
      let s = shape(x)
      let split = try p.axis == rank ? rank : axis(p.axis, rank: rank)
      return [try reshape(x, to: [s.prefix(split).reduce(1, *), s.suffix(from: split).reduce(1, *)])]

    case .squeeze(let p):
      let s = shape(x)
      let axes = p.squeezeAll ? s.indices.filter { s[$0] == 1 } : try p.axes.map { try axis($0, rank: rank) }
      var target = s.enumerated().filter { !axes.contains($0.offset) }.map(\.element)
      if target.isEmpty { target = [1] }
      return [try reshape(x, to: target)]

    case .expandDims(let p):
      let outputRank = rank + p.axes.count
      let axes = try p.axes.map { try axis($0, rank: outputRank) }
      var target: [Int] = []
      var remaining = shape(x)[...]
      for position in 0..<outputRank { target.append(axes.contains(position) ? 1 : remaining.popFirst() ?? 1) }
      return [try reshape(x, to: target)]

    case .tile(let p):
      let reps = try sizes(p.reps, "reps", count: rank)
      var value = x
      // Repeating along an axis is concatenating copies along it.
      for (axis, count) in reps.enumerated() where count > 1 {
        value = try add(.concatenate(axis: axis), [ValueID](repeating: value, count: count), suffix: "__tile\(axis)")
      }
      return [value]

    case .slice(let p):
      // Classic slice of C, H or W; a negative end counts from the end (-1 keeps the last element).
      guard rank >= 3, let sliceAxis = p.axis.value else {
        throw unsupported("slice axis \(p.axis.rawValue) on rank \(rank)")
      }
      let axis = rank - 3 + sliceAxis.rawValue
      let length = shape(x)[axis]
      let start = p.startIndex
      let end = p.endIndex < 0 ? length + p.endIndex + 1 : p.endIndex
      let step = max(p.stride, 1)
      guard start >= 0, start < end, end <= length else {
        throw unsupported("slice \(p.startIndex)..<\(p.endIndex) of \(length)")
      }
      var begin = [Int](repeating: 0, count: rank)
      var stop = shape(x)
      var strides = [Int](repeating: 1, count: rank)
      (begin[axis], stop[axis], strides[axis]) = (start, end, step)
      return [try add(.slice(StridedSlice(begin: begin, end: stop, strides: strides)), [x])]

    case .reduce(let p):
      // Classic reduce: over C, H, W, or both H and W, keeping the reduced axes.
      // SUMSQUARE is a sum of the squared input.
      let kinds: [ReduceParameters.ReduceOperation: ReductionKind] = [
        .sum: .sum, .avg: .mean, .sumSquare: .sum, .max: .max, .min: .min,
      ]
      guard let kind = p.mode.value.flatMap({ kinds[$0] }), rank >= 3 else {
        throw unsupported("reduce mode \(p.mode.rawValue) on rank \(rank)")
      }
      let axes: [ReduceParameters.ReduceAxis: [Int]] = [
        .chw: [rank - 3, rank - 2, rank - 1], .hw: [rank - 2, rank - 1], .c: [rank - 3], .h: [rank - 2], .w: [rank - 1],
      ]
      guard let reduced = p.axis.value.flatMap({ axes[$0] }) else {
        throw unsupported("reduce axis \(p.axis.rawValue)")
      }
      let source = p.mode == .known(.sumSquare) ? try add(.elementwise(.multiply), [x, x], suffix: "__squared") : x
      return [try add(.reduce(Reduction(kind: kind, axes: reduced, keepDims: true)), [source])]

    case .scale(let p):
      // Per-channel (or scalar, or [C, H, W]) scale and bias, broadcast over the blob.
      func constant(_ values: [Float]?, _ field: String, _ declaredShape: [Int], _ shapeField: String, _ suffix: String)
        throws -> ValueID
      {
        let declared = try sizes(declaredShape, shapeField)
        let values = try weights(values, field, count: try elementCount(declared, shapeField))
        let aligned = declared.count == 1 && declared[0] > 1 ? [declared[0], 1, 1] : declared
        return try add(.constant(Constant(shape: aligned, values: values)), [], suffix: suffix)
      }
      var result = try add(
        .elementwise(.multiply), [x, try constant(p.scale, "scale", p.shapeScale, "shapeScale", "__scale")],
        suffix: "__scaled")
      if p.hasBias {
        result = try add(
          .elementwise(.add), [result, try constant(p.bias, "bias", p.shapeBias, "shapeBias", "__bias")])
      }
      return [result]

    case .l2normalize(let p):
      // Over C, H and W of each sequence step; the IR op normalizes the last axis.
      let s = shape(x)
      guard !spec.exactArrayMapping, rank == 4, s[2] == 1, s[3] == 1 else {
        throw unsupported("l2normalize of \(s) (classic [Seq, C, 1, 1] blobs only)")
      }
      // Core ML reads an epsilon of 0 as 1e-6.
      let epsilon = p.epsilon == 0 ? 1e-6 : p.epsilon
      let normalized = try add(.l2Normalize(epsilon: epsilon), [try reshape(x, to: [s[0], s[1]])])
      return [try reshape(normalized, to: s)]

    case .dot(let p):
      let operands = try operands()
      guard operands.count == 2, !spec.exactArrayMapping else { throw unsupported("dot of \(operands.count) inputs") }
      let vectors = try operands.map { try reshape($0, to: [shape($0).reduce(1, *)]) }
      let product = try add(.dot(cosine: p.cosineSimilarity), vectors)
      return [try reshape(product, to: [1, 1, 1, 1])]

    case .custom(let p):
      // The app implements it; the graph keeps a placeholder the runtime reports as not runnable.
      let custom = CustomLayer(className: p.className, outputShape: shape(x))
      return [try add(.custom(custom), try operands())]

    case .copy: return [x]

    case .lrn(let p):
      // Across channels (axis -3), a centred window of localSize; Apple reads k 0 as 1. Where an even window
      // lies is not documented, so it is refused.
      guard p.localSize >= 1, p.localSize % 2 == 1, p.localSize <= GraphLimits.maxSize else {
        throw unsupported("localSize \(p.localSize) (an odd size of 1 or more is supported)")
      }
      guard p.alpha.isFinite, p.beta.isFinite, p.k.isFinite, p.k >= 0 else {
        throw unsupported("alpha \(p.alpha), beta \(p.beta), k \(p.k)")
      }
      guard shape(x).count >= 3 else { throw unsupported("lrn of a rank-\(shape(x).count) blob (rank 3 or more)") }
      let lrn = LocalResponseNormalization(size: p.localSize, alpha: p.alpha, beta: p.beta, bias: p.k == 0 ? 1 : p.k)
      return [try spatial(.localResponseNormalization(lrn), x)]

    case .layerNormalization(let p):
      // Apple: (x - mean) / sqrt(variance + eps) over the trailing normalizedShape axes, then gamma * . + beta,
      // both of normalizedShape.
      let s = shape(x)
      guard !p.normalizedShape.isEmpty, p.normalizedShape.count <= s.count,
        Array(s.suffix(p.normalizedShape.count)) == p.normalizedShape
      else {
        throw unsupported("normalizedShape \(p.normalizedShape) is not the trailing shape of a \(s) blob")
      }
      guard p.epsilon.isFinite, p.epsilon >= 0 else { throw unsupported("eps \(p.epsilon)") }
      let count = p.normalizedShape.reduce(1, *)
      guard let gamma = p.gamma, let beta = p.beta, gamma.count == count, beta.count == count else {
        throw unsupported("gamma and beta need \(count) values each")
      }
      let leading = Array(s.dropLast(p.normalizedShape.count))
      let flat = try reshape(x, to: leading + [count])
      let norm = LayerNormalization(
        gamma: Constant(shape: [count], values: gamma), beta: Constant(shape: [count], values: beta), epsilon: p.epsilon
      )
      return [try reshape(try add(.layerNormalization(norm), [flat]), to: s)]

    case .reorganizeData, .notDecoded:
      throw unsupported("this layer type is not supported by the reader")
    }
  }

  mutating func convolution(_ p: ConvolutionParameters, _ x: ValueID) throws -> ValueID {
    let kernelSize = try sizes(p.kernelSize.isEmpty ? [3, 3] : p.kernelSize, "kernelSize", count: 2)
    let strides = try sizes(p.stride.isEmpty ? [1, 1] : p.stride, "stride", count: 2)
    let dilations = try sizes(p.dilationFactor.isEmpty ? [1, 1] : p.dilationFactor, "dilationFactor", count: 2)
    let channels = try sizes([p.outputChannels, p.kernelChannels], "channels")
    let (outputs, perGroup) = (channels[0], channels[1])
    // nGroups 0 means 1.
    let groups = try sizes([max(p.nGroups, 1)], "nGroups")[0]
    let (kh, kw) = (kernelSize[0], kernelSize[1])
    let stored = try weights(p.weights, "weights", count: outputs * perGroup * kh * kw)
    // [out, in, kh, kw] -> [kh, kw, in, out]
    var kernel = [Float](repeating: 0, count: stored.count)
    for o in 0..<outputs {
      for i in 0..<perGroup {
        for y in 0..<kh {
          for xx in 0..<kw {
            kernel[((y * kw + xx) * perGroup + i) * outputs + o] = stored[((o * perGroup + i) * kh + y) * kw + xx]
          }
        }
      }
    }
    let bias = p.hasBias ? Constant(shape: [outputs], values: try weights(p.bias, "bias", count: outputs)) : nil
    var padding = Padding.valid
    var (hwc, leading) = try channelsLast(x)
    switch p.padding {
    case .same(let mode):
      switch mode {
      case .known(.bottomRightHeavy): padding = .same
      case .known(.topLeftHeavy):
        // [rule SAME-PADDING]: the output is ceil(H / stride) long, the total padding
        // max(0, (H_out - 1) * stride + K_dilated - H), and TOP_LEFT_HEAVY puts its larger half first:
        // explicit zero padding, then a valid convolution.
        let input = shape(hwc)
        var before: [Int] = []
        var after: [Int] = []
        for axis in 0..<2 {
          let kernel = (axis == 0 ? kh : kw) - 1
          let (dilatedSpan, overflow) = kernel.multipliedReportingOverflow(by: dilations[axis])
          guard !overflow, input[axis] <= Int.max / 2 else { throw unsupported("a kernel too large for its dilation") }
          let outputLength = (input[axis] + strides[axis] - 1) / strides[axis]
          let (reach, overflow2) = (outputLength - 1).multipliedReportingOverflow(by: strides[axis])
          guard !overflow2, reach <= Int.max / 2 - dilatedSpan else {
            throw unsupported("a stride too large for its input")
          }
          let total = max(0, reach + dilatedSpan + 1 - input[axis])
          before.append(total - total / 2)
          after.append(total / 2)
        }
        if before.contains(where: { $0 != 0 }) || after.contains(where: { $0 != 0 }) {
          hwc = try add(
            .zeroPadding2D(Box2D(top: before[0], bottom: after[0], left: before[1], right: after[1])), [hwc],
            suffix: "__pad")
        }
      case .unknown(let value): throw unsupported("same padding mode \(value)")
      }
    case .valid(let paddingAmounts):
      let amounts = try sizes(paddingAmounts, "paddingAmounts", allowZero: true)
      if amounts.count == 4, amounts.contains(where: { $0 != 0 }) {
        hwc = try add(
          .zeroPadding2D(Box2D(top: amounts[0], bottom: amounts[1], left: amounts[2], right: amounts[3])), [hwc],
          suffix: "__pad")
      }
    case .unset: break
    }
    let conv = Convolution2D(
      kernel: Constant(shape: [kh, kw, perGroup, outputs], values: kernel), bias: bias, strides: strides,
      dilations: dilations,
      padding: padding, groups: groups)
    return try channelsFirst(try add(.convolution2D(conv), [hwc]), leading: leading)
  }

  mutating func deconvolution(_ p: ConvolutionParameters, _ x: ValueID) throws -> ValueID {
    let kernelSize = try sizes(p.kernelSize.isEmpty ? [3, 3] : p.kernelSize, "kernelSize", count: 2)
    let strides = try sizes(p.stride.isEmpty ? [1, 1] : p.stride, "stride", count: 2)
    let channels = try sizes([p.outputChannels, p.kernelChannels], "channels")
    let (outputs, inputs) = (channels[0], channels[1])
    guard max(p.nGroups, 1) == 1 else { throw unsupported("grouped deconvolution") }
    guard p.dilationFactor.allSatisfy({ $0 == 1 }) else { throw unsupported("dilated deconvolution") }
    let (kh, kw) = (kernelSize[0], kernelSize[1])
    // Core ML [in, out, kh, kw] -> Keras [kh, kw, out, in].
    let stored = try weights(p.weights, "weights", count: inputs * outputs * kh * kw)
    var kernel = [Float](repeating: 0, count: stored.count)
    for i in 0..<inputs {
      for o in 0..<outputs {
        for y in 0..<kh {
          for xx in 0..<kw {
            kernel[((y * kw + xx) * outputs + o) * inputs + i] = stored[((i * outputs + o) * kh + y) * kw + xx]
          }
        }
      }
    }
    let bias = p.hasBias ? Constant(shape: [outputs], values: try weights(p.bias, "bias", count: outputs)) : nil
    var same = false
    // Explicit amounts without an outputShape crop the full scatter: H_out = (H_in - 1) * stride + K - (top + bottom).
    var crop: Box2D?
    switch p.padding {
    case .same: same = true
    case .valid(let amounts):
      if amounts.contains(where: { $0 != 0 }) {
        guard p.outputShape.isEmpty else {
          throw unsupported("deconvolution with both padding amounts and an outputShape")
        }
        let edges = try sizes(amounts, "paddingAmounts", allowZero: true)
        guard edges.count == 4 else { throw unsupported("paddingAmounts of \(edges.count) edges") }
        crop = Box2D(top: edges[0], bottom: edges[1], left: edges[2], right: edges[3])
      }
    case .unset: break
    }
    let (hwc, leading) = try channelsLast(x)
    let input = shape(hwc)
    var outputSize = (0..<2).map { axis in
      ConvolutionTranspose.outputLength(
        input: input[axis], kernel: kernelSize[axis], stride: strides[axis], padding: same ? .same : .valid,
        outputPadding: nil)
    }
    if p.outputShape.count == 2 { outputSize = try sizes(p.outputShape, "outputShape") }
    let conv = ConvolutionTranspose(
      kernel: Constant(shape: [kh, kw, outputs, inputs], values: kernel), bias: bias, strides: strides,
      padding: same ? .same : .valid,
      outputSize: outputSize)
    var result = try add(.convolutionTranspose(conv), [hwc])
    if let crop {
      guard crop.top + crop.bottom < outputSize[0], crop.left + crop.right < outputSize[1] else {
        throw unsupported("paddingAmounts \(crop) leave nothing of a \(outputSize) output")
      }
      result = try add(.cropping2D(crop), [result])
    }
    return try channelsFirst(result, leading: leading)
  }

  mutating func pooling(_ p: PoolingParameters, _ x: ValueID) throws -> ValueID {
    let kind: PoolingKind
    switch p.type {
    case .known(.max): kind = .max
    case .known(.average): kind = .average
    case .known(.l2), .unknown: throw unsupported("L2 pooling")
    }
    if p.globalPooling { return try spatial(.globalPooling2D(kind: kind, keepDims: true), x) }
    // VALID and INCLUDE_LAST_PIXEL are both read as valid padding.
    let same = p.padding == .same
    // The IR's average excludes padding (TensorFlow); Core ML must say so too when padding is involved.
    if kind == .average && same && !p.avgPoolExcludePadding { throw unsupported("average pooling that counts padding") }
    let kernel = try sizes(p.kernelSize.isEmpty ? [3, 3] : p.kernelSize, "kernelSize", count: 2)
    let strides = try sizes(p.stride.isEmpty ? [1, 1] : p.stride, "stride", count: 2)
    let pooling = ModelIR.Operation.pooling2D(
      Pooling2D(kind: kind, pool: kernel, strides: strides, padding: same ? .same : .valid))
    // [rule POOLING-VALID-PADDING] VALID paddingAmounts pad H and W before the windows: a maximum over the
    // input's values only (padded with the lowest float), an average counting the zeros unless
    // avgPoolExcludePadding (which explicit amounts are not read with).
    let amounts = p.padding == .valid ? try sizes(p.paddingAmounts, "paddingAmounts", allowZero: true) : []
    guard amounts.contains(where: { $0 != 0 }) else { return try spatial(pooling, x) }
    guard amounts.count == 4 else {
      throw unsupported("paddingAmounts \(p.paddingAmounts) (two [start, end] pairs, H then W)")
    }
    if kind == .average && p.avgPoolExcludePadding {
      throw unsupported("an average pooling that excludes explicit padding amounts")
    }
    let (hwc, leading) = try channelsLast(x)
    let pad = ConstantPadding(
      before: [amounts[0], amounts[2], 0], after: [amounts[1], amounts[3], 0],
      value: kind == .max ? -.greatestFiniteMagnitude : 0)
    let padded = try add(.constantPad(pad), [hwc], suffix: "__pad")
    return try channelsFirst(try add(pooling, [padded]), leading: leading)
  }

  mutating func activation(_ a: ActivationParameters, _ x: ValueID) throws -> ValueID {
    let simple: Activation
    switch a {
    case .relu: simple = .relu
    case .tanh: simple = .tanh
    case .sigmoid: simple = .sigmoid
    case .softsign: simple = .softsign
    case .softplus: simple = .softplus
    case .linear(let alpha, let beta): simple = .linear(scale: alpha, offset: beta)
    case .leakyReLU(let alpha): simple = .leakyReLU(alpha: alpha)
    case .elu(let alpha): simple = .elu(alpha: alpha)
    case .thresholdedReLU(let alpha): simple = .thresholdedReLU(theta: alpha)
    case .sigmoidHard(let alpha, let beta): simple = .hardSigmoid(slope: alpha, offset: beta)
    case .preLU(let alpha):
      let s = shape(x)
      let channels = s.count >= 3 ? s[s.count - 3] : s.last ?? 1
      var slopes = alpha ?? []
      if slopes.count == 1 { slopes = [Float](repeating: slopes[0], count: channels) }
      guard slopes.count == channels else {
        throw unsupported("PReLU with \(slopes.count) slopes for \(channels) channels")
      }
      return try spatial(.activation(.parametricReLU(alpha: Constant(shape: [channels], values: slopes))), x)
    case .scaledTanh, .parametricSoftplus, .unknown:
      throw unsupported("activation \(String(layerKind.dropFirst("activation.".count))) is not supported")
    }
    return try layoutPreserving(.activation(simple), [x])
  }

  mutating func sliceStatic(_ p: SliceStaticParameters, _ x: ValueID) throws -> ValueID {
    let s = shape(x)
    let (begins, ends, steps) = (p.beginIds, p.endIds, p.strides)
    let (beginMasks, endMasks, squeezes) = (p.beginMasks, p.endMasks, p.squeezeMasks)
    guard begins.count == s.count, ends.count == s.count, steps.count == s.count else {
      throw unsupported("slice of rank \(begins.count) on \(s)")
    }
    var begin: [Int] = []
    var end: [Int] = []
    for axis in s.indices {
      guard steps[axis] > 0 else { throw unsupported("negative slice strides") }
      let b = beginMasks.count > axis && beginMasks[axis] ? 0 : begins[axis] < 0 ? begins[axis] + s[axis] : begins[axis]
      let e = endMasks.count > axis && endMasks[axis] ? s[axis] : ends[axis] < 0 ? ends[axis] + s[axis] : ends[axis]
      begin.append(min(max(b, 0), s[axis]))
      end.append(min(max(e, 0), s[axis]))
    }
    let sliced = try add(.slice(StridedSlice(begin: begin, end: end, strides: steps)), [x])
    let kept = shape(sliced).enumerated().filter { !(squeezes.count > $0.offset && squeezes[$0.offset]) }.map(\.element)
    return try reshape(sliced, to: kept.isEmpty ? [1] : kept)
  }
}
