import CoreMLCommon
import CProtobufC
import CoreMLSpec
import ModelIR

/// Turns IR nodes into classic (rank-5) Core ML neural-network layers.
///
/// This is where Keras' channels-last data meets Core ML's `[C, H, W]` blobs: kernels are
/// transposed here and axes are mapped here, nowhere else.
struct CoreMLLayerEmitter {
  let arena: MessageArena
  let graph: Graph
  let precision: WeightPrecision
  private(set) var layers: [UnsafeMutablePointer<NNLayer>] = []
  /// The lowest specification version the emitted layers need.
  private(set) var specificationVersion: Int32 = 1
  /// float32 weights whose values are set only while their layer is packed (`StreamedSpecification`):
  /// the writer never holds a second copy of a model's weights.
  private(set) var deferredWeights: [DeferredWeight] = []

  init(arena: MessageArena, graph: Graph, precision: WeightPrecision) {
    self.arena = arena
    self.graph = graph
    self.precision = precision
    if precision == .float16 { specificationVersion = 2 }
  }

  // MARK: Layer plumbing

  /// Notes that an emitted layer needs at least this specification version.
  mutating func raiseSpecificationVersion(to version: Int32) {
    specificationVersion = max(specificationVersion, version)
  }

  /// Appends a layer and returns it so the caller can set its parameters.
  @discardableResult
  mutating func layer(_ name: String, inputs: [String], output: String) -> UnsafeMutablePointer<NNLayer> {
    layer(name, inputs: inputs, outputs: [output])
  }

  /// Appends a layer with several output blobs (recurrent layers also output their final states).
  @discardableResult
  mutating func layer(_ name: String, inputs: [String], outputs: [String]) -> UnsafeMutablePointer<NNLayer> {
    let layer = arena.message(core_ml__specification__neural_network_layer__init)
    layer.pointee.name = arena.string(name)
    layer.pointee.n_input = inputs.count
    layer.pointee.input = arena.pointerArray(inputs.map(arena.string))
    layer.pointee.n_output = outputs.count
    layer.pointee.output = arena.pointerArray(outputs.map(arena.string))
    layers.append(layer)
    return layer
  }

  /// Weights with these values (already in Core ML's layout).
  mutating func weights(_ values: [Float], layer: String) throws -> UnsafeMutablePointer<WeightParams> {
    try weights(.values(values), layer: layer)
  }

  /// Weights in Core ML's layout, produced only while the layer is packed, a block at a time
  /// (`StreamedSpecification`), so a kernel is never held a second time in Core ML's layout. A float16
  /// model's values are checked against float16's range now (the first one outside, in Core ML's order,
  /// is the error, as when they were converted whole).
  mutating func weights(_ values: CoreMLWeightValues, layer: String) throws -> UnsafeMutablePointer<WeightParams> {
    let params = arena.message(core_ml__specification__weight_params__init)
    switch precision {
    case .float32:
      params.pointee.n_floatvalue = values.count
    case .float16:
      if let value = values.firstOutsideFloat16 { throw CoreMLWriterError.float16Overflow(layer: layer, value: value) }
      params.pointee.float16value.len = values.count * 2
    }
    deferredWeights.append(DeferredWeight(params: params, values: values, precision: precision))
    return params
  }

  func uint64s(_ values: [Int]) -> UnsafeMutablePointer<UInt64>? { arena.array(values.map { UInt64($0) }) }

  private func border(_ amounts: [(Int, Int)]) -> UnsafeMutablePointer<CoreML__Specification__BorderAmounts> {
    let border = arena.message(core_ml__specification__border_amounts__init)
    let edges = amounts.map { start, end -> UnsafeMutablePointer<CoreML__Specification__BorderAmounts__EdgeSizes> in
      let edge = arena.message(core_ml__specification__border_amounts__edge_sizes__init)
      edge.pointee.startedgesize = UInt64(start)
      edge.pointee.endedgesize = UInt64(end)
      return edge
    }
    border.pointee.n_borderamounts = edges.count
    border.pointee.borderamounts = arena.pointerArray(edges)
    return border
  }

  // MARK: Nodes

  /// Emits the layers for one node; the last layer writes the node's output blob.
  mutating func emit(_ node: Node) throws {
    let inputs = node.inputs.map { graph[$0].name }
    let output = graph[node.output].name
    func unsupported(_ detail: String) -> CoreMLWriterError { .unsupportedOperation(layer: node.name, detail: detail) }
    guard let first = node.inputs.first else { throw unsupported("\(node.operation.kindName) has no classic Core ML layer") }
    let inputShape = graph[first].type.shape
    switch node.operation {
    case .convolution2D(let conv):
      try emitConvolution(conv, name: node.name, input: inputs[0], output: output)

    case .dense(let dense):
      // Rank 2 is a [T, C] sequence: Core ML's innerProduct applies to every step.
      guard inputShape.count <= 2 else {
        throw unsupported("Dense on a rank-\(inputShape.count + 1) tensor \(inputShape) (rank 2 and 3 only, or an image's channels)")
      }
      let params = arena.message(core_ml__specification__inner_product_layer_params__init)
      params.pointee.inputchannels = UInt64(dense.inputUnits)
      params.pointee.outputchannels = UInt64(dense.outputUnits)
      // Keras stores [in, out]; Core ML wants [out, in].
      params.pointee.weights = try weights(.transposed(dense.kernel.values, rows: dense.inputUnits, columns: dense.outputUnits), layer: node.name)
      if let bias = dense.bias {
        params.pointee.hasbias = 1
        params.pointee.bias = try weights(bias.values, layer: node.name)
      }
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_INNER_PRODUCT
      layer.pointee.innerproduct = params

    case .batchNormalization(let norm):
      let params = arena.message(core_ml__specification__batchnorm_layer_params__init)
      params.pointee.channels = UInt64(norm.channels)
      // Core ML reads an epsilon of 0 as 1e-5 ([rule BATCHNORM-EPSILON]): a Keras epsilon of 0 is written as the
      // smallest normal float, which adds nothing a variance can notice.
      params.pointee.epsilon = norm.epsilon == 0 ? Float.leastNormalMagnitude : norm.epsilon
      params.pointee.gamma = try weights(norm.gamma.values, layer: node.name)
      params.pointee.beta = try weights(norm.beta.values, layer: node.name)
      params.pointee.mean = try weights(norm.mean.values, layer: node.name)
      params.pointee.variance = try weights(norm.variance.values, layer: node.name)
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHNORM
      layer.pointee.batchnorm = params

    case .activation(let activation):
      try emitActivation(activation, name: node.name, input: inputs[0], output: output, shape: inputShape)

    case .softmax(let axis):
      // Core ML's classic softmax runs over C, which is Keras' last axis.
      guard axis == inputShape.count - 1 else { throw unsupported("softmax on axis \(axis) of \(inputShape) (only the last axis)") }
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX
      layer.pointee.softmax = arena.message(core_ml__specification__softmax_layer_params__init)

    case .pooling2D(let pool):
      emitPooling(
        pool.kind, kernel: [pool.poolHeight, pool.poolWidth], stride: [pool.strideHeight, pool.strideWidth],
        padding: pool.padding, global: false, name: node.name, input: inputs[0], output: output)

    case .globalPooling2D(let kind, _):
      emitPooling(
        kind, kernel: [inputShape[inputShape.count - 3], inputShape[inputShape.count - 2]], stride: [1, 1], padding: .valid, global: true,
        name: node.name, input: inputs[0], output: output)

    case .flatten where inputShape.count == 2:
      // A [T, C] sequence: move time into W first; CHANNEL_LAST then reads W-major, C-minor, as Keras does.
      emitPermute(Self.sequenceToRow, name: node.name + "__row__", input: inputs[0], output: node.name + "__row___output")
      emitFlatten(name: node.name, input: node.name + "__row___output", output: output)

    case .flatten where inputShape.count == 4:
      // [T, H, W, C]: Core ML's flatten works per sequence step; flatten each step, then join the steps.
      let steps = node.name + "__steps___output"
      emitFlatten(name: node.name + "__steps__", input: inputs[0], output: steps)
      try emitReshape(from: [inputShape[0], inputShape.dropFirst().reduce(1, *)], to: [inputShape.reduce(1, *)], name: node.name, input: steps, output: output)

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
      try emitReshape(from: [inputShape[0], inputShape.dropFirst().reduce(1, *)], to: target, name: node.name, input: steps, output: output)

    case .reshape(let target):
      try emitReshape(from: inputShape, to: target, name: node.name, input: inputs[0], output: output)

    case .permute(let order) where order == [1, 0]:
      // [T, C] -> [C, T]: Core ML's sequence and channel axes trade places.
      emitPermute([1, 0, 2, 3], name: node.name, input: inputs[0], output: output)

    case .permute(let order):
      guard order.count == 3 else {
        throw CoreMLWriterError.unsupportedOperation(layer: node.name, detail: "Permute of a rank-\(order.count + 1) tensor (only [T, C] and [H, W, C] tensors)")
      }
      emitPermute(Self.coreMLPermutation(order), name: node.name, input: inputs[0], output: output)

    case .zeroPadding2D(let box):
      let params = arena.message(core_ml__specification__padding_layer_params__init)
      params.pointee.padding_type_case = CORE_ML__SPECIFICATION__PADDING_LAYER_PARAMS__PADDING_TYPE_CONSTANT
      params.pointee.constant = arena.message(core_ml__specification__padding_layer_params__padding_constant__init)
      params.pointee.paddingamounts = border([(box.top, box.bottom), (box.left, box.right)])
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PADDING
      layer.pointee.padding = params

    case .cropping2D(let box):
      let params = arena.message(core_ml__specification__crop_layer_params__init)
      params.pointee.cropamounts = border([(box.top, box.bottom), (box.left, box.right)])
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CROP
      layer.pointee.crop = params

    case .upsampling2D(let height, let width, let bilinear):
      let params = arena.message(core_ml__specification__upsample_layer_params__init)
      params.pointee.n_scalingfactor = 2
      params.pointee.scalingfactor = uint64s([height, width])
      if bilinear {
        // Keras resizes with half-pixel centres, which is Core ML's ALIGN_CORNERS_FALSE: a linearUpsampleMode
        // other than DEFAULT is an iOS 14 feature, specification 5 ([rule UPSAMPLE-VERSION]).
        params.pointee.mode = CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__INTERPOLATION_MODE__BILINEAR
        params.pointee.linearupsamplemode = CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__LINEAR_UPSAMPLE_MODE__ALIGN_CORNERS_FALSE
        specificationVersion = max(specificationVersion, 5)
      }
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UPSAMPLE
      layer.pointee.upsample = params

    case .elementwise(let kind):
      try emitElementwise(kind, name: node.name, inputs: inputs, output: output)

    case .concatenate(let axis):
      try emitConcatenate(axis: axis, rank: inputShape.count, name: node.name, inputs: inputs, output: output)

    case .recurrent(let recurrent):
      try emitRecurrent(recurrent, name: node.name, input: inputs[0], output: output, inputShape: inputShape)

    case .embedding(let table):
      try emitEmbedding(table, name: node.name, input: inputs[0], output: output)

    case .custom(let custom):
      try emitCustom(custom, name: node.name, inputs: inputs, output: output)

    case .cast:
      // Neural networks keep float32 blobs; float16 storage is a weight setting (`--precision`).
      throw unsupported("a cast has no classic Core ML layer; neural networks compute in float32")

    case .convolutionTranspose(let conv):
      try emitConvolutionTranspose(conv, name: node.name, input: inputs[0], output: output)

    case .layerNormalization(let norm):
      try emitLayerNormalization(norm, name: node.name, input: inputs[0], output: output, channels: inputShape.last ?? 1)

    case .l2Normalize(let epsilon):
      // Core ML's l2normalize spans C, H and W together: Keras' last axis only for vectors and sequences.
      guard inputShape.count <= 2 else {
        try emitChannelL2Normalize(epsilon: epsilon, name: node.name, input: inputs[0], output: output)
        return
      }
      let params = arena.message(core_ml__specification__l2_normalize_layer_params__init)
      params.pointee.epsilon = epsilon
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_L2NORMALIZE
      layer.pointee.l2normalize = params

    case .dot(let cosine):
      let params = arena.message(core_ml__specification__dot_product_layer_params__init)
      params.pointee.cosinesimilarity = cosine ? 1 : 0
      let layer = layer(node.name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_DOT
      layer.pointee.dot = params

    case .constant, .reduce, .constantPad, .slice:
      throw unsupported("\(node.operation.kindName) has no classic Core ML layer")
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
  mutating func emitReshape(from inputShape: [Int], to target: [Int], name: String, input: String, output: String) throws {
    func reshape(_ shape4: [Int], name: String, input: String, output: String) {
      let params = arena.message(core_ml__specification__reshape_layer_params__init)
      params.pointee.n_targetshape = 4
      params.pointee.targetshape = arena.array(shape4.map { Int64($0) })
      params.pointee.mode = CORE_ML__SPECIFICATION__RESHAPE_LAYER_PARAMS__RESHAPE_ORDER__CHANNEL_LAST
      let layer = layer(name, inputs: [input], output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE
      layer.pointee.reshape = params
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
    let params = arena.message(core_ml__specification__flatten_layer_params__init)
    params.pointee.mode = CORE_ML__SPECIFICATION__FLATTEN_LAYER_PARAMS__FLATTEN_ORDER__CHANNEL_LAST
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN
    layer.pointee.flatten = params
  }

  /// A deconvolution: weights `[in, out, kh, kw]` (as coremltools writes them) and the output size
  /// given explicitly, so output padding and same padding land as Keras puts them.
  private mutating func emitConvolutionTranspose(_ conv: ConvolutionTranspose, name: String, input: String, output: String) throws {
    let (kh, kw, co, ci) = (conv.kernel.shape[0], conv.kernel.shape[1], conv.kernel.shape[2], conv.kernel.shape[3])
    var values = [Float](repeating: 0, count: conv.kernel.count)
    for y in 0..<kh {
      for x in 0..<kw {
        for o in 0..<co { for i in 0..<ci { values[((i * co + o) * kh + y) * kw + x] = conv.kernel.values[((y * kw + x) * co + o) * ci + i] } }
      }
    }
    let params = arena.message(core_ml__specification__convolution_layer_params__init)
    params.pointee.outputchannels = UInt64(co)
    params.pointee.kernelchannels = UInt64(ci)
    params.pointee.ngroups = 1
    params.pointee.n_kernelsize = 2
    params.pointee.kernelsize = uint64s([kh, kw])
    params.pointee.n_stride = 2
    params.pointee.stride = uint64s(conv.strides)
    params.pointee.n_dilationfactor = 2
    params.pointee.dilationfactor = uint64s([1, 1])
    params.pointee.isdeconvolution = 1
    params.pointee.n_outputshape = 2
    params.pointee.outputshape = uint64s(conv.outputSize)
    setPadding(conv.padding, on: params)
    params.pointee.weights = try weights(values, layer: name)
    if let bias = conv.bias {
      params.pointee.hasbias = 1
      params.pointee.bias = try weights(bias.values, layer: name)
    }
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONVOLUTION
    layer.pointee.convolution = params
  }

  private mutating func emitConvolution(_ conv: Convolution2D, name: String, input: String, output: String) throws {
    let params = arena.message(core_ml__specification__convolution_layer_params__init)
    params.pointee.outputchannels = UInt64(conv.outputChannels)
    params.pointee.kernelchannels = UInt64(conv.inputChannelsPerGroup)
    params.pointee.ngroups = UInt64(conv.groups)
    params.pointee.n_kernelsize = 2
    params.pointee.kernelsize = uint64s([conv.kernelHeight, conv.kernelWidth])
    params.pointee.n_stride = 2
    params.pointee.stride = uint64s([conv.strideHeight, conv.strideWidth])
    params.pointee.n_dilationfactor = 2
    params.pointee.dilationfactor = uint64s([conv.dilationHeight, conv.dilationWidth])
    params.pointee.weights = try weights(.convolutionKernel(conv.kernel), layer: name)
    if let bias = conv.bias {
      params.pointee.hasbias = 1
      params.pointee.bias = try weights(bias.values, layer: name)
    }
    setPadding(conv.padding, on: params)
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONVOLUTION
    layer.pointee.convolution = params
  }

  /// Same (bottom/right heavy, as TensorFlow) or valid padding on convolution parameters.
  private func setPadding(_ padding: Padding, on params: UnsafeMutablePointer<CoreML__Specification__ConvolutionLayerParams>) {
    switch padding {
    case .same:
      params.pointee.convolution_padding_type_case = CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_SAME
      params.pointee.same = arena.message(core_ml__specification__same_padding__init)
    case .valid:
      params.pointee.convolution_padding_type_case = CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID
      params.pointee.valid = validPadding()
    }
  }

  private func validPadding() -> UnsafeMutablePointer<CoreML__Specification__ValidPadding> {
    let valid = arena.message(core_ml__specification__valid_padding__init)
    valid.pointee.paddingamounts = border([(0, 0), (0, 0)])
    return valid
  }

  /// A pooling layer; average pooling always excludes the padding, as TensorFlow does.
  private mutating func emitPooling(
    _ kind: PoolingKind, kernel: [Int], stride: [Int], padding: Padding, global: Bool, name: String, input: String, output: String
  ) {
    let params = arena.message(core_ml__specification__pooling_layer_params__init)
    params.pointee.type = kind == .max ? CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_TYPE__MAX : CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_TYPE__AVERAGE
    params.pointee.n_kernelsize = 2
    params.pointee.kernelsize = uint64s(kernel)
    params.pointee.n_stride = 2
    params.pointee.stride = uint64s(stride)
    params.pointee.avgpoolexcludepadding = 1
    params.pointee.globalpooling = global ? 1 : 0
    switch padding {
    case .same:
      params.pointee.pooling_padding_type_case = CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME
      params.pointee.same = arena.message(core_ml__specification__same_padding__init)
    case .valid:
      params.pointee.pooling_padding_type_case = CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID
      params.pointee.valid = validPadding()
    }
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POOLING
    layer.pointee.pooling = params
  }

  mutating func emitPermute(_ axes: [Int], name: String, input: String, output: String) {
    let params = arena.message(core_ml__specification__permute_layer_params__init)
    params.pointee.n_axis = 4
    params.pointee.axis = uint64s(axes)
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PERMUTE
    layer.pointee.permute = params
  }

  /// add, subtract (as `add` of the negated second input), multiply, average, max or min of blobs.
  mutating func emitElementwise(_ kind: ElementwiseKind, name: String, inputs: [String], output: String) throws {
    var inputs = inputs
    var layerCase = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD
    switch kind {
    case .add: break
    case .subtract:
      // Core ML's classic layers have no subtraction: a - b = a + (-1 * b).
      let negated = name + "__negated__"
      let arena = self.arena
      emitSimpleActivation(name: negated, input: inputs[1], output: negated + "_output") { params in
        params.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR
        let linear = arena.message(core_ml__specification__activation_linear__init)
        linear.pointee.alpha = -1
        params.pointee.linear = linear
      }
      inputs[1] = negated + "_output"
    case .multiply: layerCase = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY
    case .average: layerCase = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_AVERAGE
    case .maximum: layerCase = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MAX
    case .minimum: layerCase = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MIN
    default: throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "\(kind.rawValue) has no classic Core ML layer")
    }
    let layer = layer(name, inputs: inputs, output: output)
    layer.pointee.layer_case = layerCase
    switch layerCase {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD: layer.pointee.add = arena.message(core_ml__specification__add_layer_params__init)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY: layer.pointee.multiply = arena.message(core_ml__specification__multiply_layer_params__init)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_AVERAGE: layer.pointee.average = arena.message(core_ml__specification__average_layer_params__init)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MAX: layer.pointee.max = arena.message(core_ml__specification__max_layer_params__init)
    default: layer.pointee.min = arena.message(core_ml__specification__min_layer_params__init)
    }
  }

  private mutating func emitConcatenate(axis: Int, rank: Int, name: String, inputs: [String], output: String) throws {
    func concat(_ inputs: [String], output: String, name: String, sequence: Bool = false) {
      let layer = layer(name, inputs: inputs, output: output)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT
      layer.pointee.concat = arena.message(core_ml__specification__concat_layer_params__init)
      layer.pointee.concat.pointee.sequenceconcat = sequence ? 1 : 0
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
      throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "Concatenate on axis \(axis + 1) of a rank-\(rank + 1) tensor")
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

  mutating func emitSimpleActivation(name: String, input: String, output: String, _ configure: (UnsafeMutablePointer<CoreML__Specification__ActivationParams>) -> Void) {
    let params = arena.message(core_ml__specification__activation_params__init)
    configure(params)
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ACTIVATION
    layer.pointee.activation = params
  }

  mutating func emitActivation(_ activation: Activation, name: String, input: String, output: String, shape: [Int]) throws {
    let a = arena
    func simple(_ name: String, _ input: String, _ output: String, _ configure: (UnsafeMutablePointer<CoreML__Specification__ActivationParams>) -> Void) {
      emitSimpleActivation(name: name, input: input, output: output, configure)
    }
    func linear(_ name: String, _ input: String, _ output: String, alpha: Float, beta: Float) {
      simple(name, input, output) { p in
        p.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR
        let params = a.message(core_ml__specification__activation_linear__init)
        params.pointee.alpha = alpha
        params.pointee.beta = beta
        p.pointee.linear = params
      }
    }
    /// An activation layer selecting one nonlinearity, whose message `configure` fills in.
    func nonlinearity<T>(
      _ kind: CoreML__Specification__ActivationParams__NonlinearityTypeCase,
      _ field: WritableKeyPath<CoreML__Specification__ActivationParams, UnsafeMutablePointer<T>?>,
      _ initialize: (UnsafeMutablePointer<T>?) -> Void,
      configure: (UnsafeMutablePointer<T>) -> Void = { _ in }
    ) {
      simple(name, input, output) { p in
        p.pointee.nonlinearity_type_case = kind
        let message = a.message(initialize)
        configure(message)
        p.pointee[keyPath: field] = message
      }
    }
    /// min(x, maxValue) as -max(-x, -maxValue): Core ML's classic layers have max-threshold only.
    func clipAbove(_ input: String, maxValue: Float) {
      linear(name + "__neg__", input, name + "__neg___output", alpha: -1, beta: 0)
      let unary = a.message(core_ml__specification__unary_function_layer_params__init)
      unary.pointee.type = CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__THRESHOLD
      unary.pointee.alpha = -maxValue
      unary.pointee.scale = 1
      let clip = layer(name + "__clip__", inputs: [name + "__neg___output"], output: name + "__clip___output")
      clip.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY
      clip.pointee.unary = unary
      linear(name + "__neg2__", name + "__clip___output", output, alpha: -1, beta: 0)
    }

    switch activation {
    case .linear(let scale, let offset):
      linear(name, input, output, alpha: scale, beta: offset)
    case .relu:
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_RE_LU, \.relu, core_ml__specification__activation_re_lu__init)
    case .clippedReLU(let maxValue, let slope, let threshold):
      guard slope == 0 || threshold == 0 else {
        throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "ReLU with both negative_slope and threshold has no Core ML mapping")
      }
      let stage = maxValue == nil ? output : name + "__relu___output"
      if threshold != 0 {
        guard threshold > 0 else { throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "ReLU with a negative threshold") }
        try emitActivation(.thresholdedReLU(theta: threshold), name: name + "__relu__", input: input, output: stage, shape: shape)
      } else if slope != 0 {
        try emitActivation(.leakyReLU(alpha: slope), name: name + "__relu__", input: input, output: stage, shape: shape)
      } else {
        try emitActivation(.relu, name: name + "__relu__", input: input, output: stage, shape: shape)
      }
      if let maxValue { clipAbove(stage, maxValue: maxValue) }
    case .leakyReLU(let alpha):
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LEAKY_RE_LU, \.leakyrelu, core_ml__specification__activation_leaky_re_lu__init) {
        $0.pointee.alpha = alpha
      }
    case .parametricReLU(let alpha):
      guard alpha.shape.count == 1 else {
        throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "PReLU needs shared_axes over H and W (one slope per channel) for Core ML")
      }
      let weights = try weights(alpha.values, layer: name)
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PRE_LU, \.prelu, core_ml__specification__activation_pre_lu__init) {
        $0.pointee.alpha = weights
      }
    case .elu(let alpha):
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_ELU, \.elu, core_ml__specification__activation_elu__init) {
        $0.pointee.alpha = alpha
      }
    case .selu:
      try emitActivation(.elu(alpha: Activation.seluAlpha), name: name + "__elu__", input: input, output: name + "__elu___output", shape: shape)
      linear(name, name + "__elu___output", output, alpha: Activation.seluScale, beta: 0)
    case .thresholdedReLU(let theta):
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_THRESHOLDED_RE_LU, \.thresholdedrelu, core_ml__specification__activation_thresholded_re_lu__init) {
        $0.pointee.alpha = theta
      }
    case .sigmoid:
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID, \.sigmoid, core_ml__specification__activation_sigmoid__init)
    case .hardSigmoid(let slope, let offset):
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD, \.sigmoidhard, core_ml__specification__activation_sigmoid_hard__init) {
        $0.pointee.alpha = slope
        $0.pointee.beta = offset
      }
    case .tanh:
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_TANH, \.tanh, core_ml__specification__activation_tanh__init)
    case .softplus:
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SOFTPLUS, \.softplus, core_ml__specification__activation_softplus__init)
    case .softsign:
      nonlinearity(CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SOFTSIGN, \.softsign, core_ml__specification__activation_softsign__init)
    case .swish:
      try emitActivation(.sigmoid, name: name + "__sigmoid__", input: input, output: name + "__sigmoid___output", shape: shape)
      try emitElementwise(.multiply, name: name, inputs: [input, name + "__sigmoid___output"], output: output)
    case .gelu(let approximate):
      try emitGelu(approximate: approximate, name: name, input: input, output: output)
    case .exponential:
      let unary = a.message(core_ml__specification__unary_function_layer_params__init)
      unary.pointee.type = CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__EXP
      unary.pointee.scale = 1
      let exp = layer(name, inputs: [input], output: output)
      exp.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY
      exp.pointee.unary = unary
    case .clip, .unary:
      throw CoreMLWriterError.unsupportedOperation(layer: name, detail: "\(activation) has no classic Core ML layer")
    }
  }
}
