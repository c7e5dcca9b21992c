import CoreMLCommon
import ModelIR

/// Turns IR nodes into classic (rank-5) Core ML neural-network layers.
///
/// This is where Keras' channels-last data meets Core ML's `[C, H, W]` blobs: kernels are
/// transposed here and axes are mapped here, nowhere else.
struct CoreMLLayerEmitter {
  let graph: Graph
  /// Builds the layers and registers their weights (`NeuralNetworkBuilder`).
  var builder: NeuralNetworkBuilder
  var layers: [UnsafeMutablePointer<NNLayer>] { builder.layers }
  /// The lowest specification version the emitted layers need.
  var specificationVersion: Int32 { builder.specificationVersion }
  /// float32 weights whose values are set only while their layer is packed (`StreamedSpecification`):
  /// the writer never holds a second copy of a model's weights.
  var deferredWeights: [DeferredWeight] { builder.deferredWeights }

  init(arena: MessageArena, graph: Graph, precision: WeightPrecision) {
    self.graph = graph
    builder = NeuralNetworkBuilder(arena: arena, precision: precision)
  }

  // MARK: Nodes

  /// Emits the layers for one node; the last layer writes the node's output blob.
  mutating func emit(_ node: Node) throws {
    // A float16 model stores a layer whose weights float16 cannot hold (a folded BatchNorm scale of
    // 1.05e7) in float32, all of that layer's weights alike.
    let storage = builder.precision
    defer { builder.precision = storage }
    if storage == .float16, node.operation.constants.contains(where: Float32IslandsPass.isBeyondFloat16) {
      builder.precision = .float32
    }
    let inputs = node.inputs.map { graph[$0].name }
    let output = graph[node.output].name
    func unsupported(_ detail: String) -> CoreMLWriterError { .unsupportedOperation(layer: node.name, detail: detail) }
    if case .constant(let value) = node.operation {
      try emitConstant(value, name: node.name, output: output)
      return
    }
    guard let first = node.inputs.first else {
      throw unsupported("\(node.operation.kindName) has no classic Core ML layer")
    }
    let inputShape = graph[first].type.shape
    switch node.operation {
    case .convolution2D(let conv):
      try emitConvolution(conv, name: node.name, input: inputs[0], output: output)

    case .dense(let dense) where inputShape.count == 3:
      // Over the channels of an image: the same sums per pixel as a 1x1 convolution (kernel [1, 1, in, out]),
      // which is the classic layer for it (innerProduct takes a [C, 1, 1] blob).
      try emitConvolution(
        Convolution2D(
          kernel: Constant(shape: [1, 1, dense.inputUnits, dense.outputUnits], values: dense.kernel.values),
          bias: dense.bias, strides: [1, 1],
          dilations: [1, 1], padding: .valid, groups: 1),
        name: node.name, input: inputs[0], output: output)

    case .dense(let dense):
      // Rank 2 is a [T, C] sequence: Core ML's innerProduct applies to every step.
      guard inputShape.count <= 2 else {
        throw unsupported(
          "Dense on a rank-\(inputShape.count + 1) tensor \(inputShape) (rank 2 and 3 only, or an image's channels)")
      }
      // Keras stores [in, out]; Core ML wants [out, in].
      try builder.innerProduct(
        node.name, input: inputs[0], output: output, inputChannels: dense.inputUnits, outputChannels: dense.outputUnits,
        weights: .transposed(dense.kernel.values, rows: dense.inputUnits, columns: dense.outputUnits),
        bias: dense.bias.map { .values($0.values) })

    case .batchNormalization(let norm):
      // Core ML reads an epsilon of 0 as 1e-5 ([rule BATCHNORM-EPSILON]): a Keras epsilon of 0 is written as the
      // smallest normal float, which adds nothing a variance can notice.
      try builder.batchnorm(
        node.name, input: inputs[0], output: output, channels: norm.channels,
        epsilon: norm.epsilon == 0 ? Float.leastNormalMagnitude : norm.epsilon,
        gamma: .values(norm.gamma.values), beta: .values(norm.beta.values), mean: .values(norm.mean.values),
        variance: .values(norm.variance.values))

    case .activation(let activation):
      try emitActivation(activation, name: node.name, input: inputs[0], output: output, shape: inputShape)

    case .softmax(let axis):
      // Core ML's classic softmax runs over C, which is Keras' last axis.
      if axis == inputShape.count - 1 {
        builder.softmax(node.name, input: inputs[0], output: output)
      } else if inputShape.count == 3 || inputShape.count == 2 {
        // Over another axis: that axis moved to C, the softmax, and moved back (a [T, C] sequence swaps
        // Core ML's sequence and channel axes; an [H, W, C] tensor swaps the axis with C).
        var order = Array(0..<inputShape.count)
        order.swapAt(axis, inputShape.count - 1)
        let coreMLOrder = inputShape.count == 2 ? [1, 0, 2, 3] : Self.coreMLPermutation(order)
        let moved = node.name + "__softmax_axis_last"
        emitPermute(coreMLOrder, name: moved, input: inputs[0], output: moved + "_output")
        builder.softmax(node.name + "__softmax", input: moved + "_output", output: node.name + "__softmax_output")
        emitPermute(coreMLOrder, name: node.name, input: node.name + "__softmax_output", output: output)
      } else {
        throw unsupported(
          "softmax on axis \(axis) of \(inputShape) (the last axis, or any axis of [T, C] and [H, W, C] tensors)")
      }

    case .pooling2D(let pool):
      emitPooling(
        pool.kind, kernel: [pool.poolHeight, pool.poolWidth], stride: [pool.strideHeight, pool.strideWidth],
        padding: pool.padding, global: false, name: node.name, input: inputs[0], output: output)

    case .globalPooling2D(let kind, _):
      // (a global pooling's window is the whole plane whatever its size: the kernel size is not read)
      emitPooling(
        kind, kernel: [1, 1], stride: [1, 1], padding: .valid, global: true,
        name: node.name, input: inputs[0], output: output)

    case .flatten where inputShape.count == 2:
      // A [T, C] sequence: move time into W first; CHANNEL_LAST then reads W-major, C-minor, as Keras does.
      emitPermute(
        Self.sequenceToRow, name: node.name + "__row__", input: inputs[0], output: node.name + "__row___output")
      emitFlatten(name: node.name, input: node.name + "__row___output", output: output)

    case .flatten where inputShape.count == 4:
      // [T, H, W, C]: Core ML's flatten works per sequence step; flatten each step, then join the steps.
      let steps = node.name + "__steps___output"
      emitFlatten(name: node.name + "__steps__", input: inputs[0], output: steps)
      try emitReshape(
        from: [inputShape[0], inputShape.dropFirst().reduce(1, *)], to: [inputShape.reduce(1, *)], name: node.name,
        input: steps, output: output)

    case .flatten:
      emitFlatten(name: node.name, input: inputs[0], output: output)

    case .reshape(let target) where Self.isRowSequenceSwap(inputShape, target):
      // [T, C] <-> [1, T, C]: Core ML's [Seq=T, C, 1, 1] and [1, C, 1, W=T] differ by a permutation.
      emitPermute(Self.sequenceToRow, name: node.name, input: inputs[0], output: output)

    case .reshape(let target) where inputShape.count == 4 && target.count == 2 && target[0] == inputShape[0]:
      // [T, H, W, C] -> [T, H*W*C]: flatten each time step.
      emitFlatten(name: node.name, input: inputs[0], output: output)

    case .reshape(let target) where inputShape.count == 4:
      // [T, H, W, C] to anything else: flatten each step to a [T, H*W*C] sequence first.
      let steps = node.name + "__steps___output"
      emitFlatten(name: node.name + "__steps__", input: inputs[0], output: steps)
      try emitReshape(
        from: [inputShape[0], inputShape.dropFirst().reduce(1, *)], to: target, name: node.name, input: steps,
        output: output)

    case .reshape(let target):
      try emitReshape(from: inputShape, to: target, name: node.name, input: inputs[0], output: output)

    case .permute(let order) where order == [1, 0]:
      // [T, C] -> [C, T]: Core ML's sequence and channel axes trade places.
      emitPermute([1, 0, 2, 3], name: node.name, input: inputs[0], output: output)

    case .permute(let order):
      guard order.count == 3 else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: node.name, detail: "Permute of a rank-\(order.count + 1) tensor (only [T, C] and [H, W, C] tensors)")
      }
      emitPermute(Self.coreMLPermutation(order), name: node.name, input: inputs[0], output: output)

    case .channelShuffle(let axis, let groups):
      try emitChannelShuffle(
        axis: axis, groups: groups, shape: inputShape, name: node.name, input: inputs[0], output: output)

    case .zeroPadding2D(let box):
      builder.zeroPadding(
        node.name, input: inputs[0], output: output, amounts: [(box.top, box.bottom), (box.left, box.right)])

    case .cropping2D(let box):
      builder.crop(
        node.name, input: inputs[0], output: output, amounts: [(box.top, box.bottom), (box.left, box.right)])

    case .upsampling2D(let height, let width, let mode):
      // Half-pixel centres (Keras) are Core ML's ALIGN_CORNERS_FALSE and aligned corners its
      // ALIGN_CORNERS_TRUE (specification 5); i / f its DEFAULT for integer factors (specification 1).
      let upsampling: NeuralNetworkUpsampleMode
      switch mode {
      case .nearest: upsampling = .nearestNeighbor
      case .bilinear: upsampling = .bilinearAlignCornersFalse
      case .bilinearAlignCorners: upsampling = .bilinearAlignCornersTrue
      case .bilinearAsymmetric: upsampling = .bilinearDefault
      }
      builder.upsample(node.name, input: inputs[0], output: output, scalingFactor: [height, width], mode: upsampling)

    case .elementwise(let kind):
      try requireClassicBroadcast(node)
      try emitElementwise(kind, name: node.name, inputs: inputs, output: output)

    case .concatenate(let axis):
      try emitConcatenate(axis: axis, rank: inputShape.count, name: node.name, inputs: inputs, output: output)

    case .recurrent(let recurrent):
      try emitRecurrent(
        recurrent, name: node.name, input: inputs[0], states: Array(inputs.dropFirst()), output: output,
        inputShape: inputShape)

    case .embedding(let table):
      // Core ML's classic embedding looks up one token id per sequence step: a [T] input.
      guard inputShape.count == 1 else {
        throw unsupported("an embedding of token ids of shape \(inputShape) (one id per step, a [T] sequence, only)")
      }
      try emitEmbedding(table, name: node.name, input: inputs[0], output: output)

    case .custom(let custom):
      try emitCustom(custom, name: node.name, inputs: inputs, output: output)

    case .cast:
      // Neural networks keep float32 blobs; float16 storage is a weight setting (`--precision`).
      throw unsupported("a cast has no classic Core ML layer; neural networks compute in float32")

    case .convolutionTranspose(let conv):
      try emitConvolutionTranspose(conv, name: node.name, input: inputs[0], output: output)

    case .layerNormalization(let norm):
      try emitLayerNormalization(
        norm, name: node.name, input: inputs[0], output: output, channels: inputShape.last ?? 1)

    case .l2Normalize(let epsilon):
      // Core ML's l2normalize spans C, H and W together: Keras' last axis only for vectors and sequences.
      guard inputShape.count <= 2 else {
        try emitChannelL2Normalize(epsilon: epsilon, name: node.name, input: inputs[0], output: output)
        return
      }
      builder.l2Normalize(node.name, input: inputs[0], output: output, epsilon: epsilon)

    case .localResponseNormalization(let lrn):
      // The classic layer sums a centred window of localSize channels; Apple reads k 0 as 1.
      guard lrn.size % 2 == 1 else {
        throw unsupported(
          "local response normalization over an even window (\(lrn.size)): Core ML does not document where it lies")
      }
      guard lrn.bias > 0 else {
        throw unsupported("local response normalization with bias \(lrn.bias) (the classic layer's k must be positive)")
      }
      guard inputShape.count == 1 || inputShape.count == 3 else {
        throw unsupported("local response normalization of a \(inputShape) tensor ([C] and [H, W, C] only)")
      }
      builder.localResponseNormalization(
        node.name, input: inputs[0], output: output, localSize: lrn.size, alpha: lrn.alpha, beta: lrn.beta, k: lrn.bias)

    case .dot(let cosine):
      builder.dot(node.name, inputs: inputs, output: output, cosineSimilarity: cosine)

    case .slice(let slice):
      try emitSlice(slice, name: node.name, input: inputs[0], output: output, shape: inputShape)

    case .constant:
      return  // emitted before the inputs are looked at (it has none)

    case .constantPad(let pad) where inputShape.count == 3 && pad.before[2] == 0 && pad.after[2] == 0:
      // An image padded in H and W by a constant: the padding layer's constant mode.
      builder.zeroPadding(
        node.name, input: inputs[0], output: output,
        amounts: [(pad.before[0], pad.after[0]), (pad.before[1], pad.after[1])], value: pad.value)

    case .reduce(let reduction) where inputShape.count == 2 && reduction.axes == [0] && reduction.kind != .min:
      // Over the steps of a [T, C] sequence (tf2onnx's GlobalAveragePooling1D, a ReduceMean): the steps
      // moved into W, then a global pooling over the row; a sum is the mean times T.
      let row = node.name + "__row___output"
      emitPermute(Self.sequenceToRow, name: node.name + "__row__", input: inputs[0], output: row)
      let pooled = reduction.kind == .sum ? node.name + "__mean___output" : output
      emitPooling(
        reduction.kind == .max ? .max : .average, kernel: [1, 1], stride: [1, 1], padding: .valid,
        global: true,
        name: node.name + (reduction.kind == .sum ? "__mean__" : ""), input: row, output: pooled)
      if reduction.kind == .sum {
        try emitActivation(
          .linear(scale: Float(inputShape[0]), offset: 0), name: node.name, input: pooled, output: output,
          shape: [inputShape[1]])
      }

    case .reduce, .constantPad:
      throw unsupported("\(node.operation.kindName) has no classic Core ML layer")

    case .matMul:
      // batchedMatMul with two inputs is a specification 4 (iOS 13) layer on rank-N arrays; this writer
      // writes the rank-5 layers of specification 1 to 3.
      throw unsupported(
        "a product of two computed tensors has no classic Core ML layer before specification 4; write an ML Program (.mlpackage)"
      )
    }
  }

  /// The classic element-wise layers broadcast a `[Seq, C, H, W]` blob against another of the same
  /// sequence length only as a scalar `(1, 1, 1)`, per channel `(C, 1, 1)` or per position `(1, H, W)`;
  /// where the IR's numpy broadcasting needs anything else, the layer is refused.
  func requireClassicBroadcast(_ node: Node) throws {
    func blob(_ shape: [Int]) -> [Int]? {
      switch shape.count {
      case 1: return [1, shape[0], 1, 1]
      case 2: return [shape[0], shape[1], 1, 1]
      case 3: return [1, shape[2], shape[0], shape[1]]
      default: return nil
      }
    }
    let outputShape = graph[node.output].type.shape
    let shapes = node.inputs.map { graph[$0].type.shape }
    guard shapes.contains(where: { $0 != outputShape }) else { return }
    guard let out = blob(outputShape) else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: node.name, detail: "a broadcasting \(node.operation.kindName) of shapes \(shapes) (rank 1 to 3 only)")
    }
    for shape in shapes where shape != outputShape {
      // Numpy aligns from the right: the IR shape padded with leading 1s to the output's rank.
      let padded = [Int](repeating: 1, count: outputShape.count - shape.count) + shape
      guard shape.count <= outputShape.count, let b = blob(padded), b[0] == out[0] else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: node.name,
          detail: "a broadcasting \(node.operation.kindName) of shapes \(shapes) across the sequence axis")
      }
      let (c, h, w) = (b[1], b[2], b[3])
      let allowed =
        (c == 1 && h == 1 && w == 1) || (c == out[1] && h == 1 && w == 1) || (c == 1 && h == out[2] && w == out[3])
        || (c == out[1] && h == out[2] && w == out[3])
      // A lower-rank input must also mean the same blob in Core ML's reading of its own rank.
      guard allowed, shape.count == outputShape.count || blob(shape) == b else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: node.name,
          detail:
            "a broadcasting \(node.operation.kindName) of shapes \(shapes) (classic layers broadcast a scalar, a channel vector or one plane)"
        )
      }
    }
  }

  /// A constant as a `loadConstant` blob `[C, H, W]`: a vector `[D]` (or a one-step sequence `[1, D]`)
  /// on C, an image `[H, W, C]` with its values moved to channels first.
  mutating func emitConstant(_ value: Constant, name: String, output: String) throws {
    let shape = value.shape
    switch shape.count {
    case 1: try builder.loadConstant(name, output: output, shape: [shape[0], 1, 1], values: .values(value.values))
    case 2 where shape[0] == 1:
      try builder.loadConstant(name, output: output, shape: [shape[1], 1, 1], values: .values(value.values))
    case 3:
      let (h, w, c) = (shape[0], shape[1], shape[2])
      var values = [Float](repeating: 0, count: value.count)
      for y in 0..<h {
        for x in 0..<w { for k in 0..<c { values[(k * h + y) * w + x] = value.values[(y * w + x) * c + k] } }
      }
      try builder.loadConstant(name, output: output, shape: [c, h, w], values: .values(values))
    default:
      throw CoreMLWriterError.unsupportedOperation(
        layer: name, detail: "a constant of shape \(shape) (classic constants are [D] vectors and [H, W, C] images)")
    }
  }

  /// A strided slice as classic slice layers, one per axis it cuts (start, exclusive end, stride along
  /// C, H or W of the `[C, H, W]` blob: the IR's `[H, W, C]`, the `D` of `[T, D]` and `[D]`).
  mutating func emitSlice(_ slice: StridedSlice, name: String, input: String, output: String, shape: [Int]) throws {
    let axes: [NeuralNetworkSliceAxis?]
    switch shape.count {
    case 1: axes = [.channel]
    case 2: axes = [nil, .channel]
    case 3: axes = [.height, .width, .channel]
    default:
      throw CoreMLWriterError.unsupportedOperation(
        layer: name, detail: "a slice of a rank-\(shape.count + 1) tensor \(shape)")
    }
    var cuts: [(axis: NeuralNetworkSliceAxis, range: Range<Int>, stride: Int)] = []
    for axis in shape.indices where slice.begin[axis] != 0 || slice.end[axis] != shape[axis] || slice.strides[axis] != 1
    {
      let (begin, end, stride) = (slice.begin[axis], slice.end[axis], slice.strides[axis])
      guard let coreMLAxis = axes[axis] else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: name, detail: "a slice of the sequence axis of \(shape) (classic slices cut C, H or W)")
      }
      guard stride >= 1, begin >= 0, begin < end, end <= shape[axis] else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: name, detail: "slice \(begin)..<\(end) by \(stride) of an axis of \(shape[axis])")
      }
      cuts.append((coreMLAxis, begin..<end, stride))
    }
    // A slice that cuts nothing is the whole channel range.
    if cuts.isEmpty { cuts = [(.channel, 0..<shape[shape.count - 1], 1)] }
    var current = input
    for (index, cut) in cuts.enumerated() {
      let last = index == cuts.count - 1
      let layer = index == 0 ? name : "\(name)__\(index + 1)"
      let blob = last ? output : "\(output)__slice\(index + 1)"
      builder.slice(layer, input: current, output: blob, axis: cut.axis, range: cut.range, stride: cut.stride)
      current = blob
    }
  }

  /// A Keras reshape (row-major element order) between rank 1, 2 and 3 tensors.
  ///
  /// A CHANNEL_LAST reshape reorders the H-W-C elements of each blob as Keras does, but a `[T, C]`
  /// sequence keeps its time steps on Core ML's sequence axis, outside H-W-C: reshaping `[Seq=T, C, 1, 1]`
  /// straight to an image (or an image straight to `[Seq=T', C', 1, 1]`) takes the elements in the wrong
  /// order. So a sequence first becomes its row image `[1, C, 1, W=T]` (Keras' `[1, T, C]`, same order),
  /// and an image reshaped to a sequence goes through the row image `[1, C', 1, T']`. Between vectors and
  /// sequences H = W = 1 on both sides, where the sequence-major and H-W-C orders agree.
  mutating func emitReshape(from inputShape: [Int], to target: [Int], name: String, input: String, output: String)
    throws
  {
    func reshape(_ shape4: [Int], name: String, input: String, output: String) {
      builder.reshape(name, input: input, output: output, targetShape: shape4)
    }
    switch (inputShape.count, target.count) {
    case (2, 3):
      let row = name + "__row___output"
      emitPermute(Self.sequenceToRow, name: name + "__row__", input: input, output: row)
      reshape(try Self.coreMLShape4(target, layer: name), name: name, input: row, output: output)
    case (3, 2):
      let row = name + "__row___output"
      reshape([1, target[1], 1, target[0]], name: name + "__row__", input: input, output: row)
      emitPermute(Self.sequenceToRow, name: name, input: row, output: output)
    default:
      reshape(try Self.coreMLShape4(target, layer: name), name: name, input: input, output: output)
    }
  }

  /// CHANNEL_LAST flattening keeps Keras' H-W-C element order, so a Dense after it needs no permutation.
  private mutating func emitFlatten(name: String, input: String, output: String) {
    builder.flatten(name, input: input, output: output)
  }

  /// A deconvolution: weights `[in, out, kh, kw]` (as coremltools writes them) and the output size
  /// given explicitly, so output padding and same padding land as Keras puts them.
  private mutating func emitConvolutionTranspose(
    _ conv: ConvolutionTranspose, name: String, input: String, output: String
  ) throws {
    let (kh, kw, co, ci) = (conv.kernel.shape[0], conv.kernel.shape[1], conv.kernel.shape[2], conv.kernel.shape[3])
    var values = [Float](repeating: 0, count: conv.kernel.count)
    for y in 0..<kh {
      for x in 0..<kw {
        for o in 0..<co {
          for i in 0..<ci {
            values[((i * co + o) * kh + y) * kw + x] = conv.kernel.values[((y * kw + x) * co + o) * ci + i]
          }
        }
      }
    }
    try builder.convolution(
      name, input: input, output: output, outputChannels: co, kernelChannels: ci, groups: 1, kernelSize: [kh, kw],
      stride: conv.strides,
      dilation: [1, 1], padding: Self.padding(conv.padding), weights: .values(values),
      bias: conv.bias.map { .values($0.values) },
      deconvolutionOutputShape: conv.outputSize)
  }

  private mutating func emitConvolution(_ conv: Convolution2D, name: String, input: String, output: String) throws {
    try builder.convolution(
      name, input: input, output: output, outputChannels: conv.outputChannels,
      kernelChannels: conv.inputChannelsPerGroup, groups: conv.groups,
      kernelSize: [conv.kernelHeight, conv.kernelWidth], stride: [conv.strideHeight, conv.strideWidth],
      dilation: [conv.dilationHeight, conv.dilationWidth], padding: Self.padding(conv.padding),
      weights: .convolutionKernel(conv.kernel), bias: conv.bias.map { .values($0.values) })
  }

  /// Same (bottom/right heavy, as TensorFlow) or valid padding.
  static func padding(_ padding: Padding) -> NeuralNetworkPadding {
    switch padding {
    case .same: return .same
    case .valid: return .valid
    }
  }

  /// A pooling layer; average pooling always excludes the padding, as TensorFlow does.
  private mutating func emitPooling(
    _ kind: PoolingKind, kernel: [Int], stride: [Int], padding: Padding, global: Bool, name: String, input: String,
    output: String
  ) {
    builder.pooling(
      kind == .max ? .max : .average, name, input: input, output: output, kernelSize: kernel, stride: stride,
      padding: Self.padding(padding),
      global: global, averageExcludesPadding: true)
  }

  mutating func emitPermute(_ axes: [Int], name: String, input: String, output: String) {
    builder.permute(name, input: input, output: output, axes: axes)
  }

  /// add, subtract (as `add` of the negated second input), multiply, divide (a multiply by the inverse),
  /// average, max or min of blobs.
  mutating func emitElementwise(_ kind: ElementwiseKind, name: String, inputs: [String], output: String) throws {
    var inputs = inputs
    let operation: NeuralNetworkElementwise
    switch kind {
    case .add: operation = .add
    case .subtract:
      // Core ML's classic layers have no subtraction: a - b = a + (-1 * b).
      let negated = name + "__negated__"
      try builder.activation(.linear(alpha: -1, beta: 0), negated, input: inputs[1], output: negated + "_output")
      inputs[1] = negated + "_output"
      operation = .add
    case .multiply: operation = .multiply
    case .divide:
      // No classic division layer before specification 4: a / b = a * (1 / b), the unary inverse computing
      // 1 / (b + epsilon) with the smallest normal epsilon (0 would read as 1e-6), within one rounding of a / b.
      let inverse = name + "__inverse__"
      builder.unary(.inverse, inverse, input: inputs[1], output: inverse + "_output", epsilon: Self.unaryEpsilon(0))
      inputs[1] = inverse + "_output"
      operation = .multiply
    case .average: operation = .average
    case .maximum: operation = .max
    case .minimum: operation = .min
    default:
      throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "\(kind.rawValue) has no classic Core ML layer")
    }
    builder.elementwise(operation, name, inputs: inputs, output: output)
  }

  private mutating func emitConcatenate(axis: Int, rank: Int, name: String, inputs: [String], output: String) throws {
    func concat(_ inputs: [String], output: String, name: String, sequence: Bool = false) {
      builder.concat(name, inputs: inputs, output: output, sequence: sequence)
    }
    if rank == 2 && axis == 0 {
      // Time axis of [T, C] sequences: Core ML's sequence axis.
      concat(inputs, output: output, name: name, sequence: true)
      return
    }
    if axis == rank - 1 {
      concat(inputs, output: output, name: name)
      return
    }
    guard rank == 3 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: name, detail: "Concatenate on axis \(axis + 1) of a rank-\(rank + 1) tensor")
    }
    // Core ML concatenates channels only: swap H or W with C around the concat.
    let swap = axis == 0 ? [0, 2, 1, 3] : [0, 3, 2, 1]
    let swapped = inputs.enumerated().map { index, input -> String in
      let blob = "\(name)__swap_in_\(index)__"
      emitPermute(swap, name: blob, input: input, output: blob + "_output")
      return blob + "_output"
    }
    concat(swapped, output: name + "__concat___output", name: name + "__concat__")
    emitPermute(swap, name: name, input: name + "__concat___output", output: output)
  }

  // MARK: Activations

  mutating func emitActivation(_ activation: Activation, name: String, input: String, output: String, shape: [Int])
    throws
  {
    func simple(_ kind: NeuralNetworkActivation) throws {
      try builder.activation(kind, name, input: input, output: output)
    }
    func linear(_ name: String, _ input: String, _ output: String, alpha: Float, beta: Float) throws {
      try builder.activation(.linear(alpha: alpha, beta: beta), name, input: input, output: output)
    }
    /// min(x, maxValue) as -max(-x, -maxValue): Core ML's classic layers have max-threshold only.
    func clipAbove(_ input: String, maxValue: Float) throws {
      try linear(name + "__neg__", input, name + "__neg___output", alpha: -1, beta: 0)
      builder.unary(
        .threshold, name + "__clip__", input: name + "__neg___output", output: name + "__clip___output",
        alpha: -maxValue, scale: 1)
      try linear(name + "__neg2__", name + "__clip___output", output, alpha: -1, beta: 0)
    }

    switch activation {
    case .linear(let scale, let offset):
      try linear(name, input, output, alpha: scale, beta: offset)
    case .relu:
      try simple(.relu)
    case .clippedReLU(let maxValue, let slope, let threshold):
      guard slope == 0 || threshold == 0 else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: name, detail: "ReLU with both negative_slope and threshold has no Core ML mapping")
      }
      let stage = maxValue == nil ? output : name + "__relu___output"
      if threshold != 0 {
        guard threshold > 0 else {
          throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "ReLU with a negative threshold")
        }
        try emitActivation(
          .thresholdedReLU(theta: threshold), name: name + "__relu__", input: input, output: stage, shape: shape)
      } else if slope != 0 {
        try emitActivation(.leakyReLU(alpha: slope), name: name + "__relu__", input: input, output: stage, shape: shape)
      } else {
        try emitActivation(.relu, name: name + "__relu__", input: input, output: stage, shape: shape)
      }
      if let maxValue { try clipAbove(stage, maxValue: maxValue) }
    case .leakyReLU(let alpha):
      try simple(.leakyReLU(alpha: alpha))
    case .parametricReLU(let alpha):
      guard alpha.shape.count == 1 else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: name, detail: "PReLU needs shared_axes over H and W (one slope per channel) for Core ML")
      }
      try simple(.preLU(alpha: .values(alpha.values)))
    case .elu(let alpha):
      try simple(.elu(alpha: alpha))
    case .selu:
      try emitActivation(
        .elu(alpha: Activation.seluAlpha), name: name + "__elu__", input: input, output: name + "__elu___output",
        shape: shape)
      try linear(name, name + "__elu___output", output, alpha: Activation.seluScale, beta: 0)
    case .thresholdedReLU(let theta):
      try simple(.thresholdedReLU(alpha: theta))
    case .sigmoid:
      try simple(.sigmoid)
    case .hardSigmoid(let slope, let offset):
      try simple(.sigmoidHard(alpha: slope, beta: offset))
    case .tanh:
      try simple(.tanh)
    case .softplus:
      try simple(.softplus)
    case .softsign:
      try simple(.softsign)
    case .swish:
      try emitActivation(
        .sigmoid, name: name + "__sigmoid__", input: input, output: name + "__sigmoid___output", shape: shape)
      try emitElementwise(.multiply, name: name, inputs: [input, name + "__sigmoid___output"], output: output)
    case .hardSwish:
      // x * sigmoidHard(x) with alpha 1/6, beta 1/2: the classic network has no hard swish layer.
      try emitActivation(
        .hardSigmoid(slope: 1.0 / 6, offset: 0.5), name: name + "__gate__", input: input,
        output: name + "__gate___output", shape: shape)
      try emitElementwise(.multiply, name: name, inputs: [input, name + "__gate___output"], output: output)
    case .gelu(let approximate):
      try emitGelu(approximate: approximate, name: name, input: input, output: output)
    case .exponential:
      builder.unary(.exp, name, input: input, output: output, scale: 1)
    case .erf:
      throw CoreMLWriterError.unsupportedOperation(
        layer: name,
        detail: "erf has no classic Core ML layer (a GELU written with it is one when the whole formula is there)")
    case .sin, .cos, .floor, .ceil:
      // Layers of specification 4, which Core ML refuses beside rank-5 blobs: the rank-N network writes them.
      throw CoreMLWriterError.unsupportedOperation(
        layer: name, detail: "\(activation) is a specification 4 layer (the rank-N network writes it)")
    case .clip(let low, let high):
      // max(x, low) by a threshold, then min(x, high) as above; an unbounded side is left out.
      let bounded = high < Float.greatestFiniteMagnitude
      let stage = bounded ? name + "__low___output" : output
      if low > -Float.greatestFiniteMagnitude {
        builder.unary(.threshold, bounded ? name + "__low__" : name, input: input, output: stage, alpha: low, scale: 1)
      } else {
        try linear(bounded ? name + "__low__" : name, input, stage, alpha: 1, beta: 0)
      }
      if bounded { try clipAbove(stage, maxValue: high) }
    case .unary(let function):
      // Core ML reads an epsilon of 0 as 1e-6 and a scale of 0 as 1 ([rule UNARY-DEFAULTS]): an IR epsilon of
      // 0 is written as the smallest normal float (which changes no normal value), and a scale of 0 refused.
      guard function.scale != 0 else {
        throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "\(activation) with scale 0 is a constant")
      }
      let operation: NeuralNetworkUnaryOperation
      switch function.kind {
      case .sqrt: operation = .sqrt
      case .rsqrt: operation = .rsqrt
      case .inverse: operation = .inverse
      case .power: operation = .power
      case .exp: operation = .exp
      case .log: operation = .log
      case .abs: operation = .abs
      case .threshold: operation = .threshold
      }
      builder.unary(
        operation, name, input: input, output: output, alpha: function.alpha, shift: function.shift,
        scale: function.scale,
        epsilon: function.epsilon == 0 ? Float.leastNormalMagnitude : function.epsilon)
    }
  }
}
