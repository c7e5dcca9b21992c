import ModelIR
import ReferenceRuntime
import Testing

/// The fast paths (oneDNN convolutions, pooling and sgemm, fused steps) agree with the direct loops (the oracle) within the
/// float32 error bound of their dot products (plus rtol 1e-5).
@Suite struct FastKernelTests {
  /// Deterministic values in [-1, 1).
  static func values(_ count: Int, seed: UInt64) -> [Float] {
    var state = seed
    return (0..<count).map { _ in
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Float(state >> 40) / Float(1 << 23) - 1
    }
  }

  /// Global average pooling sums each channel in Double in pixel order, as the direct reduction does: over
  /// a 96 x 96 plane of values near 1 000 (a float32 running sum would drift by about 1e-5 of the mean) the
  /// two give the same floats.
  @Test func globalAveragePoolingOfALargePlaneIsTheDirectMean() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([96, 96, 3]))
    let y = try builder.add(.globalPooling2D(kind: .average, keepDims: false), name: "pool", inputs: [x])
    let graph = builder.build(outputs: [y])
    let input = Tensor(shape: [96, 96, 3], values: Self.values(96 * 96 * 3, seed: 7).map { 1_000 + $0 })
    let fast = Interpreter(graph: graph, kernels: .fast).run([input])[0]
    let direct = Interpreter(graph: graph, kernels: .direct).run([input])[0]
    #expect(fast.values == direct.values)
  }

  static func compare(_ operation: Operation, input shape: [Int], seed: UInt64) throws {
    try compare([operation], input: shape, seed: seed)
  }

  /// Runs a chain of operations both ways (the fast interpreter also fuses the chain).
  ///
  /// Tolerance from the float32 error bound of a dot product of n terms, `|fl(s) - s| <= n u sum|w x|`
  /// (u = 2^-24; the oracle accumulates in Double), with `sum|w x| + |b|` computed by the oracle on the
  /// absolute kernel and input, scaled by the Lipschitz constant of the operations after the first (a
  /// folded batch normalization's largest scale, a linear scale) plus a margin of four roundings for the
  /// fused steps. The bound holds for any kernel and summation order oneDNN picks.
  static func compare(_ operations: [Operation], input shape: [Int], seed: UInt64) throws {
    var builder = GraphBuilder()
    var y = try builder.addInput(name: "x", type: TensorType(shape))
    for (index, operation) in operations.enumerated() {
      y = try builder.add(operation, name: "op\(index)", inputs: [y])
    }
    let graph = builder.build(outputs: [y])
    let operation = operations[0]
    let input = Tensor(shape: shape, values: values(shape.reduce(1, *), seed: seed))
    let fast = Interpreter(graph: graph, kernels: .fast).run([input])[0]
    let direct = Interpreter(graph: graph, kernels: .direct).run([input])[0]
    #expect(fast.shape == direct.shape)
    let (terms, magnitude) = try magnitudes(of: operation, input: input)
    var lipschitz: Float = 1
    for later in operations.dropFirst() {
      switch later {
      case .batchNormalization(let n):
        lipschitz *= zip(n.gamma.values, n.variance.values).map { abs($0) / ($1 + n.epsilon).squareRoot() }.max() ?? 1
      case .activation(.linear(let scale, _)): lipschitz *= max(1, abs(scale))
      default: break
      }
    }
    let u = Float(1) / Float(1 << 24)
    let bound = Float(terms + 4) * u * magnitude * lipschitz * 2
    let worst = zip(fast.values, direct.values).map { abs($0 - $1) - (1e-5 * abs($1) + bound) }.max() ?? 0
    #expect(
      worst <= 0,
      "\(operation.kindName) on \(shape): fast path differs from the direct loops by \(worst) beyond the error bound \(bound)"
    )
  }

  /// The number of products per output and the largest `sum|w x| + |b|` of a convolution or dense layer.
  static func magnitudes(of operation: Operation, input: Tensor) throws -> (Int, Float) {
    let absolute = Tensor(shape: input.shape, values: input.values.map { Swift.abs($0) })
    func abs(_ c: Constant) -> Constant { Constant(shape: c.shape, values: c.values.map { Swift.abs($0) }) }
    let (terms, positive): (Int, Operation)
    switch operation {
    case .convolution2D(var conv):
      terms = conv.kernel.shape[0] * conv.kernel.shape[1] * conv.kernel.shape[2]
      conv.kernel = abs(conv.kernel)
      conv.bias = conv.bias.map(abs)
      positive = .convolution2D(conv)
    case .dense(var dense):
      terms = dense.kernel.shape[0]
      dense.kernel = abs(dense.kernel)
      dense.bias = dense.bias.map(abs)
      positive = .dense(dense)
    default: return (1, absolute.values.max() ?? 0)
    }
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType(input.shape))
    let y = try builder.add(positive, name: "abs", inputs: [x])
    let result = Interpreter(graph: builder.build(outputs: [y]), kernels: .direct).run([absolute])[0]
    return (terms, result.values.max() ?? 0)
  }

  struct ConvolutionCase: Sendable, CustomStringConvertible {
    var input: [Int]
    var kernel: [Int]
    var strides = [1, 1]
    var dilations = [1, 1]
    var padding = Padding.same
    var groups = 1
    var description: String { "in \(input) kernel \(kernel) s\(strides) d\(dilations) \(padding) g\(groups)" }
  }

  static let convolutions: [ConvolutionCase] = [
    .init(input: [9, 11, 3], kernel: [3, 3, 3, 8]),
    .init(input: [9, 11, 3], kernel: [3, 3, 3, 8], strides: [2, 2]),
    .init(input: [10, 10, 4], kernel: [3, 2, 4, 5], strides: [2, 1], padding: .valid),
    .init(input: [12, 12, 2], kernel: [3, 3, 2, 4], dilations: [2, 2]),
    .init(input: [7, 7, 16], kernel: [1, 1, 16, 24]),
    .init(input: [8, 8, 8], kernel: [3, 3, 2, 8], groups: 4),
    .init(input: [15, 15, 6], kernel: [3, 3, 1, 6], strides: [2, 2], groups: 6),
    .init(input: [9, 9, 4], kernel: [5, 5, 1, 8], groups: 4),
    // Wider than oneDNN is given (PreparedConvolution.maxOutputWidth): a long Conv1D on the im2col path.
    .init(input: [1, 70_000, 4], kernel: [1, 3, 4, 5], dilations: [1, 2]),
  ]

  /// A convolution too wide for oneDNN runs on the im2col path, whose buffer (output pixels x taps x
  /// input channels, float32) is what the interpreter says its kernels hold per thread.
  @Test func wideConvolutionsHoldTheirIm2colBuffer() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([1, 70_000, 4]))
    let conv = Convolution2D(
      kernel: Constant(shape: [1, 3, 4, 5], values: Self.values(60, seed: 7)), bias: nil, strides: [1, 1],
      dilations: [1, 2], padding: .same, groups: 1)
    let y = try builder.add(.convolution2D(conv), name: "conv", inputs: [x])
    let interpreter = Interpreter(graph: builder.build(outputs: [y]))
    #expect(interpreter.kernelBytesPerThread == 70_000 * 3 * 4 * 4)
  }

  @Test(arguments: convolutions)
  func convolutionMatchesDirectLoops(_ c: ConvolutionCase) throws {
    let count = c.kernel.reduce(1, *)
    let conv = Convolution2D(
      kernel: Constant(shape: c.kernel, values: Self.values(count, seed: 7)),
      bias: Constant(shape: [c.kernel[3]], values: Self.values(c.kernel[3], seed: 9)),
      strides: c.strides, dilations: c.dilations, padding: c.padding, groups: c.groups)
    try Self.compare(.convolution2D(conv), input: c.input, seed: 3)
  }

  @Test(arguments: [[64], [5, 64], [2, 3, 64]])
  func denseMatchesDirectLoops(_ shape: [Int]) throws {
    let dense = Dense(
      kernel: Constant(shape: [64, 10], values: Self.values(640, seed: 5)),
      bias: Constant(shape: [10], values: Self.values(10, seed: 6)))
    try Self.compare(.dense(dense), input: shape, seed: 4)
  }

  /// Batch normalization folded into the convolution and activations fused after it, including the
  /// four-layer relu6 that Core ML files carry, agree with node-by-node evaluation.
  @Test func fusedChainsMatchDirectLoops() throws {
    let conv = Convolution2D(
      kernel: Constant(shape: [3, 3, 4, 6], values: Self.values(216, seed: 11)),
      bias: Constant(shape: [6], values: Self.values(6, seed: 12)),
      strides: [1, 1], dilations: [1, 1], padding: .same, groups: 1)
    let positive = Self.values(6, seed: 14).map { abs($0) + 0.5 }
    let norm = BatchNormalization(
      gamma: Constant(shape: [6], values: Self.values(6, seed: 13)),
      beta: Constant(shape: [6], values: Self.values(6, seed: 15)),
      mean: Constant(shape: [6], values: Self.values(6, seed: 16)), variance: Constant(shape: [6], values: positive),
      epsilon: 1e-3)
    let relu6: [Operation] = [
      .activation(.relu), .activation(.linear(scale: -1, offset: 0)),
      .activation(.unary(UnaryFunction(kind: .threshold, alpha: -0.5))),
      .activation(.linear(scale: -1, offset: 0)),
    ]
    try Self.compare([.convolution2D(conv), .batchNormalization(norm)] + relu6, input: [6, 6, 4], seed: 17)
    try Self.compare(
      [
        .convolution2D(conv), .batchNormalization(norm),
        .activation(.clippedReLU(maxValue: 0.5, negativeSlope: 0, threshold: 0)),
      ], input: [6, 6, 4], seed: 18)
    try Self.compare(
      [.convolution2D(conv), .activation(.tanh), .activation(.linear(scale: 2, offset: 1))], input: [5, 7, 4], seed: 19)
  }

  /// A ZeroPadding2D folded into the `valid` convolution after it (MobileNet's strided blocks), pooling,
  /// global pooling and same-shape elementwise steps agree with node-by-node evaluation.
  @Test func paddingPoolingAndElementwiseMatchDirectLoops() throws {
    let depthwise = Convolution2D(
      kernel: Constant(shape: [3, 3, 1, 6], values: Self.values(54, seed: 21)),
      bias: Constant(shape: [6], values: Self.values(6, seed: 22)),
      strides: [2, 2], dilations: [1, 1], padding: .valid, groups: 6)
    try Self.compare(
      [
        .zeroPadding2D(Box2D(top: 0, bottom: 1, left: 0, right: 1)), .convolution2D(depthwise),
        .activation(.clip(min: 0, max: 6)),
      ],
      input: [9, 9, 6], seed: 23)
    let full = Convolution2D(
      kernel: Constant(shape: [3, 3, 6, 4], values: Self.values(216, seed: 24)), bias: nil, strides: [1, 1],
      dilations: [1, 1], padding: .valid, groups: 1)
    try Self.compare(
      [.zeroPadding2D(Box2D(top: 2, bottom: 1, left: 1, right: 3)), .convolution2D(full)], input: [7, 8, 6], seed: 25)
    for kind in [PoolingKind.max, .average] {
      for padding in [Padding.same, .valid] {
        try Self.compare(
          [.pooling2D(Pooling2D(kind: kind, pool: [3, 3], strides: [2, 2], padding: padding))], input: [9, 8, 5],
          seed: 26)
      }
      try Self.compare([.globalPooling2D(kind: kind, keepDims: false)], input: [5, 6, 7], seed: 27)
    }
  }

  @Test func sameShapeElementwiseMatchesDirectLoops() throws {
    for kind in [ElementwiseKind.add, .subtract, .multiply, .maximum, .minimum] {
      var builder = GraphBuilder()
      let a = try builder.addInput(name: "a", type: TensorType([5, 4, 3]))
      let b = try builder.addInput(name: "b", type: TensorType([5, 4, 3]))
      let y = try builder.add(.elementwise(kind), name: "y", inputs: [a, b])
      let graph = builder.build(outputs: [y])
      let inputs = [
        Tensor(shape: [5, 4, 3], values: Self.values(60, seed: 28)),
        Tensor(shape: [5, 4, 3], values: Self.values(60, seed: 29)),
      ]
      let fast = Interpreter(graph: graph, kernels: .fast).run(inputs)[0]
      let direct = Interpreter(graph: graph, kernels: .direct).run(inputs)[0]
      // Two roundings of values at most 2 in magnitude (products at most 1).
      let worst = zip(fast.values, direct.values).map { abs($0 - $1) }.max() ?? 0
      #expect(worst <= 4 * Float(1) / Float(1 << 23), "\(kind): \(worst)")
    }
  }

  /// The kernels oneDNN picked are named, so a fallback to generic code is visible.
  @Test func backendIsNamed() {
    #expect(Interpreter.backendDescription.hasPrefix("oneDNN "))
    #expect(Interpreter.backendDescription.contains(" kernels"))
  }

  /// A residual `Add` fused into the convolution before it (a sum post-op writing into the other operand's
  /// buffer), with a ReLU after the sum and with the operand order swapped, agrees with node-by-node
  /// evaluation; the other operand, still read later, is left unchanged.
  @Test func residualAddFusedIntoConvolutionMatchesDirectLoops() throws {
    let conv = Convolution2D(
      kernel: Constant(shape: [3, 3, 4, 4], values: Self.values(144, seed: 31)),
      bias: Constant(shape: [4], values: Self.values(4, seed: 32)),
      strides: [1, 1], dilations: [1, 1], padding: .same, groups: 1)
    // (operands swapped, shortcut read again later (its buffer must be copied, not overwritten), the
    // convolution reading the shortcut itself)
    for (swapped, readAgain, convolvesShortcut) in [
      (false, true, true), (true, true, true), (false, false, false), (true, false, false),
    ] {
      var builder = GraphBuilder()
      let x = try builder.addInput(name: "x", type: TensorType([6, 6, 4]))
      let shortcut = try builder.add(.activation(.tanh), name: "shortcut", inputs: [x])
      let c = try builder.add(.convolution2D(conv), name: "conv", inputs: [convolvesShortcut ? shortcut : x])
      let sum = try builder.add(.elementwise(.add), name: "add", inputs: swapped ? [shortcut, c] : [c, shortcut])
      let y = try builder.add(.activation(.relu), name: "relu", inputs: [sum])
      let z = readAgain ? try builder.add(.elementwise(.multiply), name: "again", inputs: [y, shortcut]) : y
      let graph = builder.build(outputs: [z])
      let input = Tensor(shape: [6, 6, 4], values: Self.values(144, seed: 33))
      let fast = Interpreter(graph: graph, kernels: .fast).run([input])[0]
      let direct = Interpreter(graph: graph, kernels: .direct).run([input])[0]
      let tanhGraph = graph.truncated(at: [shortcut])
      let shortcutValues = Interpreter(graph: tanhGraph, kernels: .direct).run([input])[0]
      let (terms, magnitude) = try Self.magnitudes(
        of: .convolution2D(conv), input: convolvesShortcut ? shortcutValues : input)
      // The dot-product bound, one more rounding for the sum, times |shortcut| <= 1 in the product.
      let bound = Float(terms + 6) * Float(1) / Float(1 << 24) * (magnitude + 1) * 2
      let worst = zip(fast.values, direct.values).map { abs($0 - $1) - (1e-5 * abs($1) + bound) }.max() ?? 0
      #expect(worst <= 0, "swapped \(swapped), read again \(readAgain): \(worst) beyond \(bound)")
    }
  }
}

/// `runObserving(_:substitutes:)`: the nodes after a substituted value read the substitute, while the
/// value itself is reported as its own node computed it (what verify's layer-local comparison needs).
@Suite struct SubstitutedValueTests {
  @Test(arguments: [Interpreter.KernelChoice.fast, .direct])
  func laterNodesReadTheSubstituteAndTheValueIsReportedAsComputed(_ kernels: Interpreter.KernelChoice) throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2]))
    // y = [[1, 2], [3, 4]]^T x + [0.5, -0.5]; z = relu(y); w = 2 z + 1.
    let dense = Dense(
      kernel: Constant(shape: [2, 2], values: [1, 2, 3, 4]), bias: Constant(shape: [2], values: [0.5, -0.5]))
    let y = try builder.add(.dense(dense), name: "y", inputs: [x])
    let z = try builder.add(.activation(.relu), name: "z", inputs: [y])
    let w = try builder.add(.activation(.linear(scale: 2, offset: 1)), name: "w", inputs: [z])
    let graph = builder.build(outputs: [w])
    let interpreter = Interpreter(graph: graph, kernels: kernels, observed: [y, z])
    let input = Tensor(shape: [2], values: [1, -1])
    // Without substitutes: y = [1 - 3 + 0.5, 2 - 4 - 0.5] = [-1.5, -2.5], z = [0, 0], w = [1, 1].
    let plain = interpreter.runObserving([input])
    #expect(plain.observed[y]?.values == [-1.5, -2.5])
    #expect(plain.outputs[0].values == [1, 1])
    // y replaced by [3, -7]: z = [3, 0] and w = [7, 1]; y and z are still reported as computed from what they read.
    let forced = interpreter.runObserving([input], substitutes: [y: Tensor(shape: [2], values: [3, -7])])
    #expect(forced.observed[y]?.values == [-1.5, -2.5])
    #expect(forced.observed[z]?.values == [3, 0])
    #expect(forced.outputs[0].values == [7, 1])
  }
}

/// The float16 rounding of an ML Program's values: the fast interpreter's (F16C where the CPU has it)
/// against the direct loops' Swift `Float16` conversion, bit for bit, on the edges of the format.
@Suite struct Float16RoundingTests {
  static let edges: [Float] = [
    0, -0, 1, -1, 65504, -65504, 65519.99, 65520, -65520, 1e10, .infinity, -.infinity,
    // Smallest normal and subnormal float16, halfway cases, and values that round to zero.
    6.103_515_6e-5, 5.960_464_5e-8, 2.980_232_2e-8, 2.980_233e-8, 1e-9, -1e-9,
    // Ties to even: 1 + 2^-11 (between 1 and 1 + 2^-10) rounds down, 1 + 3 * 2^-11 up.
    1 + 0x1p-11, 1 + 3 * 0x1p-11, 2049, 2051, 3.141_592_7, -2.718_281_8, 0.1, 1 / 3,
  ]

  @Test func fastRoundingEqualsTheDirectLoops() throws {
    // Edges, then every 2^-11 step of [-4, 4) and pseudo-random values of every magnitude, in lengths
    // that are not multiples of eight (the vector loop's tail).
    var values = Self.edges + (-8192..<8192).map { Float($0) * 0x1p-11 }
    var state: UInt32 = 12345
    for _ in 0..<10_003 {
      state = state &* 1_664_525 &+ 1_013_904_223
      // Sign and mantissa random, exponent from 2^-31 to 2^20 (float16's subnormals to beyond its range).
      let exponent = (96 + (state >> 3) % 52) << 23
      values.append(Float(bitPattern: (state & 0x8000_0000) | exponent | (state & 0x7F_FFFF)))
    }
    let graph = try Self.roundingGraph(count: values.count)
    let input = Tensor(shape: [values.count], values: values)
    let fast = Interpreter(graph: graph, kernels: .fast).run([input])[0].values
    let direct = Interpreter(graph: graph, kernels: .direct).run([input])[0].values
    #expect(fast.map(\.bitPattern) == direct.map(\.bitPattern))
    #expect(direct.map(\.bitPattern) == values.map { Float(Float16($0)).bitPattern })
    // NaN stays NaN.
    let nan = Interpreter(graph: try Self.roundingGraph(count: 9), kernels: .fast).run([
      Tensor(shape: [9], values: [Float](repeating: .nan, count: 9))
    ])[0].values
    #expect(nan.allSatisfy { $0.isNaN })
  }

  /// y = x + 0 computed in float16 (a float16 operand makes the sum float16).
  static func roundingGraph(count: Int) throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([count], dataType: .float16))
    let zero = try builder.add(.constant(Constant(shape: [1], values: [0])), name: "zero", inputs: [])
    let y = try builder.add(.elementwise(.add), name: "y", inputs: [x, zero])
    return builder.build(outputs: [y])
  }
}

/// Padding and slicing a row at a time give the direct loops' values exactly (they only move values).
@Suite struct RowCopyKernelTests {
  static func run(_ operation: Operation, input shape: [Int]) throws -> (fast: Tensor, direct: Tensor) {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType(shape))
    let y = try builder.add(operation, name: "y", inputs: [x])
    let graph = builder.build(outputs: [y])
    let input = Tensor(shape: shape, values: FastKernelTests.values(shape.reduce(1, *), seed: 41))
    return (
      Interpreter(graph: graph, kernels: .fast).run([input])[0],
      Interpreter(graph: graph, kernels: .direct).run([input])[0]
    )
  }

  @Test(arguments: [
    ([4, 5, 3], [1, 2, 0], [2, 0, 1]), ([4, 5, 3], [0, 0, 0], [0, 0, 0]), ([6], [3], [2]),
    ([1, 4, 5, 3], [0, 1, 0, 3], [1, 0, 2, 0]), ([2, 3, 4], [0, 0, 0], [0, 0, 3]),
  ])
  func constantPadMatches(_ shape: [Int], _ before: [Int], _ after: [Int]) throws {
    let (fast, direct) = try Self.run(
      .constantPad(ConstantPadding(before: before, after: after, value: 0.5)), input: shape)
    #expect(fast.shape == direct.shape)
    #expect(fast.values.map(\.bitPattern) == direct.values.map(\.bitPattern))
  }

  @Test(arguments: [
    ([6, 5, 4], [1, 0, 1], [5, 5, 3], [2, 1, 1]), ([6, 5, 4], [0, 1, 0], [6, 4, 4], [1, 2, 2]),
    ([8400, 84], [0, 4], [8400, 84], [1, 1]), ([7], [2], [6], [1]),
  ])
  func sliceMatches(_ shape: [Int], _ begin: [Int], _ end: [Int], _ strides: [Int]) throws {
    let (fast, direct) = try Self.run(
      .slice(StridedSlice(begin: begin, end: end, strides: strides)), input: shape)
    #expect(fast.shape == direct.shape)
    #expect(fast.values.map(\.bitPattern) == direct.values.map(\.bitPattern))
  }
}
