import ModelIR

/// The operators, with TFLite's semantics (its kernels' documented behaviour, `tflite/kernels/*.cc`) in the
/// IR's terms. Options slots are schema.fbs's declaration order.
extension TFLiteContext {
  /// `Padding`: SAME = 0, VALID = 1 (TensorFlow's same padding, the extra pixel after).
  func padding(_ code: Int8) throws -> Padding {
    switch code {
    case 0: return .same
    case 1: return .valid
    default: throw fail("padding \(code) is neither SAME nor VALID")
    }
  }

  func positive(_ values: [Int32], _ what: String) throws -> [Int] {
    guard values.allSatisfy({ $0 >= 1 && $0 <= 1 << 16 }) else { throw fail("\(what) \(values) must be positive") }
    return values.map(Int.init)
  }

  /// CONV_2D (filter `[O, KH, KW, I]`) and DEPTHWISE_CONV_2D (filter `[1, KH, KW, C * multiplier]`, output
  /// channel `c * multiplier + m` reading channel `c`, as the IR's depthwise layout).
  mutating func convolution(depthwise: Bool) throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    guard shape.count == 3 else { throw fail("input of shape \(shape) (images [1, H, W, C] only)") }
    let filter = try constant(1)
    guard filter.shape.count == 4 else { throw fail("filter of shape \(filter.shape)") }
    let (o, kh, kw, i) = (filter.shape[0], filter.shape[1], filter.shape[2], filter.shape[3])
    let table = try options(depthwise ? 2 : 1)
    let field = depthwise ? "DepthwiseConv2DOptions" : "Conv2DOptions"
    let padding = try padding(try table?.i8(0, field + ".padding") ?? 0)
    let strides = try positive(
      [try table?.i32(2, field + ".stride_h") ?? 1, try table?.i32(1, field + ".stride_w") ?? 1], "strides")
    let dilationSlots = depthwise ? (6, 5) : (5, 4)
    let dilations = try positive(
      [
        try table?.i32(dilationSlots.0, field + ".dilation_h_factor", default: 1) ?? 1,
        try table?.i32(dilationSlots.1, field + ".dilation_w_factor", default: 1) ?? 1,
      ], "dilations")
    let activation = try table?.i8(depthwise ? 4 : 3, field + ".fused_activation_function") ?? 0
    let channels = shape[2]
    var kernel: Constant
    var groups: Int
    if depthwise {
      guard o == 1, i % channels == 0 else {
        throw fail("depthwise filter \(filter.shape) does not fit \(channels) input channels")
      }
      // [1, KH, KW, C*m] is already [KH, KW, 1, C*m] in row-major order.
      kernel = Constant(shape: [kh, kw, 1, i], values: filter.values)
      groups = channels
    } else {
      guard i > 0, channels % i == 0, o % (channels / i) == 0 else {
        throw fail("filter \(filter.shape) does not fit \(channels) input channels")
      }
      // [O, KH, KW, I] -> [KH, KW, I, O].
      var values = [Float](repeating: 0, count: filter.values.count)
      for a in 0..<o {
        for y in 0..<kh {
          for x in 0..<kw {
            for c in 0..<i { values[((y * kw + x) * i + c) * o + a] = filter.values[((a * kh + y) * kw + x) * i + c] }
          }
        }
      }
      kernel = Constant(shape: [kh, kw, i, o], values: values)
      groups = channels / i
    }
    let outputs = kernel.shape[3]
    let bias = isConstant(2) ? try constant(2) : nil
    if let bias, bias.values.count != outputs { throw fail("bias of \(bias.values.count) for \(outputs) outputs") }
    let conv = Convolution2D(
      kernel: kernel, bias: bias.map { Constant(shape: [outputs], values: $0.values) }, strides: strides,
      dilations: dilations, padding: padding, groups: groups)
    try fused(activation, after: .convolution2D(conv), [x])
  }

  /// AVERAGE_POOL_2D (the padding left out of each average) and MAX_POOL_2D.
  mutating func pooling(_ kind: PoolingKind) throws {
    let x = try value(0)
    guard let table = try options(5) else { throw fail("no Pool2DOptions") }
    let strides = try positive(
      [try table.i32(2, "Pool2DOptions.stride_h"), try table.i32(1, "Pool2DOptions.stride_w")], "strides")
    let pool = try positive(
      [try table.i32(4, "Pool2DOptions.filter_height"), try table.i32(3, "Pool2DOptions.filter_width")], "filter")
    let padding = try padding(try table.i8(0, "Pool2DOptions.padding"))
    try fused(
      try table.i8(5, "Pool2DOptions.fused_activation_function"),
      after: .pooling2D(Pooling2D(kind: kind, pool: pool, strides: strides, padding: padding)), [x])
  }

  /// PAD and PADV2: `paddings` `[rank, 2]`; the batch row must be zeros.
  mutating func pad() throws {
    let x = try value(0)
    let rank = builder.type(of: x).shape.count
    let paddings = try ints(1)
    guard paddings.count == 2 * (rank + 1), paddings[0] == 0, paddings[1] == 0, paddings.allSatisfy({ $0 >= 0 }) else {
      throw fail("paddings \(paddings) for a rank-\(rank + 1) tensor (the batch axis unpadded, none negative)")
    }
    var value: Float = 0
    if op.inputs.count > 2, op.inputs[2] >= 0 {
      let constant = try constant(2)
      guard constant.values.count == 1 else { throw fail("a padding value of \(constant.values.count) elements") }
      value = constant.values[0]
    }
    let before = stride(from: 2, to: paddings.count, by: 2).map { paddings[$0] }
    let after = stride(from: 3, to: paddings.count, by: 2).map { paddings[$0] }
    _ = try add(.constantPad(ConstantPadding(before: before, after: after, value: value)), [x])
  }

  /// RESIZE_BILINEAR and RESIZE_NEAREST_NEIGHBOR by whole factors: `half_pixel_centers` is TensorFlow 2's
  /// sampling, `align_corners` the corners aligned, neither TensorFlow 1's asymmetric one.
  mutating func resize(bilinear: Bool) throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    let size = try ints(1)
    guard shape.count == 3, size.count == 2, size[0] > 0, size[1] > 0, size[0] % shape[0] == 0,
      size[1] % shape[1] == 0
    else { throw fail("resizing \(shape) to \(size): whole factors of an image only") }
    let table = try options(bilinear ? 15 : 74)
    let field = bilinear ? "ResizeBilinearOptions" : "ResizeNearestNeighborOptions"
    let alignCorners = try table?.bool(bilinear ? 2 : 0, field + ".align_corners") ?? false
    let halfPixel = try table?.bool(bilinear ? 3 : 1, field + ".half_pixel_centers") ?? false
    let mode: UpsamplingMode
    if bilinear {
      mode = alignCorners ? .bilinearAlignCorners : halfPixel ? .bilinear : .bilinearAsymmetric
    } else {
      // With whole factors, half-pixel and asymmetric nearest sampling both read floor(i / f).
      guard !alignCorners else { throw fail("nearest-neighbour resizing with align_corners") }
      mode = .nearest
    }
    _ = try add(.upsampling2D(height: size[0] / shape[0], width: size[1] / shape[1], mode: mode), [x])
  }

  /// FULLY_CONNECTED: weights `[O, I]`; a rank-3 input keeps its leading axes (`keep_num_dims`) or is
  /// flattened to rows of `I`, as the output's shape says.
  mutating func fullyConnected() throws {
    let x = try value(0)
    let weights = try constant(1)
    guard weights.shape.count == 2 else { throw fail("weights of shape \(weights.shape)") }
    let (o, i) = (weights.shape[0], weights.shape[1])
    guard builder.type(of: x).shape.last == i else {
      throw fail("weights \(weights.shape) for an input of shape \(builder.type(of: x).shape)")
    }
    var kernel = [Float](repeating: 0, count: o * i)
    for a in 0..<o { for b in 0..<i { kernel[b * o + a] = weights.values[a * i + b] } }
    let bias = isConstant(2) ? try constant(2) : nil
    let table = try options(8)
    let activation = try table?.i8(0, "FullyConnectedOptions.fused_activation_function") ?? 0
    let dense = Dense(
      kernel: Constant(shape: [i, o], values: kernel), bias: bias.map { Constant(shape: [o], values: $0.values) })
    var input = x
    let inputShape = builder.type(of: x).shape
    if unbatched.contains(op.inputs[0]) {
      // [rows, I] rows at once: [rows, O], every axis kept.
      guard inputShape.count == 2, activation == 0 else {
        throw fail("a fully connected layer over \(inputShape) rows with a fused activation")
      }
      _ = try add(.dense(dense), [x], checked: false)
      unbatched.insert(op.outputs[0])
      return
    }
    let keepDims = try table?.bool(2, "FullyConnectedOptions.keep_num_dims") ?? false
    let expected = try declaredShape(output, role: "output") ?? (keepDims ? Array(inputShape.dropLast()) + [o] : [o])
    if inputShape.count > 1 && expected.count == 1 {
      input = try add(.reshape(targetShape: [inputShape.reduce(1, *)]), [x], final: false)
    }
    try fused(activation, after: .dense(dense), [input])
  }

  /// ADD, SUB, MUL, DIV with numpy broadcasting and a fused activation.
  mutating func binary(_ kind: ElementwiseKind, optionsTag: Int) throws {
    let rank = max(try tensor(0).shape.count, try tensor(1).shape.count)
    let a = try value(0, broadcastRank: rank)
    let b = try value(1, broadcastRank: rank)
    let activation = try options(optionsTag)?.i8(0, "fused_activation_function") ?? 0
    try fused(activation, after: .elementwise(kind), [a, b])
  }

  /// CAST to a float type: the values (booleans, integers) as they are here, all float32. Casts to an integer
  /// type truncate, which is not written.
  mutating func cast() throws {
    guard output.type == .float32 || output.type == .float16 else {
      throw fail("a cast to \(output.type.name) (integer casts truncate)")
    }
    _ = try add(.activation(.linear(scale: 1, offset: 0)), [try value(0)])
  }

  /// SELECT and SELECT_V2: `condition ? x : y`, broadcast.
  mutating func select(optionsTag: Int) throws {
    let rank = try (0..<3).map { try tensor($0).shape.count }.max() ?? 0
    let inputs = try (0..<3).map { try value($0, broadcastRank: rank) }
    _ = try options(optionsTag)
    _ = try add(.elementwise(.select), inputs)
  }

  mutating func concatenation() throws {
    let rank = try tensor(0).shape.count
    let inputs = try op.inputs.indices.map { try value($0, broadcastRank: rank) }
    let table = try options(10)
    var axis = Int(try table?.i32(0, "ConcatenationOptions.axis") ?? 0)
    if axis < 0 { axis += rank }
    guard axis >= 1, axis < rank else { throw fail("concatenation along axis \(axis) of rank \(rank) (not the batch)") }
    try fused(
      try table?.i8(1, "ConcatenationOptions.fused_activation_function") ?? 0, after: .concatenate(axis: axis - 1),
      inputs)
  }

  mutating func activation(_ activation: Activation) throws {
    _ = try add(.activation(activation), [try value(0)])
  }

  mutating func prelu() throws {
    let x = try value(0)
    var alpha = try constant(1)
    if alpha.shape.count == builder.type(of: x).shape.count + 1, alpha.shape.first == 1 {
      alpha = Constant(shape: Array(alpha.shape.dropFirst()), values: alpha.values)
    }
    // Slopes `[1, 1, C]` broadcast over every axis but the channels: one slope per channel, `[C]` (what a
    // classic network's PReLU holds; MediaPipe's models store them so).
    if let channels = alpha.shape.last, alpha.shape.count > 1, alpha.shape.dropLast().allSatisfy({ $0 == 1 }),
      builder.type(of: x).shape.last == channels
    {
      alpha = Constant(shape: [channels], values: alpha.values)
    }
    _ = try add(.activation(.parametricReLU(alpha: alpha)), [x])
  }

  /// SOFTMAX over the last axis of `beta * x`.
  mutating func softmax() throws {
    var x = try value(0)
    let beta = try options(9)?.f32(0, "SoftmaxOptions.beta", default: 1) ?? 1
    guard beta.isFinite else { throw fail("softmax beta \(beta)") }
    if beta != 1 { x = try add(.activation(.linear(scale: beta, offset: 0)), [x], final: false) }
    _ = try add(.softmax(axis: builder.type(of: x).shape.count - 1), [x])
  }

  /// RESHAPE, SQUEEZE and EXPAND_DIMS: to the output's shape (what the file computed for it, or, where the
  /// file leaves it open, what the target, the axes or the axis give). A target whose first axis is not 1
  /// (a Tensordot's `[rows, K]`) keeps every axis in the IR (`unbatched`), as does its value back to a batch.
  mutating func reshape(code: Int) throws {
    if try framedReshape(code: code) { return }
    let x = try value(0)
    let inputIndex = op.inputs[0]
    let fileShape = unbatched.contains(inputIndex) ? builder.type(of: x).shape : [1] + builder.type(of: x).shape
    let target: [Int]
    if let declared = try declaredShape(output, role: "output"), !unbatched.contains(inputIndex),
      code != 22 || op.inputs.count < 2 || !isConstant(1) || foldedShapes[op.inputs[1]] == nil
    {
      target = declared
    } else {
      let full = try reshapedShape(of: fileShape, code: code)
      if full.first != 1 {
        guard !full.isEmpty else { throw fail("reshaping \(fileShape) to a scalar") }
        _ = try add(.reshape(targetShape: full), [x], checked: false)
        unbatched.insert(op.outputs[0])
        return
      }
      target = full.count == 1 ? [1] : Array(full.dropFirst())
    }
    _ = try add(.reshape(targetShape: target), [x], checked: !unbatched.contains(inputIndex))
  }

  mutating func transpose() throws {
    let x = try value(0)
    let permutation = try ints(1)
    let rank = builder.type(of: x).shape.count + 1
    guard permutation.count == rank, permutation.first == 0, Set(permutation) == Set(0..<rank) else {
      throw fail("permutation \(permutation) (the batch axis kept first)")
    }
    _ = try add(.permute(order: permutation.dropFirst().map { $0 - 1 }), [x])
  }

  /// DEQUANTIZE of a constant (float16 or int8 weights) is the float constant it stands for, read once;
  /// of a computed tensor (a full-integer model's edge), the float value it already is here.
  mutating func dequantize() throws {
    let input = try tensor(0)
    if isConstant(0) {
      folded[op.outputs[0]] = try constant(0).values
      return
    }
    _ = try add(.activation(.linear(scale: 1, offset: 0)), [try value(0)])
    if !notes.contains(where: { $0.hasPrefix("DEQUANTIZE") }) {
      notes.append("DEQUANTIZE of '\(input.name)': the model computes in float32 here")
    }
  }

  /// TRANSPOSE_CONV: inputs output shape `[1, H, W, O]`, weights `[O, KH, KW, I]`, the input, an optional bias;
  /// TensorFlow's same or valid padding (Keras' Conv2DTranspose, the IR's transposed convolution).
  mutating func transposeConvolution() throws {
    let outputShape = try ints(0)
    let weights = try constant(1)
    let x = try value(2)
    let shape = builder.type(of: x).shape
    guard outputShape.count == 4, outputShape[0] == 1, weights.shape.count == 4, shape.count == 3,
      weights.shape[3] == shape[2], weights.shape[0] == outputShape[3]
    else { throw fail("output shape \(outputShape), weights \(weights.shape) for an input of shape \(shape)") }
    let table = try options(49)
    let padding = try padding(try table?.i8(0, "TransposeConvOptions.padding") ?? 0)
    let strides = try positive(
      [
        try table?.i32(2, "TransposeConvOptions.stride_h") ?? 1,
        try table?.i32(1, "TransposeConvOptions.stride_w") ?? 1,
      ],
      "strides")
    let bias = op.inputs.count > 3 && isConstant(3) ? try constant(3) : nil
    try transposed(
      x, weights: weights, bias: bias, padding: padding, strides: strides,
      outputSize: [outputShape[1], outputShape[2]],
      activation: try table?.i8(3, "TransposeConvOptions.fused_activation_function") ?? 0)
  }

  /// MediaPipe's `Convolution2DTransposeBias` (its segmentation models' upsampling): inputs, weights
  /// `[O, KH, KW, I]` and bias `[O]`; its custom options are C's `TfLiteTransposeConvParams` (int32 padding: 1
  /// same, 2 valid; stride width; stride height); the output size TensorFlow's rule for them (same:
  /// `stride · (in - 1) + k - max(0, k - (in - 1) % stride - 1)`, the padding split with the smaller half first).
  mutating func transposeConvolutionBias() throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    let weights = try constant(1)
    let bias = try constant(2)
    guard let range = op.customOptions, range.count >= 12 else {
      throw fail(
        "custom options of \(op.customOptions?.count ?? 0) bytes (12 needed: padding, stride width, stride height)")
    }
    let bytes = Array(model.file.bytes[range])
    func int32(_ at: Int) -> Int32 {
      Int32(bitPattern: (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * $1) })
    }
    let (code, strideW, strideH) = (int32(0), int32(4), int32(8))
    guard code == 1 || code == 2 else { throw fail("padding \(code) (1 same, 2 valid)") }
    let strides = try positive([strideH, strideW], "strides")
    guard shape.count == 3, weights.shape.count == 4, weights.shape[3] == shape[2] else {
      throw fail("weights \(weights.shape) for an input of shape \(shape)")
    }
    let (kh, kw) = (weights.shape[1], weights.shape[2])
    var size: [Int] = []
    for (axis, (k, stride)) in [(kh, strides[0]), (kw, strides[1])].enumerated() {
      let input = shape[axis]
      let (span, overflow) = stride.multipliedReportingOverflow(by: input - 1)
      guard !overflow, span < 1 << 24 else { throw fail("an output of more than 2^24 rows") }
      let padding = code == 1 ? max(0, k - (input - 1) % stride - 1) : 0
      size.append(span + k - padding)
    }
    try transposed(
      x, weights: weights, bias: bias, padding: code == 1 ? .same : .valid, strides: strides, outputSize: size,
      activation: 0)
  }

  /// The IR's transposed convolution of weights `[O, KH, KW, I]`, TensorFlow's padding rule for the size.
  mutating func transposed(
    _ x: ValueID, weights: Constant, bias: Constant?, padding: Padding, strides: [Int], outputSize: [Int],
    activation: Int8
  ) throws {
    let (o, kh, kw, i) = (weights.shape[0], weights.shape[1], weights.shape[2], weights.shape[3])
    // [O, KH, KW, I] -> [KH, KW, O, I].
    var kernel = [Float](repeating: 0, count: weights.values.count)
    for a in 0..<o {
      for y in 0..<kh {
        for x in 0..<kw {
          for c in 0..<i { kernel[((y * kw + x) * o + a) * i + c] = weights.values[((a * kh + y) * kw + x) * i + c] }
        }
      }
    }
    if let bias, bias.values.count != o { throw fail("bias of \(bias.values.count) for \(o) outputs") }
    let transposed = ConvolutionTranspose(
      kernel: Constant(shape: [kh, kw, o, i], values: kernel),
      bias: bias.map { Constant(shape: [o], values: $0.values) },
      strides: strides, padding: padding, outputSize: outputSize)
    try fused(activation, after: .convolutionTranspose(transposed), [x])
  }

  /// GATHER of rows of a constant table (axis 0) by computed indices: an embedding lookup.
  mutating func gather() throws {
    let table = try constant(0)
    let indices = try value(1)
    let options = try options(23)
    let axis = Int(try options?.i32(0, "GatherOptions.axis") ?? 0)
    let batchDims = try options?.i32(1, "GatherOptions.batch_dims") ?? 0
    guard axis == 0, batchDims == 0, table.shape.count == 2, builder.type(of: indices).shape.count == 1 else {
      throw fail(
        "gathering axis \(axis) of a \(table.shape) constant by \(builder.type(of: indices).shape) indices (rows of a table only)"
      )
    }
    _ = try add(.embedding(table: table), [indices])
  }

  /// DENSIFY of a sparse constant: the dense constant it stands for, read once.
  mutating func densify() throws {
    guard isConstant(0) else { throw fail("the input must be a sparse constant") }
    folded[op.outputs[0]] = try constant(0).values
  }

  /// DEPTH_TO_SPACE (TensorFlow's DCR order): output (h * b + i, w * b + j, c) is input (h, w, (i * b + j) * C'
  /// + c), as a reshape to `[H, W, b, b, C']`, a swap of the middle axes and a reshape to `[H b, W b, C']`.
  mutating func depthToSpace() throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    let block = Int(try options(94)?.i32(0, "DepthToSpaceOptions.block_size") ?? 0)
    guard shape.count == 3, block >= 1, block <= 64, shape[2] % (block * block) == 0 else {
      throw fail("block size \(block) for an input of shape \(shape)")
    }
    let (h, w, c) = (shape[0], shape[1], shape[2] / (block * block))
    let split = try add(.reshape(targetShape: [h, w, block, block, c]), [x], final: false)
    let swapped = try add(.permute(order: [0, 2, 1, 3, 4]), [split], final: false)
    _ = try add(.reshape(targetShape: [h * block, w * block, c]), [swapped])
  }

  /// QUANTIZE: the model computes in float32, so a quantization of a computed value passes it on.
  mutating func quantize() throws {
    _ = try add(.activation(.linear(scale: 1, offset: 0)), [try value(0)])
  }

  /// UNIDIRECTIONAL_SEQUENCE_LSTM without peepholes, projection or layer normalization, its states the
  /// variables' zeros: Keras' LSTM (gates i, f, c, o; sigmoid gates, tanh cell).
  mutating func lstm() throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    guard shape.count == 2 else { throw fail("input of shape \(shape) ([1, T, C] batch-major only)") }
    let table = try options(71)
    if try table?.bool(3, "UnidirectionalSequenceLSTMOptions.time_major") == true {
      throw fail("time-major sequences")
    }
    let activationCode = try table?.i8(0, "UnidirectionalSequenceLSTMOptions.fused_activation_function") ?? 0
    guard activationCode == 4 else { throw fail("cell activation \(activationCode) (tanh only)") }
    let cellClip = try table?.f32(1, "UnidirectionalSequenceLSTMOptions.cell_clip") ?? 0
    let projectionClip = try table?.f32(2, "UnidirectionalSequenceLSTMOptions.proj_clip") ?? 0
    guard projectionClip == 0 else { throw fail("projection clipping \(projectionClip)") }
    if cellClip != 0 {
      // TensorFlow's converter writes Keras' LSTM with cell_clip 10 (Keras itself clips nothing).
      notes.append(
        "LSTM '\(output.name)': the file clips its cell state to ±\(cellClip); the converted LSTM does not (as Keras), which differs only where a cell value passes that bound"
      )
    }
    // Inputs 9-11 are peepholes, 16-17 the projection, 20-23 layer normalization; without 1 and 5 (the
    // input gate) the cell is CIFG (coupled input and forget gates).
    for optional in [9, 10, 11, 16, 17, 20, 21, 22, 23]
    where optional < op.inputs.count && op.inputs[optional] >= 0 {
      throw fail("input \(optional) (peepholes, projection or layer normalization) is not converted")
    }
    guard op.inputs.count > 15, [1, 5, 12].allSatisfy({ op.inputs[$0] >= 0 }) else {
      throw fail("a CIFG cell (no input gate) is not converted")
    }
    for state in [18, 19] where state < op.inputs.count && op.inputs[state] >= 0 {
      let tensor = tensors[op.inputs[state]]
      guard tensor.isVariable || model.isConstant(tensor) else { throw fail("an initial state given as an input") }
      if model.isConstant(tensor), try constant(state).values.contains(where: { $0 != 0 }) {
        throw fail("an initial state that is not zeros")
      }
    }
    // Input weights 1-4 (gates input, forget, cell, output), recurrent 5-8, biases 12-15: each [units, C],
    // [units, units] and [units].
    func gate(_ position: Int) throws -> Constant { try constant(position) }
    let input = [try gate(1), try gate(2), try gate(3), try gate(4)]
    let recurrent = [try gate(5), try gate(6), try gate(7), try gate(8)]
    let biases = [try gate(12), try gate(13), try gate(14), try gate(15)]
    let units = input[0].shape[0]
    let columns = shape[1]
    guard input.allSatisfy({ $0.shape == [units, columns] }), recurrent.allSatisfy({ $0.shape == [units, units] }),
      biases.allSatisfy({ $0.values.count == units })
    else { throw fail("gate weights of shapes \(input.map(\.shape)), \(recurrent.map(\.shape))") }
    // Keras layout: kernel [C, 4 * units], recurrent [units, 4 * units], gates i, f, c, o side by side.
    var kernel = [Float](repeating: 0, count: columns * 4 * units)
    var recurrentKernel = [Float](repeating: 0, count: units * 4 * units)
    for g in 0..<4 {
      for u in 0..<units {
        for c in 0..<columns { kernel[c * 4 * units + g * units + u] = input[g].values[u * columns + c] }
        for r in 0..<units { recurrentKernel[r * 4 * units + g * units + u] = recurrent[g].values[u * units + r] }
      }
    }
    let weights = Recurrent.Weights(
      kernel: Constant(shape: [columns, 4 * units], values: kernel),
      recurrentKernel: Constant(shape: [units, 4 * units], values: recurrentKernel),
      bias: Constant(shape: [4 * units], values: biases.flatMap(\.values)))
    let expected = try activationShape(output, role: "output")
    let lastStep = try lastStepSlice(steps: shape[0])
    let lstm = Operation.recurrent(
      Recurrent(
        cell: .lstm, units: units, activation: .tanh, recurrentActivation: .sigmoid, forward: weights,
        returnSequences: expected.count == 2 && lastStep == nil))
    guard let lastStep else {
      _ = try add(lstm, [x])
      return
    }
    // The sequence read only by a slice of its last step (how the converter writes Keras'
    // `return_sequences=False`): the LSTM's last output, the slice done.
    let id = try builder.add(lstm, name: builder.uniqueName(tensors[lastStep.output].name), inputs: [x])
    values[lastStep.output] = id
    absorbed.insert(lastStep.operator)
  }

  /// The operator and its output when this operator's output is read only by a STRIDED_SLICE that keeps the
  /// last of `steps` steps of axis 1, shrinking it away (`[1, T, U]` to `[1, U]`).
  func lastStepSlice(steps: Int) throws -> (operator: Int, output: Int)? {
    guard let readers = readers[op.outputs[0]], readers.count == 1,
      !model.subgraph.outputs.contains(op.outputs[0])
    else { return nil }
    let slice = model.subgraph.operators[readers[0]]
    guard model.operatorCodes[slice.opcodeIndex].builtin == TFLiteBuiltin.stridedSlice, slice.inputs.count == 4,
      slice.inputs[0] == op.outputs[0], let options = slice.options,
      try options.i32(4, "StridedSliceOptions.shrink_axis_mask") == 2,
      try options.i32(2, "StridedSliceOptions.ellipsis_mask") == 0,
      try options.i32(3, "StridedSliceOptions.new_axis_mask") == 0,
      let begin = try? model.intValues(of: tensors[slice.inputs[1]]), begin.count == 3,
      let strides = try? model.intValues(of: tensors[slice.inputs[3]]), strides == [1, 1, 1],
      begin[1] == -1 || begin[1] == steps - 1
    else { return nil }
    let beginMask = try options.i32(0, "StridedSliceOptions.begin_mask")
    let endMask = try options.i32(1, "StridedSliceOptions.end_mask")
    let end = (try? model.intValues(of: tensors[slice.inputs[2]])) ?? []
    // The batch and unit axes kept whole.
    guard (beginMask & 1 != 0 || begin[0] == 0) && (endMask & 1 != 0 || end.first == 1),
      (beginMask & 4 != 0 || begin[2] == 0)
        && (endMask & 4 != 0 || (end.count == 3 && end[2] >= tensors[op.outputs[0]].shape.last ?? 0))
    else { return nil }
    return (readers[0], slice.outputs[0])
  }

  /// STRIDED_SLICE with constant begin, end and positive strides (begin and end masks, shrunk axes; no
  /// ellipsis or new axes), the batch axis kept whole.
  mutating func stridedSlice() throws {
    let x = try value(0)
    let shape = [1] + builder.type(of: x).shape
    let (begin, end, strides) = (try ints(1), try ints(2), try ints(3))
    guard begin.count == shape.count, end.count == shape.count, strides.count == shape.count,
      strides.allSatisfy({ $0 >= 1 })
    else { throw fail("begin \(begin), end \(end), strides \(strides) for shape \(shape) (positive strides only)") }
    let table = try options(32)
    let field = "StridedSliceOptions"
    let beginMask = Int(try table?.i32(0, field + ".begin_mask") ?? 0)
    let endMask = Int(try table?.i32(1, field + ".end_mask") ?? 0)
    let ellipsis = try table?.i32(2, field + ".ellipsis_mask") ?? 0
    let newAxis = try table?.i32(3, field + ".new_axis_mask") ?? 0
    let offset = try table?.bool(5, field + ".offset") ?? false
    let shrink = Int(try table?.i32(4, field + ".shrink_axis_mask") ?? 0)
    guard ellipsis == 0, newAxis == 0, !offset else { throw fail("ellipsis, new-axis or offset masks") }
    var from: [Int] = []
    var to: [Int] = []
    for axis in shape.indices {
      let size = shape[axis]
      func clamp(_ index: Int) -> Int { min(max(index < 0 ? index + size : index, 0), size) }
      from.append(beginMask & (1 << axis) != 0 ? 0 : clamp(begin[axis]))
      // A shrunk axis keeps the one element at begin, whatever end says.
      to.append(
        shrink & (1 << axis) != 0 ? min(from[axis] + 1, size) : endMask & (1 << axis) != 0 ? size : clamp(end[axis]))
    }
    guard from[0] == 0, to[0] == 1, strides[0] == 1 else { throw fail("a slice of the batch axis") }
    let slice = StridedSlice(
      begin: Array(from.dropFirst()), end: Array(to.dropFirst()), strides: Array(strides.dropFirst()))
    // The sliced sizes without the shrunk axes (the batch alone: one value).
    var kept: [Int] = []
    for axis in 1..<shape.count where shrink & (1 << axis) == 0 {
      kept.append((max(to[axis] - from[axis], 0) + strides[axis] - 1) / strides[axis])
    }
    let expected = try declaredShape(output, role: "output") ?? (kept.isEmpty ? [1] : kept)
    let sliced = try add(.slice(slice), [x], final: false)
    _ = try add(.reshape(targetShape: expected), [sliced])
  }

  /// SPLIT_V: consecutive pieces of the given sizes (one may be -1: the rest) along a constant axis (not the
  /// batch), each a slice.
  mutating func splitV() throws {
    let x = try value(0)
    let shape = builder.type(of: x).shape
    var sizes = try ints(1)
    let axes = try ints(2)
    guard axes.count == 1 else { throw fail("axis must be one value, got \(axes)") }
    let rank = shape.count + 1
    let axis = axes[0] < 0 ? axes[0] + rank : axes[0]
    guard axis >= 1, axis < rank else { throw fail("split along axis \(axes[0]) of rank \(rank) (not the batch)") }
    let total = shape[axis - 1]
    guard sizes.count == op.outputs.count, sizes.filter({ $0 == -1 }).count <= 1, sizes.allSatisfy({ $0 >= -1 })
    else { throw fail("size_splits \(sizes) for \(op.outputs.count) outputs") }
    let known = sizes.filter { $0 >= 0 }.reduce(0) { $0 + min($1, total + 1) }
    if let open = sizes.firstIndex(of: -1) { sizes[open] = max(total - known, -1) }
    guard sizes.allSatisfy({ $0 >= 1 }), sizes.reduce(0, +) == total else {
      throw fail("size_splits \(sizes) do not add up to the axis' \(total) elements")
    }
    var start = 0
    for (piece, size) in zip(op.outputs, sizes) {
      var begin = shape.map { _ in 0 }
      var end = shape
      begin[axis - 1] = start
      end[axis - 1] = start + size
      start += size
      let tensor = tensors[piece]
      let id = try builder.add(
        .slice(StridedSlice(begin: begin, end: end, strides: shape.map { _ in 1 })),
        name: builder.uniqueName(tensor.name), inputs: [x])
      if let expected = try declaredShape(tensor, role: "output"), builder.type(of: id).shape != expected {
        throw fail("computes \(builder.type(of: id).shape) where the file declares \(expected) for '\(tensor.name)'")
      }
      values[piece] = id
    }
  }
}
