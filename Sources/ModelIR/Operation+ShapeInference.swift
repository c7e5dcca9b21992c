extension Operation {
  /// The output shape for these input shapes; throws when they do not fit.
  public func outputShape(inputShapes: [[Int]], node: String) throws -> [Int] {
    func fail(_ detail: String) -> GraphError { .shapeMismatch(node: node, detail: detail) }
    func requireArity(_ n: Int) throws {
      if inputShapes.count != n { throw GraphError.arity(node: node, expected: "\(n)", actual: inputShapes.count) }
    }
    /// The `[H, W, C]` of an image, or of each image along leading axes (TimeDistributed).
    func requireImage(_ shape: [Int]) throws -> (Int, Int, Int) {
      guard shape.count >= 3 else { throw fail("expects a [H, W, C] input, got \(shape)") }
      return (shape[shape.count - 3], shape[shape.count - 2], shape[shape.count - 1])
    }
    /// Leading axes of an image input, kept in front of the output.
    let leading = inputShapes.first.map { Array($0.dropLast(3)) } ?? []
    let checked = CheckedShape(node: node)
    for shape in inputShapes { _ = try checked.count(shape) }
    /// Fails unless every window parameter (kernel, stride, dilation, ...) is 1 to `GraphLimits.maxSize`.
    func requirePositive(_ name: String, _ values: [Int]) throws {
      guard GraphLimits.areSizes(values) else { throw fail("\(name) \(values) must be 1 to \(GraphLimits.maxSize)") }
    }
    /// Fails unless the window's padded extent along one axis (the input plus the padding `padding` adds,
    /// at least the dilated kernel) is at most `GraphLimits.maxSize`: writers spell `same` padding out as
    /// explicit pads, which readers apply as their own step.
    func requireWindowFits(_ name: String, input: Int, kernel: Int, stride: Int, dilation: Int, padding: Padding) throws
      -> Int
    {
      guard let extent = padding.paddedExtent(input: input, kernel: kernel, stride: stride, dilation: dilation),
        extent <= GraphLimits.maxSize
      else {
        throw fail(
          "a \(name) of \(kernel) with dilation \(dilation) and stride \(stride) over \(input) spans more than \(GraphLimits.maxSize) with its padding"
        )
      }
      return extent
    }
    /// Fails unless the padded input, `leading + [height, width, channels]`, holds at most `GraphLimits.maxElementCount`
    /// elements (a reader applies explicit pads as a step whose output is that tensor).
    func requirePaddedInputFits(_ height: Int, _ width: Int, _ channels: Int) throws {
      guard GraphLimits.elementCount(leading + [height, width, channels]) != nil else {
        throw fail(
          "the input with its padding, \(leading + [height, width, channels]), holds more than \(GraphLimits.maxElementCount) elements"
        )
      }
    }
    /// Fails unless every padding or crop amount is 0 to `GraphLimits.maxSize`.
    func requireAmounts(_ name: String, _ values: [Int]) throws {
      guard GraphLimits.areSizes(values, minimum: 0) else {
        throw fail("\(name) \(values) must be 0 to \(GraphLimits.maxSize)")
      }
    }

    switch self {
    case .cast:
      try requireArity(1)
      return inputShapes[0]

    case .convolution2D(let conv):
      try requireArity(1)
      let (h, w, c) = try requireImage(inputShapes[0])
      guard conv.kernel.shape.count == 4 else { throw fail("kernel \(conv.kernel.shape) is not [kh, kw, in, out]") }
      try requirePositive("kernel size", [conv.kernelHeight, conv.kernelWidth])
      try requirePositive("strides", [conv.strideHeight, conv.strideWidth])
      try requirePositive("dilation", [conv.dilationHeight, conv.dilationWidth])
      try requirePositive("groups", [conv.groups])
      guard c == (try checked.multiply(conv.inputChannelsPerGroup, conv.groups)), conv.outputChannels % conv.groups == 0
      else {
        throw fail("kernel \(conv.kernel.shape) with \(conv.groups) groups does not fit \(c) input channels")
      }
      try requirePaddedInputFits(
        try requireWindowFits(
          "kernel", input: h, kernel: conv.kernelHeight, stride: conv.strideHeight, dilation: conv.dilationHeight,
          padding: conv.padding),
        try requireWindowFits(
          "kernel", input: w, kernel: conv.kernelWidth, stride: conv.strideWidth, dilation: conv.dilationWidth,
          padding: conv.padding), c)
      let oh = conv.padding.outputLength(
        input: h, kernel: conv.kernelHeight, stride: conv.strideHeight, dilation: conv.dilationHeight)
      let ow = conv.padding.outputLength(
        input: w, kernel: conv.kernelWidth, stride: conv.strideWidth, dilation: conv.dilationWidth)
      guard oh > 0, ow > 0 else {
        throw fail("kernel \(conv.kernelHeight)x\(conv.kernelWidth) is larger than the \(h)x\(w) input")
      }
      if let bias = conv.bias, bias.count != conv.outputChannels {
        throw fail("bias has \(bias.count) values for \(conv.outputChannels) channels")
      }
      return leading + [oh, ow, conv.outputChannels]

    case .dense(let dense):
      try requireArity(1)
      guard let units = inputShapes[0].last, units == dense.inputUnits else {
        throw fail("kernel \(dense.kernel.shape) does not fit input \(inputShapes[0])")
      }
      if let bias = dense.bias, bias.count != dense.outputUnits {
        throw fail("bias has \(bias.count) values for \(dense.outputUnits) units")
      }
      return inputShapes[0].dropLast() + [dense.outputUnits]

    case .batchNormalization(let bn):
      try requireArity(1)
      guard let channels = inputShapes[0].last, channels == bn.channels,
        [bn.gamma, bn.beta, bn.variance].allSatisfy({ $0.count == channels })
      else { throw fail("statistics for \(bn.channels) channels do not fit input \(inputShapes[0])") }
      return inputShapes[0]

    case .activation(let activation):
      try requireArity(1)
      // Parameters every writer and Core ML take as finite numbers (a clip's bounds may be infinite, not NaN).
      var finite: [Float] = []
      var notNaN: [Float] = []
      switch activation {
      case .linear(let scale, let offset), .hardSigmoid(let scale, let offset): finite = [scale, offset]
      case .leakyReLU(let alpha), .elu(let alpha): finite = [alpha]
      case .clippedReLU(let maxValue, let slope, let threshold):
        (finite, notNaN) = ([slope, threshold], maxValue.map { [$0] } ?? [])
      case .clip(let low, let high): notNaN = [low, high]
      case .thresholdedReLU(let theta): notNaN = [theta]
      // Core ML's unary function f(scale * x + shift) with its power, threshold or epsilon (a shift of inf
      // in a classic unary layer made every value infinite).
      // (alpha is read by power and threshold, epsilon by inverse, rsqrt and log, and only there.)
      case .unary(let function):
        finite = [function.scale, function.shift]
        if [.power, .threshold].contains(function.kind) { finite.append(function.alpha) }
        if [.inverse, .rsqrt, .log].contains(function.kind) { finite.append(function.epsilon) }
      default: break
      }
      guard finite.allSatisfy(\.isFinite), !notNaN.contains(where: \.isNaN) else {
        if case .unary(let f) = activation {
          throw fail(
            "unary \(f.kind) (alpha \(f.alpha), epsilon \(f.epsilon), scale \(f.scale), shift \(f.shift)) has a parameter that is not a finite number"
          )
        }
        throw fail("activation \(activation) has a parameter that is not a finite number")
      }
      if case .parametricReLU(let alpha) = activation {
        let shape = inputShapes[0]
        guard alpha.count == shape.last ?? 0 || alpha.count == shape.reduce(1, *) else {
          throw fail("PReLU alpha \(alpha.shape) does not fit input \(shape)")
        }
      }
      return inputShapes[0]

    case .softmax(let axis):
      try requireArity(1)
      guard axis >= 0, axis < inputShapes[0].count else {
        throw fail("softmax axis \(axis) is outside \(inputShapes[0])")
      }
      return inputShapes[0]

    case .pooling2D(let pool):
      try requireArity(1)
      let (h, w, c) = try requireImage(inputShapes[0])
      try requirePositive("pool size", [pool.poolHeight, pool.poolWidth])
      try requirePositive("strides", [pool.strideHeight, pool.strideWidth])
      try requirePaddedInputFits(
        try requireWindowFits(
          "pool", input: h, kernel: pool.poolHeight, stride: pool.strideHeight, dilation: 1, padding: pool.padding),
        try requireWindowFits(
          "pool", input: w, kernel: pool.poolWidth, stride: pool.strideWidth, dilation: 1, padding: pool.padding), c)
      let oh = pool.padding.outputLength(input: h, kernel: pool.poolHeight, stride: pool.strideHeight)
      let ow = pool.padding.outputLength(input: w, kernel: pool.poolWidth, stride: pool.strideWidth)
      guard oh > 0, ow > 0 else {
        throw fail("pool \(pool.poolHeight)x\(pool.poolWidth) is larger than the \(h)x\(w) input")
      }
      return leading + [oh, ow, c]

    case .globalPooling2D(_, let keepDims):
      try requireArity(1)
      let (_, _, c) = try requireImage(inputShapes[0])
      return leading + (keepDims ? [1, 1, c] : [c])

    case .flatten:
      try requireArity(1)
      return [try checked.count(inputShapes[0])]

    case .reshape(let target):
      try requireArity(1)
      guard GraphLimits.areSizes(target), GraphLimits.elementCount(target) == GraphLimits.elementCount(inputShapes[0])
      else {
        throw fail("cannot reshape \(inputShapes[0]) to \(target)")
      }
      return target

    case .permute(let order):
      try requireArity(1)
      let shape = inputShapes[0]
      guard order.sorted() == Array(0..<shape.count) else { throw fail("permutation \(order) does not fit \(shape)") }
      return order.map { shape[$0] }

    case .channelShuffle(let axis, let groups):
      try requireArity(1)
      let shape = inputShapes[0]
      guard axis >= 0, axis < shape.count else { throw fail("channel shuffle axis \(axis) is outside \(shape)") }
      try requirePositive("groups", [groups])
      guard shape[axis] % groups == 0 else {
        throw fail("\(groups) groups do not divide the \(shape[axis]) entries of axis \(axis)")
      }
      return shape

    case .zeroPadding2D(let box):
      try requireArity(1)
      let (h, w, c) = try requireImage(inputShapes[0])
      try requireAmounts("padding", [box.top, box.bottom, box.left, box.right])
      return leading + [try checked.add(h, box.top, box.bottom), try checked.add(w, box.left, box.right), c]

    case .cropping2D(let box):
      try requireArity(1)
      let (h, w, c) = try requireImage(inputShapes[0])
      try requireAmounts("cropping", [box.top, box.bottom, box.left, box.right])
      let oh = h - (try checked.add(box.top, box.bottom))
      let ow = w - (try checked.add(box.left, box.right))
      guard oh > 0, ow > 0 else { throw fail("cropping \(box) removes all of the \(h)x\(w) input") }
      return leading + [oh, ow, c]

    case .upsampling2D(let fh, let fw, _):
      try requireArity(1)
      let (h, w, c) = try requireImage(inputShapes[0])
      try requirePositive("upsampling factors", [fh, fw])
      return leading + [try checked.multiply(h, fh), try checked.multiply(w, fw), c]

    case .elementwise(let kind):
      if let arity = kind.arity {
        guard inputShapes.count == arity else {
          throw GraphError.arity(node: node, expected: "\(arity)", actual: inputShapes.count)
        }
      } else if inputShapes.count < 2 {
        throw GraphError.arity(node: node, expected: "2 or more", actual: inputShapes.count)
      }
      guard let shape = Broadcasting.shape(inputShapes) else {
        throw fail("\(kind.rawValue) of shapes \(inputShapes) that do not broadcast")
      }
      return shape

    case .concatenate(let axis):
      guard inputShapes.count >= 2 else {
        throw GraphError.arity(node: node, expected: "2 or more", actual: inputShapes.count)
      }
      let rank = inputShapes[0].count
      guard axis >= 0, axis < rank else { throw fail("axis \(axis) is outside rank \(rank)") }
      for shape in inputShapes {
        var a = shape
        var b = inputShapes[0]
        guard a.count == rank else { throw fail("concatenating tensors of different ranks \(inputShapes)") }
        a[axis] = 0
        b[axis] = 0
        guard a == b else { throw fail("concatenating \(inputShapes) along axis \(axis)") }
      }
      var out = inputShapes[0]
      out[axis] = 0
      for shape in inputShapes { out[axis] = try checked.add(out[axis], shape[axis]) }
      return out

    case .constant(let value):
      try requireArity(0)
      return value.shape

    case .reduce(let reduction):
      try requireArity(1)
      let shape = inputShapes[0]
      guard reduction.axes.allSatisfy({ $0 >= 0 && $0 < shape.count }) else {
        throw fail("reduction axes \(reduction.axes) outside \(shape)")
      }
      if reduction.keepDims { return shape.enumerated().map { reduction.axes.contains($0.offset) ? 1 : $0.element } }
      return shape.enumerated().filter { !reduction.axes.contains($0.offset) }.map(\.element)

    case .constantPad(let padding):
      try requireArity(1)
      let shape = inputShapes[0]
      guard padding.before.count == shape.count, padding.after.count == shape.count else {
        throw fail("padding \(padding.before)/\(padding.after) does not fit \(shape)")
      }
      try requireAmounts("padding", padding.before + padding.after)
      return try shape.indices.map { try checked.add(shape[$0], padding.before[$0], padding.after[$0]) }

    case .slice(let slice):
      try requireArity(1)
      let shape = inputShapes[0]
      guard slice.begin.count == shape.count, slice.end.count == shape.count, slice.strides.count == shape.count,
        shape.indices.allSatisfy({
          slice.begin[$0] >= 0 && slice.end[$0] <= shape[$0] && slice.strides[$0] > 0
            && slice.strides[$0] <= GraphLimits.maxSize
        })
      else { throw fail("slice \(slice.begin)..<\(slice.end) by \(slice.strides) does not fit \(shape)") }
      let result = shape.indices.map { slice.length(axis: $0) }
      guard result.allSatisfy({ $0 > 0 }) else { throw fail("slice of \(shape) is empty") }
      return result

    case .recurrent(let r):
      // x, then optionally the initial states of a single direction: h, and c for an LSTM.
      let states = r.backward == nil ? (r.cell == .lstm ? [1, 3] : [1, 2]) : [1]
      guard states.contains(inputShapes.count) else {
        throw GraphError.arity(
          node: node, expected: states.map(String.init).joined(separator: " or "), actual: inputShapes.count)
      }
      for state in inputShapes.dropFirst() where state != [r.units] {
        throw fail("an initial state \(state) does not fit \(r.units) units")
      }
      let shape = inputShapes[0]
      try requirePositive("units", [r.units])
      let width = try checked.multiply(r.cell.gates, r.units)
      guard shape.count == 2 else { throw fail("a recurrent layer needs a [T, C] input, got \(shape)") }
      for weights in [r.forward, r.backward].compactMap({ $0 }) {
        let biasCount = r.cell == .gru(resetAfter: true) ? 2 * width : width
        guard weights.kernel.shape == [shape[1], width], weights.recurrentKernel.shape == [r.units, width],
          weights.bias.map({ $0.count == biasCount }) ?? true
        else {
          throw fail(
            "recurrent weights \(weights.kernel.shape), \(weights.recurrentKernel.shape) do not fit input \(shape) and \(r.units) units"
          )
        }
      }
      if r.returnsCellState {
        guard r.cell == .lstm, !r.returnSequences else {
          throw fail("only an LSTM's last step has a cell state to return")
        }
      }
      return r.returnSequences ? [shape[0], r.outputUnits] : [r.outputUnits]

    case .embedding(let table):
      try requireArity(1)
      guard table.shape.count == 2 else { throw fail("embedding table \(table.shape) is not [vocabulary, D]") }
      return inputShapes[0] + [table.shape[1]]

    case .custom(let layer):
      guard !inputShapes.isEmpty else { throw GraphError.arity(node: node, expected: "1 or more", actual: 0) }
      return layer.outputShape

    case .convolutionTranspose(let conv):
      try requireArity(1)
      let (_, _, c) = try requireImage(inputShapes[0])
      guard conv.kernel.shape.count == 4, conv.strides.count == 2, conv.outputSize.count == 2 else {
        throw fail("transposed kernel \(conv.kernel.shape) is not [kh, kw, out, in]")
      }
      try requirePositive("strides", conv.strides)
      guard c == conv.inputChannels, conv.outputSize.allSatisfy({ $0 > 0 }) else {
        throw fail("transposed kernel \(conv.kernel.shape) does not fit \(c) input channels")
      }
      if let bias = conv.bias, bias.count != conv.outputChannels {
        throw fail("bias has \(bias.count) values for \(conv.outputChannels) channels")
      }
      return leading + conv.outputSize + [conv.outputChannels]

    case .l2Normalize:
      try requireArity(1)
      return inputShapes[0]

    case .layerNormalization(let norm):
      try requireArity(1)
      // Core ML's layer normalization takes an epsilon of 0 or more (a negative one can make the variance
      // plus epsilon negative: its square root is not a number).
      guard norm.epsilon.isFinite, norm.epsilon >= 0 else {
        throw fail("epsilon \(norm.epsilon) is not a finite number of 0 or more")
      }
      let channels = inputShapes[0].last ?? 0
      guard [norm.gamma, norm.beta].allSatisfy({ $0.map { $0.count == channels } ?? true }) else {
        throw fail("gamma/beta do not fit \(channels) channels")
      }
      return inputShapes[0]

    case .localResponseNormalization(let lrn):
      try requireArity(1)
      try requirePositive("size", [lrn.size])
      guard lrn.alpha.isFinite, lrn.beta.isFinite, lrn.bias.isFinite else {
        throw fail("alpha, beta and bias must be finite")
      }
      return inputShapes[0]

    case .dot:
      try requireArity(2)
      guard inputShapes[0].count == 1, inputShapes[0] == inputShapes[1] else {
        throw fail("dot of \(inputShapes) (two vectors of one length)")
      }
      return [1]

    case .matMul:
      try requireArity(2)
      let (a, b) = (inputShapes[0], inputShapes[1])
      guard a.count >= 2, b.count >= 2, a[a.count - 1] == b[b.count - 2] else {
        throw fail("matrix product of \(a) and \(b)")
      }
      guard let batch = Broadcasting.shape([Array(a.dropLast(2)), Array(b.dropLast(2))]) else {
        throw fail("batch axes of \(a) and \(b) do not broadcast")
      }
      let result = batch + [a[a.count - 2], b[b.count - 1]]
      _ = try checked.count(result)
      return result
    }
  }
}
