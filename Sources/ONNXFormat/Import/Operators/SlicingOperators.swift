import ModelIR

/// `Gather`, `Slice`, `Pad`, `Split`, `Expand` and `Resize`/`Upsample` (registered in `ShapeOperators.swift`).
extension ONNXNodeContext {
  /// Gathers along `axis`: folded on constants; on a tensor with constant indices, one slice per index.
  mutating func gather() throws {
    let shape = try self.shape(0)
    let axis = try self.axis(try int("axis", 0), rank: shape.count)
    // A constant table looked up by computed ids: an embedding.
    if try constant(1) == nil, let table = try constant(0), shape.count == 2, axis == 0 {
      define(try add(.embedding(table: Constant(shape: table.shape, values: table.floats)), [try tensor(1)]))
      return
    }
    let indices = try requiredConstant(1, "indices")
    guard let raw = indices.ints else { throw invalid("indices must be integers") }
    let resolved = try raw.map { index -> Int in
      let i = index < 0 ? index + shape[axis] : index
      guard i >= 0, i < shape[axis] else { throw invalid("index \(index) is outside an axis of \(shape[axis])") }
      return i
    }
    let outShape = Array(shape[..<axis]) + indices.shape + Array(shape[(axis + 1)...])
    let outer = shape[..<axis].reduce(1, *)
    let inner = shape[(axis + 1)...].reduce(1, *)
    if let c = try constant(0) {
      var order: [Int] = []
      for o in 0..<outer {
        for i in resolved { for k in 0..<inner { order.append((o * shape[axis] + i) * inner + k) } }
      }
      define(
        ONNXConstant(
          shape: outShape, floats: order.map { c.floats[$0] }, ints: c.ints.map { ints in order.map { ints[$0] } }))
      return
    }
    let x = try tensor(0)
    var parts: [ValueID] = []
    for (n, i) in resolved.enumerated() {
      var begin = [Int](repeating: 0, count: shape.count)
      var end = shape
      (begin[axis], end[axis]) = (i, i + 1)
      parts.append(
        try add(
          .slice(StridedSlice(begin: begin, end: end, strides: Array(repeating: 1, count: shape.count))), [x],
          suffix: "__\(n)"))
    }
    let joined = parts.count == 1 ? parts[0] : try add(.concatenate(axis: axis), parts, suffix: "__joined")
    define(try add(.reshape(targetShape: outShape), [joined]))
  }

  /// Slices with constant starts, ends, axes and steps (attributes before opset 10): a strided slice of a
  /// tensor (positive steps), folded on constants (any step).
  mutating func slice() throws {
    let shape = try self.shape(0)
    let starts: [Int]
    let ends: [Int]
    var axes: [Int]?
    var steps: [Int]?
    if opset < 10 {
      guard let s = try ints("starts"), let e = try ints("ends") else {
        throw invalid("attributes 'starts' and 'ends' are required")
      }
      (starts, ends, axes) = (s, e, try ints("axes"))
    } else {
      starts = try requiredInts(1, "starts")
      ends = try requiredInts(2, "ends")
      if hasInput(3) { axes = try requiredInts(3, "axes") }
      if hasInput(4) { steps = try requiredInts(4, "steps") }
    }
    let axisList = try (axes ?? Array(0..<starts.count)).map { try axis($0, rank: shape.count, "axes") }
    let stepList = steps ?? Array(repeating: 1, count: starts.count)
    guard ends.count == starts.count, axisList.count == starts.count, stepList.count == starts.count,
      Set(axisList).count == axisList.count
    else {
      throw invalid("starts, ends, axes and steps must have the same length, each axis once")
    }
    var begin = [Int](repeating: 0, count: shape.count)
    var end = shape
    var stride = [Int](repeating: 1, count: shape.count)
    for (n, a) in axisList.enumerated() {
      let step = stepList[n]
      guard step != 0 else { throw invalid("a step of 0") }
      let size = shape[a]
      func clamp(_ v: Int, low: Int, high: Int) -> Int { Swift.min(Swift.max(v < 0 ? v + size : v, low), high) }
      if step > 0 {
        (begin[a], end[a]) = (clamp(starts[n], low: 0, high: size), clamp(ends[n], low: 0, high: size))
      } else {
        // ends of -(size + 1) or below mean "through index 0".
        (begin[a], end[a]) = (
          clamp(starts[n], low: -1, high: size - 1), ends[n] < -size ? -1 : clamp(ends[n], low: -1, high: size - 1)
        )
      }
      stride[a] = step
    }
    let counts = shape.indices.map { a in
      stride[a] > 0
        ? Swift.max(0, (end[a] - begin[a] + stride[a] - 1) / stride[a])
        : Swift.max(0, (begin[a] - end[a] - stride[a] - 1) / -stride[a])
    }
    if let c = try constant(0) {
      var order: [Int] = []
      var strides = [Int](repeating: 1, count: shape.count)
      for a in shape.indices.dropLast().reversed() { strides[a] = strides[a + 1] * shape[a + 1] }
      let total = counts.reduce(1, *)
      var coordinate = [Int](repeating: 0, count: shape.count)
      for _ in 0..<total {
        order.append(shape.indices.reduce(0) { $0 + (begin[$1] + coordinate[$1] * stride[$1]) * strides[$1] })
        var a = shape.count - 1
        while a >= 0 {
          coordinate[a] += 1
          if coordinate[a] < counts[a] { break }
          coordinate[a] = 0
          a -= 1
        }
      }
      define(
        ONNXConstant(
          shape: counts, floats: order.map { c.floats[$0] }, ints: c.ints.map { ints in order.map { ints[$0] } }))
      return
    }
    guard stride.allSatisfy({ $0 > 0 }) else { throw invalid("negative steps on a computed tensor are not supported") }
    guard counts.allSatisfy({ $0 > 0 }) else { throw invalid("the slice is empty") }
    if counts == shape {
      define(try add(.reshape(targetShape: shape), [try tensor(0)]))
      return
    }
    let last = shape.indices.map { begin[$0] + (counts[$0] - 1) * stride[$0] + 1 }
    define(try add(.slice(StridedSlice(begin: begin, end: last, strides: stride)), [try tensor(0)]))
  }

  /// Constant padding (`pads` `[x1_begin, x2_begin, ..., x1_end, ...]`, attribute before opset 11);
  /// `axes` (opset 18) picks the axes the pads are for.
  mutating func pad() throws {
    let shape = try self.shape(0)
    let mode = try string("mode", "constant")
    guard ["constant", "reflect", "edge"].contains(mode) else {
      throw invalid("mode '\(mode)' is not supported (constant, reflect and edge are)")
    }
    var pads: [Int]
    var value: Float = 0
    if opset < 11 {
      guard let p = try ints(opset < 2 ? "paddings" : "pads") else { throw invalid("attribute 'pads' is required") }
      pads = p
      value = try float("value", 0)
    } else {
      pads = try requiredInts(1, "pads")
      if hasInput(2) {
        let c = try requiredConstant(2, "constant_value")
        guard c.count == 1 else { throw invalid("constant_value must be one value") }
        value = c.floats[0]
      }
    }
    var axes = Array(shape.indices)
    if opset >= 18, hasInput(3) { axes = try requiredInts(3, "axes").map { try axis($0, rank: shape.count, "axes") } }
    guard pads.count == 2 * axes.count else { throw invalid("pads \(pads) must have \(2 * axes.count) values") }
    guard pads.allSatisfy({ $0 >= 0 && $0 <= GraphLimits.maxElementCount }) else {
      throw invalid("negative pads (cropping) are not supported")
    }
    var before = [Int](repeating: 0, count: shape.count)
    var after = before
    for (n, a) in axes.enumerated() { (before[a], after[a]) = (pads[n], pads[n + axes.count]) }
    guard value.isFinite else { throw invalid("constant_value \(value) is not finite") }
    if before.allSatisfy({ $0 == 0 }) && after.allSatisfy({ $0 == 0 }) {
      define(try add(.reshape(targetShape: shape), [try tensor(0)]))
      return
    }
    guard mode == "constant" else {
      define(try mirroredPad(before: before, after: after, reflect: mode == "reflect"))
      return
    }
    define(try add(.constantPad(ConstantPadding(before: before, after: after, value: value)), [try tensor(0)]))
  }

  /// `reflect` and `edge` padding as ONNX defines them, axis by axis: reflect mirrors the tensor without
  /// repeating its border (`[1, 2, 3, 4]` padded by 2 is `[3, 2, 1, 2, 3, 4, 3, 2]`), edge repeats the
  /// border (`[1, 1, 1, 2, 3, 4, 4, 4]`). Written as one-index slices joined along the axis, which every
  /// writer and the runtime hold; reflect pads must be smaller than the axis (as onnxruntime requires),
  /// edge pads at most `maximumEdgePad` (each is one slice).
  mutating func mirroredPad(before: [Int], after: [Int], reflect: Bool) throws -> ValueID {
    let maximumEdgePad = 1024
    var x = try tensor(0)
    var current = try self.shape(0)
    for axis in current.indices where before[axis] > 0 || after[axis] > 0 {
      let size = current[axis]
      if reflect {
        guard before[axis] < size, after[axis] < size else {
          throw invalid(
            "reflect pads \(before[axis]) and \(after[axis]) on axis \(axis) must be smaller than its size \(size)")
        }
      } else {
        guard before[axis] <= maximumEdgePad, after[axis] <= maximumEdgePad else {
          throw invalid(
            "edge pads \(before[axis]) and \(after[axis]) on axis \(axis) (at most \(maximumEdgePad) are read)")
        }
      }
      let source = x
      let shape = current
      var slices: [Int: ValueID] = [:]
      func index(_ i: Int) throws -> ValueID {
        if let done = slices[i] { return done }
        var begin = [Int](repeating: 0, count: shape.count)
        var end = shape
        (begin[axis], end[axis]) = (i, i + 1)
        let part = try add(
          .slice(StridedSlice(begin: begin, end: end, strides: Array(repeating: 1, count: shape.count))), [source],
          suffix: "__axis\(axis)_\(i)")
        slices[i] = part
        return part
      }
      var parts: [ValueID] = []
      for k in stride(from: before[axis], through: 1, by: -1) { parts.append(try index(reflect ? k : 0)) }
      parts.append(source)
      for k in stride(from: 1, through: after[axis], by: 1) {
        parts.append(try index(reflect ? size - 1 - k : size - 1))
      }
      x = try add(.concatenate(axis: axis), parts, suffix: "__padded\(axis)")
      current[axis] += before[axis] + after[axis]
    }
    return x
  }

  /// Equal parts, or the sizes given (attribute before opset 13, input from 13, `num_outputs` from 18).
  mutating func split() throws {
    let shape = try self.shape(0)
    let axis = try self.axis(try int("axis", 0), rank: shape.count)
    let outputs = node.outputs.count
    var sizes: [Int]
    if opset < 13, let given = try ints("split") {
      sizes = given
    } else if opset >= 13, hasInput(1) {
      sizes = try requiredInts(1, "split")
    } else {
      let parts = opset >= 18 ? try int("num_outputs", outputs) : outputs
      guard parts >= 1 else { throw invalid("num_outputs \(parts) must be 1 or more") }
      let size = (shape[axis] + parts - 1) / parts
      sizes = (0..<parts).map { Swift.min(size, Swift.max(shape[axis] - $0 * size, 0)) }
    }
    guard sizes.count == outputs, sizes.allSatisfy({ $0 >= 1 }), sizes.reduce(0, +) == shape[axis] else {
      throw invalid("split \(sizes) does not divide an axis of \(shape[axis]) into \(outputs) outputs")
    }
    let x = try tensor(0)
    var start = 0
    for (n, size) in sizes.enumerated() {
      var begin = [Int](repeating: 0, count: shape.count)
      var end = shape
      (begin[axis], end[axis]) = (start, start + size)
      start += size
      define(
        try add(
          .slice(StridedSlice(begin: begin, end: end, strides: Array(repeating: 1, count: shape.count))), [x],
          suffix: "__part\(n)"), output: n)
    }
  }

  /// Broadcasts input 0 to the constant shape (numpy rules, either side may be 1): a multiply by ones.
  mutating func expand() throws {
    let shape = try self.shape(0)
    let requested = try requiredInts(1, "shape")
    guard let target = Broadcasting.shape([shape, requested]) else {
      throw invalid("shape \(requested) does not broadcast with \(shape)")
    }
    if target == shape {
      if let c = try constant(0) { return define(c) }
      define(try add(.reshape(targetShape: shape), [try tensor(0)]))
      return
    }
    if let c = try constant(0), let count = GraphLimits.elementCount(target), count <= ONNXConstant.maxFoldedCount {
      // A constant is broadcast at import, integers kept (exporters expand index tensors).
      let sources = (0..<count).map { Self.broadcastIndex($0, of: target, into: c.shape) }
      define(
        ONNXConstant(
          shape: target, floats: sources.map { c.floats[$0] }, ints: c.ints.map { ints in sources.map { ints[$0] } }))
      return
    }
    let ones = try add(
      .constant(Constant(shape: target, values: Array(repeating: 1, count: target.reduce(1, *)))), [], suffix: "__ones")
    define(try add(.elementwise(.multiply), [try tensor(0), ones]))
  }

  /// Integer upscaling of H and W of an `[N, C, H, W]` tensor: nearest (asymmetric, floor, as Keras'
  /// UpSampling2D), or linear with half-pixel, aligned-corner or asymmetric coordinates.
  mutating func resize() throws {
    let shape = try self.shape(0)
    guard shape.count == 4 else { throw invalid("input of shape \(shape): only [N, C, H, W] is supported") }
    let mode = try string("mode", "nearest")
    var scales: [Float]?
    if opType == "Upsample" {
      scales = opset < 9 ? (node.attribute("scales")?.floats) : try requiredConstant(1, "scales").floats
    } else {
      let scalesIndex = opset < 11 ? 1 : 2
      if hasInput(scalesIndex), let c = try constant(scalesIndex), c.count > 0 { scales = c.floats }
      if scales == nil, opset >= 11, hasInput(3) {
        let sizes = try requiredInts(3, "sizes")
        guard sizes.count == 4 else { throw invalid("sizes \(sizes) must have 4 values") }
        scales = zip(sizes, shape).map { Float($0) / Float($1) }
      }
    }
    guard let scales, scales.count == 4, scales[0] == 1, scales[1] == 1 else {
      throw invalid("scales must be 1 for N and C")
    }
    let factors = scales[2...].map { Int($0) }
    guard zip(factors, scales[2...]).allSatisfy({ Float($0) == $1 && $0 >= 1 }) else {
      throw invalid("scales \(scales): only integer upscaling is supported")
    }
    let transform = try string("coordinate_transformation_mode", "half_pixel")
    let sampling: UpsamplingMode
    switch mode {
    case "nearest":
      // Integer upscaling picks the same source pixel for asymmetric floor, the default half-pixel
      // round_prefer_floor and TensorFlow's tf_half_pixel_for_nn floor (floor((x + 0.5) / s) is floor(x / s)
      // for an integer s); the others shift it.
      let nearest = try string("nearest_mode", "round_prefer_floor")
      let samePixel =
        (transform == "asymmetric" && nearest == "floor")
        || (transform == "half_pixel" && nearest == "round_prefer_floor")
        || (transform == "tf_half_pixel_for_nn" && nearest == "floor")
      guard opType == "Upsample" || opset < 11 || samePixel else {
        throw invalid("nearest resizing with \(transform) and \(nearest) is not supported")
      }
      sampling = .nearest
    case "linear", "bilinear":
      // Upsample and opset 10's Resize sample at x / scale; opset 11 names its coordinate transformation
      // (pytorch_half_pixel differs from half_pixel only for an output of one pixel, which upscaling never makes).
      switch opType == "Upsample" || opset < 11 ? "asymmetric" : transform {
      case "half_pixel", "pytorch_half_pixel": sampling = .bilinear
      case "align_corners": sampling = .bilinearAlignCorners
      case "asymmetric": sampling = .bilinearAsymmetric
      default:
        throw invalid(
          "linear resizing with \(transform) coordinates is not supported (half_pixel, pytorch_half_pixel, align_corners and asymmetric are)"
        )
      }
    default: throw invalid("mode '\(mode)' is not supported")
    }
    let y = try add(
      .upsampling2D(height: factors[0], width: factors[1], mode: sampling), [try channelsLast(try tensor(0))],
      suffix: "__nhwc")
    define(try channelsFirst(y))
  }
}
