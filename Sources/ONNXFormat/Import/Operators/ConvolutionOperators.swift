import ModelIR

extension ONNXOperatorRegistry {
  /// `Conv` (1-D and 2-D, groups, dilations, explicit or automatic padding) and `ConvTranspose` (2-D,
  /// dilation 1, one group).
  static let convolutionOperators: [String: [ONNXOperatorEntry]] =
    entries(["Conv": [1, 11]], layout: .channelsFirst) { try $0.convolution() }
    .merging(entries(["ConvTranspose": [1, 11]], layout: .channelsFirst) { try $0.convolutionTranspose() }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// Optional input `index`, one bias per output channel.
  func channelBias(_ index: Int, channels: Int) throws -> Constant? {
    guard hasInput(index) else { return nil }
    let b = try requiredConstant(index, "the bias B")
    guard b.count == channels else { throw invalid("B has \(b.count) values for \(channels) output channels") }
    return Constant(shape: [channels], values: b.floats)
  }

  /// `Y = conv(X, W) + B`: `W` is `[M, C/group, kH, kW]`, the IR's kernel `[kH, kW, C/group, M]`.
  mutating func convolution() throws {
    let (x, oneD) = try spatialInput(0)
    let shape = builder.type(of: x).shape
    let w = try requiredConstant(1, "the weight W")
    guard w.shape.count == (oneD ? 3 : 4) else {
      throw invalid("W of shape \(w.shape) does not fit an input of rank \(oneD ? 3 : 4)")
    }
    let wShape = oneD ? [w.shape[0], w.shape[1], 1, w.shape[2]] : w.shape
    let (m, perGroup, kh, kw) = (wShape[0], wShape[1], wShape[2], wShape[3])
    let group = try int("group", 1)
    guard group >= 1, m % group == 0, shape[1] == perGroup * group else {
      throw invalid("W \(w.shape) with group \(group) does not fit \(shape[1]) input channels")
    }
    let kernel = try window("kernel_shape", [kh, kw], oneDimensional: oneD)
    guard kernel == [kh, kw] else { throw invalid("kernel_shape \(kernel) differs from W's \([kh, kw])") }
    let strides = try window("strides", [1, 1], oneDimensional: oneD)
    let dilations = try window("dilations", [1, 1], oneDimensional: oneD)
    var values = [Float](repeating: 0, count: w.count)
    for o in 0..<m {
      for i in 0..<perGroup {
        for y in 0..<kh {
          for xx in 0..<kw {
            values[((y * kw + xx) * perGroup + i) * m + o] = w.floats[((o * perGroup + i) * kh + y) * kw + xx]
          }
        }
      }
    }
    let bias = try channelBias(2, channels: m)
    let spatial = [shape[2], shape[3]]
    let pads = try padding(input: spatial, kernel: kernel, strides: strides, dilations: dilations, oneDimensional: oneD)
    var input = try channelsLast(x)
    var mode = Padding.valid
    if pads.contains(where: { $0 != 0 }) {
      if Self.isSamePadding(pads, input: spatial, kernel: kernel, strides: strides, dilations: dilations) {
        mode = .same
      } else {
        input = try add(
          .zeroPadding2D(Box2D(top: pads[0], bottom: pads[2], left: pads[1], right: pads[3])), [input], suffix: "__pad")
      }
    }
    let conv = Convolution2D(
      kernel: Constant(shape: [kh, kw, perGroup, m], values: values), bias: bias, strides: strides,
      dilations: dilations, padding: mode, groups: group)
    let y = try add(.convolution2D(conv), [input], suffix: "__nhwc")
    define(try spatialOutput(try channelsFirst(y), oneDimensional: oneD))
  }

  /// `ConvTranspose`: `W` is `[C, M, kH, kW]` (one group); the output size follows the spec's
  /// `stride * (in - 1) + output_padding + (k - 1) + 1 - pads`, or `output_shape` when given.
  mutating func convolutionTranspose() throws {
    let x = try tensor(0)
    let shape = builder.type(of: x).shape
    guard shape.count == 4 else {
      throw invalid("input of shape \(shape): only 2-D transposed convolutions ([N, C, H, W]) are supported")
    }
    let w = try requiredConstant(1, "the weight W")
    guard w.shape.count == 4, w.shape[0] == shape[1] else {
      throw invalid("W of shape \(w.shape) does not fit \(shape[1]) input channels")
    }
    guard try int("group", 1) == 1 else { throw invalid("group other than 1 is not supported") }
    let (c, m, kh, kw) = (w.shape[0], w.shape[1], w.shape[2], w.shape[3])
    let strides = try window("strides", [1, 1], oneDimensional: false)
    guard try window("dilations", [1, 1], oneDimensional: false) == [1, 1] else {
      throw invalid("dilations other than 1 are not supported")
    }
    let outputPadding = try window("output_padding", [0, 0], oneDimensional: false, positive: false)
    var pads = try ints("pads") ?? [0, 0, 0, 0]
    guard pads.count == 4, pads.allSatisfy({ $0 >= 0 }) else {
      throw invalid("attribute 'pads' \(pads) must be 4 non-negative values")
    }
    let autoPad = try string("auto_pad", "NOTSET")
    let kernelSize = [kh, kw]
    var full: [Int] = []
    for axis in 0..<2 {
      let scaled: Int = strides[axis] * (shape[2 + axis] - 1)
      full.append(scaled + outputPadding[axis] + kernelSize[axis])
    }
    if let given = try ints("output_shape") {
      guard given.count == 2, given.allSatisfy({ $0 >= 1 }) else {
        throw invalid("attribute 'output_shape' \(given) must be 2 positive sizes")
      }
      for axis in 0..<2 {
        let total: Int = full[axis] - given[axis]
        guard total >= 0 else { throw invalid("output_shape \(given) is larger than the full output \(full)") }
        let (small, large) = (total / 2, total - total / 2)
        (pads[axis], pads[axis + 2]) = autoPad == "SAME_UPPER" ? (small, large) : (large, small)
      }
    } else if autoPad == "SAME_UPPER" || autoPad == "SAME_LOWER" {
      for axis in 0..<2 {
        let wanted: Int = shape[2 + axis] * strides[axis]
        let total: Int = max(full[axis] - wanted, 0)
        let (small, large) = (total / 2, total - total / 2)
        (pads[axis], pads[axis + 2]) = autoPad == "SAME_UPPER" ? (small, large) : (large, small)
      }
    }
    // Kernel [C, M, kH, kW] to the IR's [kH, kW, M, C].
    var values = [Float](repeating: 0, count: w.count)
    for i in 0..<c {
      for o in 0..<m {
        for y in 0..<kh {
          for xx in 0..<kw {
            values[((y * kw + xx) * m + o) * c + i] = w.floats[((i * m + o) * kh + y) * kw + xx]
          }
        }
      }
    }
    let bias = try channelBias(2, channels: m)
    // The IR scatters into the full output (valid padding); the pads are cropped afterwards.
    let transposed = ConvolutionTranspose(
      kernel: Constant(shape: [kh, kw, m, c], values: values), bias: bias, strides: strides, padding: .valid,
      outputSize: full)
    var y = try add(.convolutionTranspose(transposed), [try channelsLast(x)], suffix: "__nhwc")
    let cropped: [Int] = [full[0] - pads[0] - pads[2], full[1] - pads[1] - pads[3]]
    full = cropped
    guard full.allSatisfy({ $0 >= 1 }) else { throw invalid("pads \(pads) remove the whole output") }
    if pads.contains(where: { $0 != 0 }) {
      y = try add(
        .cropping2D(Box2D(top: pads[0], bottom: pads[2], left: pads[1], right: pads[3])), [y], suffix: "__crop")
    }
    define(try channelsFirst(y))
  }
}
