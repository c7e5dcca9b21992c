import CoreMLCommon
import ModelIR

/// Spatial operations, written in the channels-first (NCHW) layout MIL's spatial ops take.
extension MILEmitter {
  /// TensorFlow's padding for one axis: the leading amount and the trailing rest (the odd pixel goes last).
  static func pads(_ padding: Padding, input: Int, output: Int, kernel: Int, stride: Int, dilation: Int = 1) -> (
    Int, Int
  ) {
    guard padding == .same else { return (0, 0) }
    let effective = (kernel - 1) * dilation + 1
    let total = max((output - 1) * stride + effective - input, 0)
    let before = padding.leadingPad(input: input, kernel: kernel, stride: stride, dilation: dilation)
    return (before, total - before)
  }

  /// A window's padding: explicit pads, except TensorFlow's `same` with a stride above 1, whose pads
  /// depend on the input's size (the odd pixel of an odd size goes last): MIL's `pad_type` same, which
  /// computes them at run time as TensorFlow does, so the operation takes any input size.
  static func padding(_ padding: Padding, strides: [Int], pads: [Int]) -> [(String, MILParam)] {
    padding == .same && strides.contains(where: { $0 > 1 })
      ? [("pad_type", .string("same"))] : [("pad_type", .string("custom")), ("pad", .ints(pads))]
  }

  /// The input of a spatial operation as `[N, C, H, W]`: an image's channels-first form, or for a
  /// TimeDistributed `[T, H, W, C]` value the steps folded into MIL's batch axis.
  mutating func spatialInput(_ node: Node) throws -> MILTensor {
    let id = node.inputs[0]
    let shape = graph[id].type.shape
    if shape.count == 3 { return try tensor(id, .channelsFirst) }
    guard shape.count == 4 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: node.origin?.name ?? node.name,
        detail: "\(node.operation.kindName) on a \(shape) tensor (images [H, W, C] or [T, H, W, C] only)")
    }
    let x = try tensor(id, .natural)
    let folded = try op(
      "reshape", [("x", .tensor(x)), ("shape", .ints(shape))], temporary(node.output, "steps"), x.dataType, shape)
    return try op(
      "transpose", [("x", .tensor(folded)), ("perm", .ints([0, 3, 1, 2]))], temporary(node.output, "steps_nchw"),
      x.dataType,
      [shape[0], shape[3], shape[1], shape[2]])
  }

  /// The `[N, C, H, W]` output shape of a spatial operation on `spatialInput`.
  func spatialOutputShape(_ node: Node) -> [Int] {
    let s = graph[node.output].type.shape
    return s.count == 3 ? MILLayout.channelsFirst.shape(s) : [s[0], s[3], s[1], s[2]]
  }

  /// Appends the spatial operation producing the node's value, unfolding TimeDistributed steps again.
  mutating func spatialOutput(_ node: Node, _ type: String, _ params: [(String, MILParam)], dataType: MILElementType)
    throws
  {
    let s = graph[node.output].type.shape
    if s.count == 3 {
      try produce(node.output, .channelsFirst, type, params, dataType: dataType)
      return
    }
    let result = try op(type, params, temporary(node.output, "steps_out"), dataType, spatialOutputShape(node))
    let back = try op(
      "transpose", [("x", .tensor(result)), ("perm", .ints([0, 2, 3, 1]))], temporary(node.output, "steps_nhwc"),
      dataType, s)
    try produce(
      node.output, .natural, "reshape", [("x", .tensor(back)), ("shape", .ints([1] + s))], dataType: dataType)
  }

  /// Fails unless the node's input is an image or TimeDistributed images.
  func requireImages(_ node: Node) throws {
    let r = rank(node.inputs[0])
    guard r == 3 || r == 4 else {
      try requireImage(node)
      return
    }
  }

  mutating func emitConvolution(_ node: Node, _ conv: Convolution2D) throws {
    try requireImages(node)
    let x = try spatialInput(node)
    let input = Array(graph[node.inputs[0]].type.shape.suffix(3))
    let output = Array(graph[node.output].type.shape.suffix(3))
    // Keras [kh, kw, in/groups, out] -> MIL [out, in/groups, kh, kw] (`CoreMLWeightValues`).
    let kh = conv.kernelHeight
    let kw = conv.kernelWidth
    let cin = conv.inputChannelsPerGroup
    let cout = conv.outputChannels
    let (top, bottom) = Self.pads(
      conv.padding, input: input[0], output: output[0], kernel: kh, stride: conv.strideHeight,
      dilation: conv.dilationHeight)
    let (left, right) = Self.pads(
      conv.padding, input: input[1], output: output[1], kernel: kw, stride: conv.strideWidth,
      dilation: conv.dilationWidth)
    let dt = x.dataType
    var params: [(String, MILParam)] = [
      ("x", .tensor(x)), ("weight", .weights(.convolutionKernel(conv.kernel), shape: [cout, cin, kh, kw], dt)),
    ]
    if let bias = conv.bias { params.append(("bias", .floats(bias.values, shape: [cout], dt))) }
    params +=
      [("strides", .ints([conv.strideHeight, conv.strideWidth]))]
      + Self.padding(conv.padding, strides: [conv.strideHeight, conv.strideWidth], pads: [top, bottom, left, right])
      + [("dilations", .ints([conv.dilationHeight, conv.dilationWidth])), ("groups", .int(conv.groups))]
    try spatialOutput(node, "conv", params, dataType: dt)
  }

  mutating func emitConvolutionTranspose(_ node: Node, _ conv: ConvolutionTranspose) throws {
    try requireImage(node)
    let x = try tensor(node.inputs[0], .channelsFirst)
    let input = graph[node.inputs[0]].type.shape
    let output = graph[node.output].type.shape
    let kh = conv.kernel.shape[0]
    let kw = conv.kernel.shape[1]
    let cout = conv.outputChannels
    let cin = conv.inputChannels
    // Keras [kh, kw, out, in] -> MIL [in, out, kh, kw]; both scatter the kernel unflipped.
    var weight = [Float](repeating: 0, count: conv.kernel.count)
    for i in 0..<cin {
      for o in 0..<cout {
        for y in 0..<kh {
          for xx in 0..<kw {
            weight[((i * cout + o) * kh + y) * kw + xx] = conv.kernel.values[((y * kw + xx) * cout + o) * cin + i]
          }
        }
      }
    }
    // The full scatter is (in - 1) * stride + k long; Keras keeps `outputSize` of it from the leading pad on.
    let fullH = (input[0] - 1) * conv.strides[0] + kh
    let fullW = (input[1] - 1) * conv.strides[1] + kw
    let top = conv.leadingPad(input: input[0], axis: 0)
    let left = conv.leadingPad(input: input[1], axis: 1)
    let bottom = fullH - top - output[0]
    let right = fullW - left - output[1]
    let dt = x.dataType
    var params: [(String, MILParam)] = [
      ("x", .tensor(x)), ("weight", .floats(weight, shape: [cin, cout, kh, kw], dt)),
    ]
    let crop = [top, max(bottom, 0), left, max(right, 0)]
    let common: [(String, MILParam)] = [
      ("strides", .ints(conv.strides)), ("pad_type", .string("custom")), ("pad", .ints(crop)),
      ("dilations", .ints([1, 1])), ("groups", .int(1)),
    ]
    if bottom >= 0 && right >= 0 {
      if let bias = conv.bias { params.append(("bias", .floats(bias.values, shape: [cout], dt))) }
      try produce(node.output, .channelsFirst, "conv_transpose", params + common, dataType: dt)
      return
    }
    // Output padding beyond the scatter: those rows and columns hold only the bias.
    let scatterShape = [1, cout, fullH - top - max(bottom, 0), fullW - left - max(right, 0)]
    let scattered = try op("conv_transpose", params + common, temporary(node.output, "scatter"), dt, scatterShape)
    let grow = [0, max(-bottom, 0), 0, max(-right, 0)]
    if let bias = conv.bias {
      let padded = try op(
        "pad",
        [
          ("x", .tensor(scattered)), ("pad", .ints(grow)), ("mode", .string("constant")),
          ("constant_val", .scalar(0, dt)),
        ],
        temporary(node.output, "padded"), dt, [1, cout, output[0], output[1]])
      try produce(
        node.output, .channelsFirst, "add",
        [("x", .tensor(padded)), ("y", .floats(bias.values, shape: [1, cout, 1, 1], dt))], dataType: dt)
    } else {
      try produce(
        node.output, .channelsFirst, "pad",
        [
          ("x", .tensor(scattered)), ("pad", .ints(grow)), ("mode", .string("constant")),
          ("constant_val", .scalar(0, dt)),
        ], dataType: dt)
    }
  }

  mutating func emitPooling(_ node: Node, _ pool: Pooling2D) throws {
    try requireImages(node)
    let x = try spatialInput(node)
    let input = Array(graph[node.inputs[0]].type.shape.suffix(3))
    let output = Array(graph[node.output].type.shape.suffix(3))
    let (top, bottom) = Self.pads(
      pool.padding, input: input[0], output: output[0], kernel: pool.poolHeight, stride: pool.strideHeight)
    let (left, right) = Self.pads(
      pool.padding, input: input[1], output: output[1], kernel: pool.poolWidth, stride: pool.strideWidth)
    // An average that leaves out the padding cannot take custom pads ([rule] in MIL's pooling docs): same
    // padding (extra at the end, as TensorFlow) is `pad_type` same; explicit pads are only ever zero then.
    let padding: [(String, MILParam)] =
      pool.kind == .average && pool.padding == .same && [top, bottom, left, right] != [0, 0, 0, 0]
      ? [("pad_type", .string("same"))]
      : Self.padding(
        pool.padding, strides: [pool.strideHeight, pool.strideWidth], pads: [top, bottom, left, right])
    var params: [(String, MILParam)] =
      [
        ("x", .tensor(x)), ("kernel_sizes", .ints([pool.poolHeight, pool.poolWidth])),
        ("strides", .ints([pool.strideHeight, pool.strideWidth])),
      ] + padding + [("ceil_mode", .bool(false))]
    // TensorFlow averages over the window's pixels inside the input only.
    if pool.kind == .average { params.append(("exclude_padding_from_average", .bool(true))) }
    try spatialOutput(node, pool.kind == .max ? "max_pool" : "avg_pool", params, dataType: x.dataType)
  }

  mutating func emitGlobalPooling(_ node: Node, kind: PoolingKind, keepDims: Bool) throws {
    try requireImages(node)
    let id = node.inputs[0]
    if rank(id) == 4 {
      let x = try tensor(id, .natural)
      try produce(
        node.output, .natural, kind == .max ? "reduce_max" : "reduce_mean",
        [("x", .tensor(x)), ("axes", .ints([2, 3])), ("keep_dims", .bool(keepDims))],
        dataType: x.dataType)
      return
    }
    let layout: MILLayout = hasChannelsFirst(id) || layout(of: id) == .channelsFirst ? .channelsFirst : .natural
    let x = try tensor(id, layout)
    let axes = layout == .channelsFirst ? [2, 3] : [1, 2]
    // keepDims in channels-first gives [1, C, 1, 1], the channels-first form of [1, 1, C]; without it [1, C].
    let outLayout: MILLayout = keepDims ? layout : .natural
    try produce(
      node.output, outLayout, kind == .max ? "reduce_max" : "reduce_mean",
      [("x", .tensor(x)), ("axes", .ints(axes)), ("keep_dims", .bool(keepDims))], dataType: x.dataType)
  }

  mutating func emitUpsampling(_ node: Node, height: Int, width: Int, mode: UpsamplingMode) throws {
    try requireImages(node)
    let x = try spatialInput(node)
    switch mode {
    case .bilinear, .bilinearAlignCorners:
      // align_corners false samples at (i + 0.5) / scale - 0.5: TensorFlow's half-pixel centres; true
      // at i * (n - 1) / (scale * n - 1).
      try spatialOutput(
        node, "upsample_bilinear",
        [
          ("x", .tensor(x)), ("scale_factor_height", .int(height)), ("scale_factor_width", .int(width)),
          ("align_corners", .bool(mode == .bilinearAlignCorners)),
        ],
        dataType: x.dataType)
    case .bilinearAsymmetric:
      // resize_bilinear's DEFAULT sampling reads i * (n - n / m) / (m - 1) for an output of m, which is
      // i / scale for m = scale * n (iOS 15; upsample_bilinear needs iOS 16's half_pixel_centers for it).
      let output = graph[node.output].type.shape
      guard output.count == 3 else {
        throw CoreMLWriterError.unsupportedOperation(layer: node.name, detail: "upsampling to shape \(output)")
      }
      let (outHeight, outWidth) = (output[0], output[1])
      try spatialOutput(
        node, "resize_bilinear",
        [
          ("x", .tensor(x)), ("target_size_height", .int(outHeight)), ("target_size_width", .int(outWidth)),
          ("sampling_mode", .string("DEFAULT")),
        ],
        dataType: x.dataType)
    case .nearest:
      try spatialOutput(
        node, "upsample_nearest_neighbor",
        [("x", .tensor(x)), ("scale_factor_height", .int(height)), ("scale_factor_width", .int(width))],
        dataType: x.dataType)
    }
  }

  mutating func emitZeroPadding(_ node: Node, _ box: Box2D) throws {
    try requireImages(node)
    let x = try spatialInput(node)
    try spatialOutput(
      node, "pad",
      [
        ("x", .tensor(x)), ("pad", .ints([box.top, box.bottom, box.left, box.right])), ("mode", .string("constant")),
        ("constant_val", .scalar(0, x.dataType)),
      ],
      dataType: x.dataType)
  }

  mutating func emitCropping(_ node: Node, _ box: Box2D) throws {
    try requireImages(node)
    let id = node.inputs[0]
    if rank(id) == 4 {
      let x = try tensor(id, .natural)
      let s = graph[id].type.shape
      try produce(
        node.output, .natural, "slice_by_index",
        [
          ("x", .tensor(x)), ("begin", .ints([0, 0, box.top, box.left, 0])),
          ("end", .ints([1, s[0], s[1] - box.bottom, s[2] - box.right, s[3]])),
        ],
        dataType: x.dataType)
      return
    }
    let layout: MILLayout = hasChannelsFirst(id) || self.layout(of: id) == .channelsFirst ? .channelsFirst : .natural
    let x = try tensor(id, layout)
    let s = graph[id].type.shape
    let begin = layout == .channelsFirst ? [0, 0, box.top, box.left] : [0, box.top, box.left, 0]
    let end =
      layout == .channelsFirst
      ? [1, s[2], s[0] - box.bottom, s[1] - box.right] : [1, s[0] - box.bottom, s[1] - box.right, s[2]]
    try produce(
      node.output, layout, "slice_by_index", [("x", .tensor(x)), ("begin", .ints(begin)), ("end", .ints(end))],
      dataType: x.dataType)
  }
}
