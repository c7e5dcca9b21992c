import ModelIR

extension ONNXOperatorRegistry {
  /// `MaxPool`, `AveragePool` (explicit or automatic padding, `ceil_mode`, `count_include_pad`),
  /// `GlobalAveragePool`, `GlobalMaxPool`.
  static let poolingOperators: [String: [ONNXOperatorEntry]] =
    entries(["MaxPool": [1, 8, 10, 11, 12]], layout: .channelsFirst) { try $0.pooling(.max) }
    .merging(entries(["AveragePool": [1, 7, 10, 11, 19]], layout: .channelsFirst) { try $0.pooling(.average) }) {
      $0 + $1
    }
    .merging(entries(["GlobalAveragePool": [1]], layout: .channelsFirst) { try $0.globalPooling(.average) }) { $0 + $1 }
    .merging(entries(["GlobalMaxPool": [1]], layout: .channelsFirst) { try $0.globalPooling(.max) }) { $0 + $1 }
}

extension ONNXNodeContext {
  mutating func pooling(_ kind: PoolingKind) throws {
    let (x, oneD) = try spatialInput(0)
    let shape = builder.type(of: x).shape
    guard try int("storage_order", 0) == 0 else { throw invalid("storage_order 1 is not supported") }
    if outputCount > 1, !node.outputs[1].isEmpty { throw invalid("the Indices output is not supported") }
    guard hasAttribute("kernel_shape") else { throw invalid("attribute 'kernel_shape' is required") }
    let kernel = try window("kernel_shape", [1, 1], oneDimensional: oneD)
    let strides = try window("strides", [1, 1], oneDimensional: oneD)
    guard try window("dilations", [1, 1], oneDimensional: oneD) == [1, 1] else {
      throw invalid("dilations other than 1 are not supported")
    }
    let spatial = [shape[2], shape[3]]
    var pads = try padding(input: spatial, kernel: kernel, strides: strides, dilations: [1, 1], oneDimensional: oneD)
    let includePad = try int("count_include_pad", 0) == 1
    // ceil_mode: the last window may start in the input's last stride (not in the end padding); the
    // extra rows it covers are more end padding (which an average excludes, as the spec says).
    var ceilExtra = [0, 0]
    if try int("ceil_mode", 0) == 1 {
      for axis in 0..<2 {
        let padded = spatial[axis] + pads[axis] + pads[axis + 2]
        guard padded >= kernel[axis] else { throw invalid("kernel \(kernel) is larger than the padded input") }
        var output = (padded - kernel[axis] + strides[axis] - 1) / strides[axis] + 1
        if (output - 1) * strides[axis] >= spatial[axis] + pads[axis] { output -= 1 }
        ceilExtra[axis] = max((output - 1) * strides[axis] + kernel[axis] - padded, 0)
      }
    }
    var input = try channelsLast(x)
    var mode = Padding.valid
    let anyPad = pads.contains { $0 != 0 } || ceilExtra.contains { $0 != 0 }
    if anyPad {
      if ceilExtra == [0, 0], !includePad || kind == .max,
        Self.isSamePadding(pads, input: spatial, kernel: kernel, strides: strides, dilations: [1, 1])
      {
        // TensorFlow's same padding, which the IR's pooling excludes from averages.
        mode = .same
      } else if kind == .max {
        pads[2] += ceilExtra[0]
        pads[3] += ceilExtra[1]
        // Padding never wins a maximum.
        input = try add(
          .constantPad(
            ConstantPadding(
              before: [0, pads[0], pads[1], 0], after: [0, pads[2], pads[3], 0], value: -Float.greatestFiniteMagnitude)),
          [input], suffix: "__pad")
      } else if includePad && ceilExtra == [0, 0] {
        input = try add(
          .zeroPadding2D(Box2D(top: pads[0], bottom: pads[2], left: pads[1], right: pads[3])), [input], suffix: "__pad")
      } else {
        // An average that leaves out the padding: the average over the zero-padded input, times the
        // window size over the input elements each window covers (known from the shapes alone).
        let (before, after) = ([pads[0], pads[1]], [pads[2] + ceilExtra[0], pads[3] + ceilExtra[1]])
        input = try add(
          .zeroPadding2D(Box2D(top: before[0], bottom: after[0], left: before[1], right: after[1])), [input],
          suffix: "__pad")
        let counts = (0..<2).map { axis -> [Int] in
          let padded = spatial[axis] + before[axis] + after[axis]
          let outputs = (padded - kernel[axis]) / strides[axis] + 1
          return (0..<outputs).map { o in
            let start = o * strides[axis] - before[axis]
            return Swift.max(0, Swift.min(start + kernel[axis], spatial[axis]) - Swift.max(start, 0))
          }
        }
        guard counts.allSatisfy({ $0.allSatisfy { $0 > 0 } }) else {
          throw invalid("a pooling window covers only padding")
        }
        let window = Float(kernel[0] * kernel[1])
        let ratios = counts[0].flatMap { h in counts[1].map { w in window / Float(h * w) } }
        let pooled = try add(
          .pooling2D(Pooling2D(kind: .average, pool: kernel, strides: strides, padding: .valid)), [input],
          suffix: "__sum_nhwc")
        let scale = try add(
          .constant(Constant(shape: [1, counts[0].count, counts[1].count, 1], values: ratios)), [], suffix: "__counts")
        let y = try add(.elementwise(.multiply), [pooled, scale], suffix: "__nhwc")
        return define(try spatialOutput(try channelsFirst(y), oneDimensional: oneD))
      }
    }
    let pool = Pooling2D(kind: kind, pool: kernel, strides: strides, padding: mode)
    let y = try add(.pooling2D(pool), [input], suffix: "__nhwc")
    define(try spatialOutput(try channelsFirst(y), oneDimensional: oneD))
  }

  mutating func globalPooling(_ kind: PoolingKind) throws {
    let (x, oneD) = try spatialInput(0)
    let y = try add(.globalPooling2D(kind: kind, keepDims: true), [try channelsLast(x)], suffix: "__nhwc")
    define(try spatialOutput(try channelsFirst(y), oneDimensional: oneD))
  }
}
