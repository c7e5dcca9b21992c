import CoreMLCommon
import ModelIR

extension MILProgramImporter {
  /// `[rows, columns]` row-major values as the `[columns, rows]` IR constant.
  func transposed(_ values: [Float], rows: Int, columns: Int) -> Constant {
    Constant(shape: [columns, rows], values: Matrix.transposed(values, rows: rows, columns: columns))
  }

  /// An optional constant vector parameter of `count` values.
  func vector(_ key: String, count: Int) throws -> Constant? {
    guard let value = try constant(key) else { return nil }
    guard value.count == count else { throw invalid("\(key) has \(value.count) values, needs \(count)") }
    return Constant(shape: [count], values: value.asFloats)
  }

  mutating func cast() throws {
    let type = try string("dtype", "")
    let target: DataType
    switch type {
    case "fp16": target = .float16
    case "fp32": target = .float32
    case "int32":
      // The IR holds integers as floats: the values pass through (exact for the integral values that
      // indices hold; a fractional value would not be truncated).
      try define(try tensor("x"))
      return
    case "bool":
      let x = try tensor("x")
      let zero = try add(.constant(Constant(shape: [1], values: [0])), [], suffix: "__zero")
      try define(try add(.elementwise(.notEqual), [x, zero]))
      return
    default: throw unsupported("dtype '\(type)' (fp16, fp32, int32 and bool are supported)")
    }
    if case .name(let name)? = argument("x"), var value = constants[name], values[name] == nil {
      // A constant cast stays a constant, rounded as the target type rounds it.
      value.floats = value.asFloats.map { target == .float16 ? Float(Float16($0)) : $0 }
      value.integers = []
      value.type.dataType = target == .float16 ? .float16 : .float32
      constants[try outputName()] = value
      return
    }
    try define(try add(.cast(target), [try tensor("x")]))
  }

  // MARK: Convolution and pooling

  /// Explicit `[begin, end]` padding per spatial axis for `pad_type`, or nil for the IR's own `same`.
  func spatialPadding(input: [Int], kernel: [Int], strides: [Int], dilations: [Int]) throws -> (Padding, [Int]) {
    let count = input.count
    let type = try string("pad_type", "valid")
    switch type {
    case "valid": return (.valid, [Int](repeating: 0, count: 2 * count))
    case "same": return (.same, [Int](repeating: 0, count: 2 * count))
    case "same_lower":
      // [rule MIL-OPSET] same_lower exists from CoreML6 (iOS 16).
      if let version = program.opsetVersion, version < 6 {
        throw invalid("pad_type 'same_lower' needs opset CoreML6 or later")
      }
      var pads: [Int] = []
      for i in 0..<count {
        let output = (input[i] + strides[i] - 1) / strides[i]
        let total = max((output - 1) * strides[i] + (kernel[i] - 1) * dilations[i] + 1 - input[i], 0)
        pads += [total - total / 2, total / 2]
      }
      return (.valid, pads)
    case "custom":
      guard let pads = try ints("pad"), pads.count == 2 * count, GraphLimits.areSizes(pads, minimum: 0) else {
        throw invalid("pad_type 'custom' needs 'pad' with \(2 * count) non-negative values")
      }
      return (.valid, pads)
    default: throw invalid("pad_type '\(type)' (valid, same, same_lower and custom are defined)")
    }
  }

  /// Positive integers of a per-axis parameter, defaulting to ones.
  func perAxis(_ key: String, count: Int, fallback: Int = 1) throws -> [Int] {
    guard let values = try ints(key) else { return [Int](repeating: fallback, count: count) }
    guard values.count == count, GraphLimits.areSizes(values) else {
      throw invalid("\(key) \(values) must be \(count) positive values")
    }
    return values
  }

  mutating func convolution() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    let weight = try requiredConstant("weight")
    let w = weight.type.shape
    guard s.count == 3 || s.count == 4, w.count == s.count else {
      throw unsupported("1-D and 2-D convolutions are supported; input \(s), weight \(w)")
    }
    let groups = try int("groups", 1)
    let spatialCount = s.count - 2
    guard groups >= 1, s[1] % groups == 0, w[0] % groups == 0, w[1] * groups == s[1] else {
      throw invalid("weight \(w) with \(groups) groups does not fit input \(s)")
    }
    let strides = try perAxis("strides", count: spatialCount)
    let dilations = try perAxis("dilations", count: spatialCount)
    let kernelSizes = Array(w.suffix(spatialCount))
    var (padding, pads) = try spatialPadding(
      input: Array(s.suffix(spatialCount)), kernel: kernelSizes, strides: strides, dilations: dilations)
    // As 2-D: [out, in, kh, kw] to the IR's [kh, kw, in, out].
    let (outputs, inputs, kh, kw) = (w[0], w[1], spatialCount == 2 ? w[2] : 1, w[spatialCount + 1])
    let stored = weight.asFloats
    var kernel = [Float](repeating: 0, count: stored.count)
    for o in 0..<outputs {
      for i in 0..<inputs {
        for y in 0..<kh {
          for xx in 0..<kw {
            kernel[((y * kw + xx) * inputs + i) * outputs + o] = stored[((o * inputs + i) * kh + y) * kw + xx]
          }
        }
      }
    }
    let bias = try vector("bias", count: outputs)
    let strides2 = spatialCount == 2 ? strides : [1] + strides
    let dilations2 = spatialCount == 2 ? dilations : [1] + dilations
    if spatialCount == 1 { pads = [0, 0] + pads }
    let convolution = Convolution2D(
      kernel: Constant(shape: [kh, kw, inputs, outputs], values: kernel), bias: bias, strides: strides2,
      dilations: dilations2, padding: padding,
      groups: groups)
    if pads.contains(where: { $0 != 0 }) {
      padding = .valid
      // Zero padding of the [N, H, W, C] input, then a valid convolution.
      let padded = try paddedSpatial(x, pads: pads, value: 0)
      return try spatialFromChannelsLast(padded, original: s, .convolution2D(convolution))
    }
    return try spatial(x) { _ in .convolution2D(convolution) }
  }

  /// The channels-last `[N, H, W, C]` form of a rank-3 or rank-4 MIL value, padded by `pads` ([top, bottom, left, right]).
  mutating func paddedSpatial(_ x: ValueID, pads: [Int], value: Float) throws -> ValueID {
    let s = shape(x)
    let image = s.count == 3 ? try reshape(x, to: [s[0], s[1], 1, s[2]]) : x
    let hwc = try channelsLast(image)
    return try add(
      .constantPad(ConstantPadding(before: [0, pads[0], pads[2], 0], after: [0, pads[1], pads[3], 0], value: value)),
      [hwc], suffix: "__pad")
  }

  /// Runs `op` on a channels-last value and returns it in the MIL layout of the original rank.
  mutating func spatialFromChannelsLast(_ hwc: ValueID, original: [Int], _ op: ModelIR.Operation) throws -> ValueID {
    let result = try add(op, [hwc], suffix: "__nhwc")
    if original.count == 3 {
      let r = shape(result)
      let chw = try add(.permute(order: [0, 3, 1, 2]), [result], suffix: "__to_nchw")
      return try add(.reshape(targetShape: [r[0], r[3], r[2]]), [chw])
    }
    return try channelsFirst(result)
  }

  mutating func convolutionTranspose() throws -> ValueID {
    let input = try tensor("x")
    let weight = try requiredConstant("weight")
    let (inputShape, weightShape) = (shape(input), weight.type.shape)
    guard inputShape.count == 3 || inputShape.count == 4, weightShape.count == inputShape.count,
      weightShape[0] == inputShape[1]
    else {
      throw unsupported(
        "1-D and 2-D transposed convolutions of [N, C, L] and [N, C, H, W] are supported; input \(inputShape), weight \(weightShape)"
      )
    }
    // A 1-D transposed convolution is the 2-D one over a height of 1: [N, C, L] as [N, C, 1, L], its
    // parameters with a unit first axis, and the result back to [N, C', L'].
    let oneD = inputShape.count == 3
    let spatialAxes = oneD ? 1 : 2
    func lifted(_ values: [Int], unit: Int) -> [Int] { oneD ? [unit] + values : values }
    let x = oneD ? try reshape(input, to: [inputShape[0], inputShape[1], 1, inputShape[2]]) : input
    let s = shape(x)
    let w = oneD ? [weightShape[0], weightShape[1], 1, weightShape[2]] : weightShape
    guard try int("groups", 1) == 1 else { throw unsupported("groups other than 1") }
    guard try perAxis("dilations", count: spatialAxes).allSatisfy({ $0 == 1 }) else {
      throw unsupported("dilations other than 1")
    }
    let strides = lifted(try perAxis("strides", count: spatialAxes), unit: 1)
    let type = try string("pad_type", "valid")
    let givenPads = try ints("pad") ?? [Int](repeating: 0, count: 2 * spatialAxes)
    guard givenPads.count == 2 * spatialAxes else { throw invalid("pad \(givenPads) needs \(2 * spatialAxes) values") }
    let pads = oneD ? [0, 0] + givenPads : givenPads
    let (inputs, outputs, kh, kw) = (w[0], w[1], w[2], w[3])
    var padding: Padding
    var size: [Int]
    var crop = [0, 0, 0, 0]
    switch type {
    case "valid":
      padding = .valid
      size = [(s[2] - 1) * strides[0] + kh, (s[3] - 1) * strides[1] + kw]
    case "custom":
      // The full output, less pad[2i] leading and pad[2i+1] trailing rows or columns.
      padding = .valid
      size = [(s[2] - 1) * strides[0] + kh, (s[3] - 1) * strides[1] + kw]
      guard pads.count == 4, pads.allSatisfy({ $0 >= 0 }), pads[0] + pads[1] < size[0], pads[2] + pads[3] < size[1]
      else {
        throw invalid("pad \(pads) must be 4 non-negative values leaving an output of \(size)")
      }
      crop = pads
    case "same":
      padding = .same
      size = [s[2] * strides[0], s[3] * strides[1]]
    default: throw unsupported("pad_type '\(type)' with pad \(pads)")
    }
    if let shape = try ints("output_shape") {
      // A larger output (Keras' output_padding) adds up to stride - 1 rows and columns at the end.
      guard shape.count == 2 + spatialAxes else { throw invalid("output_shape \(shape) needs rank \(2 + spatialAxes)") }
      let given = oneD ? [shape[0], shape[1], 1, shape[2]] : shape
      let natural = [size[0] - crop[0] - crop[1], size[1] - crop[2] - crop[3]]
      guard given.count == 4, given[0] == s[0], given[1] == outputs,
        (0..<2).allSatisfy({ given[2 + $0] >= natural[$0] && given[2 + $0] < natural[$0] + strides[$0] }),
        type == "valid" || Array(given.suffix(2)) == natural
      else { throw unsupported("output_shape \(given) with pad_type '\(type)' (natural size \(natural))") }
      if type == "valid" { size = Array(given.suffix(2)) }
    }
    // [in, out, kh, kw] to the IR's [kh, kw, out, in].
    let stored = weight.asFloats
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
    let op = ConvolutionTranspose(
      kernel: Constant(shape: [kh, kw, outputs, inputs], values: kernel), bias: try vector("bias", count: outputs),
      strides: strides, padding: padding,
      outputSize: size)
    let result: ValueID
    if crop.allSatisfy({ $0 == 0 }) {
      result = try spatial(x) { _ in .convolutionTranspose(op) }
    } else {
      let full = try add(.convolutionTranspose(op), [try channelsLast(x)], suffix: "__full")
      let f = shape(full)
      let cropped = try add(
        .slice(
          StridedSlice(
            begin: [0, crop[0], crop[2], 0], end: [f[0], f[1] - crop[1], f[2] - crop[3], f[3]], strides: [1, 1, 1, 1])),
        [full],
        suffix: "__nhwc")
      result = try channelsFirst(cropped)
    }
    guard oneD else { return result }
    let r = shape(result)
    return try reshape(result, to: [r[0], r[1], r[3]])
  }

  mutating func pooling() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    guard s.count == 3 || s.count == 4 else { throw unsupported("1-D and 2-D pooling are supported; input \(s)") }
    let spatialCount = s.count - 2
    guard try !bool("ceil_mode", false) else { throw unsupported("ceil_mode=True is not supported") }
    guard let given = try ints("kernel_sizes"), given.count == spatialCount, GraphLimits.areSizes(given) else {
      throw invalid("kernel_sizes must be \(spatialCount) positive values")
    }
    let strides = try perAxis("strides", count: spatialCount)
    var (padding, pads) = try spatialPadding(
      input: Array(s.suffix(spatialCount)), kernel: given, strides: strides, dilations: [1, 1])
    let kind: PoolingKind = operation.type == "max_pool" ? .max : .average
    if kind == .average, try !bool("exclude_padding_from_average", false) {
      // The IR averages over the window's elements inside the input; zero padding counted is explicit padding.
      if padding == .same {
        let input = Array(s.suffix(spatialCount))
        pads = []
        for i in 0..<spatialCount {
          let total = max(((input[i] + strides[i] - 1) / strides[i] - 1) * strides[i] + given[i] - input[i], 0)
          pads += [total / 2, total - total / 2]
        }
        padding = .valid
      }
    } else if kind == .average, pads.contains(where: { $0 != 0 }) {
      throw unsupported("custom padding with exclude_padding_from_average=True")
    }
    let pool = Pooling2D(
      kind: kind, pool: spatialCount == 2 ? given : [1] + given, strides: spatialCount == 2 ? strides : [1] + strides,
      padding: padding)
    if spatialCount == 1 { pads = [0, 0] + pads }
    if pads.contains(where: { $0 != 0 }) {
      let padded = try paddedSpatial(x, pads: pads, value: kind == .max ? -Float.greatestFiniteMagnitude : 0)
      return try spatialFromChannelsLast(padded, original: s, .pooling2D(pool))
    }
    return try spatial(x) { _ in .pooling2D(pool) }
  }

  mutating func batchNorm() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    guard s.count >= 2 else { throw invalid("needs rank 2 or more, got \(s)") }
    let c = s[1]
    let norm = BatchNormalization(
      gamma: try vector("gamma", count: c) ?? .filled(1, shape: [c]),
      beta: try vector("beta", count: c) ?? .filled(0, shape: [c]),
      mean: try vector("mean", count: c) ?? { throw invalid("required parameter 'mean' is missing") }(),
      variance: try vector("variance", count: c) ?? { throw invalid("required parameter 'variance' is missing") }(),
      epsilon: try float("epsilon", 1e-5))
    switch s.count {
    case 2: return try add(.batchNormalization(norm), [x])
    case 3, 4: return try spatial(x) { _ in .batchNormalization(norm) }
    case 5:
      // [N, C, D1, D2, D3] (MIL allows rank 3 to 5): the channels moved last and back.
      let last = try add(.permute(order: [0, 2, 3, 4, 1]), [x], suffix: "__channels_last")
      return try add(
        .permute(order: [0, 4, 1, 2, 3]), [try add(.batchNormalization(norm), [last], suffix: "__normalized")])
    default: throw unsupported("batch_norm of rank \(s.count) (MIL allows 3 to 5)")
    }
  }

  /// `matmul`: by a constant matrix `y` a dense layer, else the product of the two tensors (MIL's rules:
  /// `transpose_x`/`transpose_y` swap the last two axes, a vector operand is one row of `x` or one column
  /// of `y`, removed again, and the batch axes broadcast).
  mutating func matmul() throws -> ValueID {
    var x = try tensor("x")
    let transposeX = try bool("transpose_x", false)
    let transposeY = try bool("transpose_y", false)
    guard argument("y") != nil else { throw invalid("required parameter 'y' is missing") }
    var s = shape(x)
    guard !s.isEmpty else { throw unsupported("x of rank 0") }
    if isConstant("y"), let y = try constant("y"), y.type.shape.count == 2, s.count >= 2 {
      if transposeX {
        x = try add(
          .permute(order: Array(0..<(s.count - 2)) + [s.count - 1, s.count - 2]), [x], suffix: "__transpose_x")
        s = shape(x)
      }
      let (rows, columns) = (y.type.shape[0], y.type.shape[1])
      let kernel =
        transposeY
        ? transposed(y.asFloats, rows: rows, columns: columns) : Constant(shape: [rows, columns], values: y.asFloats)
      guard kernel.shape[0] == s.last else { throw invalid("y \(y.type.shape) does not fit x \(s)") }
      return try add(.dense(Dense(kernel: kernel, bias: nil)), [x])
    }
    var y = try tensor("y")
    var t = shape(y)
    guard !t.isEmpty else { throw unsupported("y of rank 0") }
    func swapLast(_ value: ValueID, _ shape: [Int], _ suffix: String) throws -> ValueID {
      try add(
        .permute(order: Array(0..<(shape.count - 2)) + [shape.count - 1, shape.count - 2]), [value], suffix: suffix)
    }
    let (xVector, yVector) = (s.count == 1, t.count == 1)
    if xVector {
      x = try add(.reshape(targetShape: [1, s[0]]), [x], suffix: "__x_row")
    } else if transposeX {
      x = try swapLast(x, s, "__transpose_x")
    }
    if yVector {
      y = try add(.reshape(targetShape: [t[0], 1]), [y], suffix: "__y_column")
    } else if transposeY {
      y = try swapLast(y, t, "__transpose_y")
    }
    (s, t) = (shape(x), shape(y))
    guard s[s.count - 1] == t[t.count - 2] else { throw invalid("y \(shape(y)) does not fit x \(shape(x))") }
    guard xVector || yVector else { return try add(.matMul, [x, y]) }
    let product = try add(.matMul, [x, y], suffix: "__matrix")
    var result = shape(product)
    if yVector { result.removeLast() }
    if xVector { result.remove(at: result.count - (yVector ? 1 : 2)) }
    return try add(.reshape(targetShape: result.isEmpty ? [1] : result), [product])
  }

  mutating func layerNorm() throws -> ValueID {
    let x = try tensor("x")
    let s = shape(x)
    let rank = s.count
    let axes = try (ints("axes") ?? Array(0..<rank)).map { try axis($0, rank: rank) }.sorted()
    let epsilon = try float("epsilon", 1e-5)
    if axes == [rank - 1] {
      let norm = LayerNormalization(
        gamma: try vector("gamma", count: s[rank - 1]), beta: try vector("beta", count: s[rank - 1]), epsilon: epsilon)
      return try add(.layerNormalization(norm), [x])
    }
    if axes == [1], rank == 4 {
      let norm = LayerNormalization(
        gamma: try vector("gamma", count: s[1]), beta: try vector("beta", count: s[1]), epsilon: epsilon)
      return try spatial(x) { _ in .layerNormalization(norm) }
    }
    throw unsupported("axes \(axes) of rank \(rank) (the last axis, or the channels of [N, C, H, W], are supported)")
  }

  /// The integer factors of a resize of `[N, C, H, W]` `x` to `target_size_height` x `target_size_width`,
  /// which must be whole multiples of H and W (an upsampling).
  mutating func wholeMultipleFactors(_ x: ValueID) throws -> (height: Int, width: Int) {
    let s = shape(x)
    guard s.count == 4 else { throw invalid("needs [N, C, H, W], got \(s)") }
    let (h, w) = (try int("target_size_height", 0), try int("target_size_width", 0))
    guard h >= s[2], w >= s[3], h % s[2] == 0, w % s[3] == 0, h / s[2] <= 4096, w / s[3] <= 4096 else {
      throw unsupported("target size \(h) x \(w) from \(s[2]) x \(s[3]) (whole multiples are supported)")
    }
    return (h / s[2], w / s[3])
  }

  /// `resize_nearest_neighbor` to whole multiples of the input size (an upsampling).
  mutating func resizeNearestNeighbor() throws -> ValueID {
    let x = try tensor("x")
    let factors = try wholeMultipleFactors(x)
    return try spatial(x) { _ in .upsampling2D(height: factors.height, width: factors.width, mode: .nearest) }
  }

  /// `resize_bilinear` to whole multiples of the input size. Its sampling modes (MIL op definitions):
  /// DEFAULT reads `i * (n - n / m) / (m - 1)` for an output of `m`, which is `i / f` for `m = f * n`;
  /// ALIGN_CORNERS and STRICT_ALIGN_CORNERS `i * (n - 1) / (m - 1)` (they differ only for `m = 1`);
  /// UNALIGN_CORNERS the half-pixel centres. OFFSET_CORNERS is another grid, not read.
  mutating func resizeBilinear() throws -> ValueID {
    let x = try tensor("x")
    let factors = try wholeMultipleFactors(x)
    let mode: UpsamplingMode
    switch try string("sampling_mode", "DEFAULT") {
    case "DEFAULT": mode = .bilinearAsymmetric
    case "ALIGN_CORNERS", "STRICT_ALIGN_CORNERS": mode = .bilinearAlignCorners
    case "UNALIGN_CORNERS": mode = .bilinear
    case let other: throw unsupported("sampling_mode \(other)")
    }
    return try spatial(x) { _ in .upsampling2D(height: factors.height, width: factors.width, mode: mode) }
  }

  mutating func upsample() throws -> ValueID {
    let x = try tensor("x")
    guard shape(x).count == 4 else { throw invalid("needs [N, C, H, W], got \(shape(x))") }
    var mode = UpsamplingMode.nearest
    if operation.type == "upsample_bilinear" {
      // align_corners (default true) aligns the corners; without it iOS 15 samples at half-pixel
      // centres, and iOS 16's half_pixel_centers (default: not align_corners) false samples at i / f.
      let aligned = try bool("align_corners", true)
      let halfPixel = try bool("half_pixel_centers", !aligned)
      switch (aligned, halfPixel) {
      case (true, false): mode = .bilinearAlignCorners
      case (false, true): mode = .bilinear
      case (false, false): mode = .bilinearAsymmetric
      case (true, true): throw invalid("align_corners and half_pixel_centers both true")
      }
    }
    let (fh, fw) = (try float("scale_factor_height", 1), try float("scale_factor_width", 1))
    guard fh == fh.rounded(), fw == fw.rounded(), fh >= 1, fw >= 1, fh <= 4096, fw <= 4096 else {
      throw unsupported("scale factors \(fh) x \(fw) (positive integers are supported)")
    }
    return try spatial(x) { _ in .upsampling2D(height: Int(fh), width: Int(fw), mode: mode) }
  }
}
