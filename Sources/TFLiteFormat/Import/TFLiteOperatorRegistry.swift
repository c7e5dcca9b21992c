import ModelIR

/// One handler per TFLite builtin operator (or family), keyed by `BuiltinOperator` code. `supported` (for
/// `inspect` and the documentation) is derived from here; there is no other list.
public struct TFLiteOperatorEntry: Sendable {
  /// The family the handler belongs to (`convolution`, `elementwise`, ...), for the documentation.
  public var family: String
  let handler: @Sendable (inout TFLiteContext) throws -> Void
}

public enum TFLiteOperatorRegistry {
  static let operators: [Int: TFLiteOperatorEntry] = {
    var all: [Int: TFLiteOperatorEntry] = [:]
    for family in [
      spatial, linear, elementwise, activations, shape, reduction, quantization, recurrent, variables, shapeArithmetic,
      signal,
    ] {
      all.merge(family) { first, _ in first }
    }
    return all
  }()

  public static func entry(for code: Int) -> TFLiteOperatorEntry? { operators[code] }

  /// Custom operators converted, by their code (MediaPipe's), with what they compute.
  static let customOperators: [String: TFLiteOperatorEntry] = [
    "Convolution2DTransposeBias": TFLiteOperatorEntry(family: "custom", handler: { try $0.transposeConvolutionBias() }),
    "Landmarks2TransformMatrix": TFLiteOperatorEntry(
      family: "custom", handler: { try $0.landmarksToTransformMatrix() }),
    "TransformTensorBilinear": TFLiteOperatorEntry(family: "custom", handler: { try $0.transformTensorBilinear() }),
    "TransformLandmarks": TFLiteOperatorEntry(family: "custom", handler: { try $0.transformLandmarks() }),
  ]

  /// The handler of an operator code: a builtin's, or a custom operator's by its name.
  public static func entry(for code: TFLiteOperatorCode) -> TFLiteOperatorEntry? {
    code.builtin == TFLiteBuiltin.custom ? code.customCode.flatMap { customOperators[$0] } : operators[code.builtin]
  }

  /// Every supported operator's name and family, by name.
  public static var supported: [(name: String, family: String)] {
    (operators.map { (TFLiteBuiltin.name($0.key), $0.value.family) }
      + customOperators.map { ("CUSTOM(\($0.key))", $0.value.family) }).sorted { $0.0 < $1.0 }
  }

  static func entries(_ family: String, _ handlers: [Int: @Sendable (inout TFLiteContext) throws -> Void]) -> [Int:
    TFLiteOperatorEntry]
  {
    handlers.mapValues { TFLiteOperatorEntry(family: family, handler: $0) }
  }

  // MARK: Families

  static let spatial = entries(
    "spatial",
    [
      TFLiteBuiltin.conv2D: { try $0.convolution(depthwise: false) },
      TFLiteBuiltin.depthwiseConv2D: { try $0.convolution(depthwise: true) },
      TFLiteBuiltin.transposeConv: { try $0.transposeConvolution() },
      TFLiteBuiltin.averagePool2D: { try $0.pooling(.average) },
      TFLiteBuiltin.maxPool2D: { try $0.pooling(.max) },
      TFLiteBuiltin.pad: { try $0.pad() },
      TFLiteBuiltin.padV2: { try $0.pad() },
      TFLiteBuiltin.resizeBilinear: { try $0.resize(bilinear: true) },
      TFLiteBuiltin.resizeNearestNeighbor: { try $0.resize(bilinear: false) },
    ])

  static let linear = entries(
    "linear", [TFLiteBuiltin.fullyConnected: { try $0.fullyConnected() }, TFLiteBuiltin.gather: { try $0.gatherAny() }])

  static let elementwise = entries(
    "elementwise",
    [
      TFLiteBuiltin.add: { try $0.binary(.add, optionsTag: 11) },
      TFLiteBuiltin.sub: { try $0.binary(.subtract, optionsTag: 28) },
      TFLiteBuiltin.mul: { context in
        if try context.framedMultiply() { return }
        try context.binary(.multiply, optionsTag: 21)
      },
      78: { try $0.power() },
      TFLiteBuiltin.div: { try $0.binary(.divide, optionsTag: 29) },
      TFLiteBuiltin.concatenation: { try $0.concatenation() },
      55: { try $0.binary(.maximum, optionsTag: 39) }, 57: { try $0.binary(.minimum, optionsTag: 39) },
      61: { try $0.binary(.greaterThan, optionsTag: 44) }, 62: { try $0.binary(.greaterEqual, optionsTag: 45) },
      58: { try $0.binary(.lessThan, optionsTag: 41) }, 63: { try $0.binary(.lessEqual, optionsTag: 46) },
      71: { try $0.binary(.equal, optionsTag: 53) }, 72: { try $0.binary(.notEqual, optionsTag: 54) },
      64: { try $0.select(optionsTag: 47) }, 123: { try $0.select(optionsTag: 98) },
    ])

  static let activations = entries(
    "activation",
    [
      TFLiteBuiltin.relu: { try $0.activation(.relu) },
      TFLiteBuiltin.relu6: { try $0.activation(.clip(min: 0, max: 6)) },
      TFLiteBuiltin.reluN1To1: { try $0.activation(.clip(min: -1, max: 1)) },
      TFLiteBuiltin.logistic: { try $0.activation(.sigmoid) },
      TFLiteBuiltin.tanh: { try $0.activation(.tanh) },
      TFLiteBuiltin.hardSwish: { try $0.activation(.hardSwish) },
      TFLiteBuiltin.leakyRelu: { context in
        let alpha = try context.options(75).map { try $0.f32(0, "LeakyReluOptions.alpha") } ?? 0
        try context.activation(.leakyReLU(alpha: alpha))
      },
      TFLiteBuiltin.prelu: { try $0.prelu() },
      TFLiteBuiltin.softmax: { try $0.softmax() },
      47: { try $0.activation(.unary(UnaryFunction(kind: .exp))) },
      73: { try $0.activation(.unary(UnaryFunction(kind: .log))) },
      75: { try $0.activation(.unary(UnaryFunction(kind: .sqrt))) },
      76: { try $0.activation(.unary(UnaryFunction(kind: .rsqrt))) },
      101: { try $0.activation(.unary(UnaryFunction(kind: .abs))) },
      59: { try $0.activation(.linear(scale: -1, offset: 0)) },
      92: { try $0.activation(.unary(UnaryFunction(kind: .power, alpha: 2))) },
      66: { try $0.activation(.sin) },
      108: { try $0.activation(.cos) },
      8: { try $0.activation(.floor) },
      104: { try $0.activation(.ceil) },
    ])

  static let shape = entries(
    "shape",
    [
      TFLiteBuiltin.reshape: { try $0.reshape(code: 22) },
      TFLiteBuiltin.squeeze: { try $0.reshape(code: 43) },
      70: { try $0.reshape(code: 70) },  // EXPAND_DIMS
      53: { try $0.spectrum(.real) },  // CAST (of a spectrum: its real part)
      105: { try $0.reverse() },
      TFLiteBuiltin.transpose: { try $0.transpose() },
      TFLiteBuiltin.stridedSlice: { try $0.stridedSlice() },
      TFLiteBuiltin.depthToSpace: { try $0.depthToSpace() },
      TFLiteBuiltin.splitV: { try $0.splitV() },
    ])

  static let reduction = entries(
    "reduction",
    [
      TFLiteBuiltin.mean: { try $0.reduce(.mean) }, 82: { try $0.reduce(.max) }, 89: { try $0.reduce(.min) },
      74: { try $0.reduce(.sum) },
    ])

  /// Shape arithmetic: computed at conversion on constants (and on the shapes of computed tensors, which are
  /// known), never at run time.
  static let shapeArithmetic = entries(
    "shape arithmetic",
    Dictionary(
      uniqueKeysWithValues: [77, 83, 96, 90, 95, 81].map { code in
        (
          code,
          { @Sendable (context: inout TFLiteContext) throws in
            throw context.fail("computes on a tensor known only at run time; it is converted on constants only")
          }
        )
      }))

  /// A short-time Fourier transform: frames of a signal (GATHER), a window, RFFT2D, then its real or imaginary
  /// part or magnitude.
  static let signal = entries(
    "signal",
    [
      131: { try $0.rfft() }, 134: { try $0.spectrum(.real) }, 133: { try $0.spectrum(.imaginary) },
      135: { try $0.spectrum(.magnitude) },
    ])

  static let quantization = entries(
    "quantization",
    [
      TFLiteBuiltin.dequantize: { try $0.dequantize() },
      TFLiteBuiltin.quantize: { try $0.quantize() },
      TFLiteBuiltin.densify: { try $0.densify() },
    ])

  static let variables = entries(
    "variable",
    [
      TFLiteBuiltin.callOnce: { try $0.callOnce() },
      TFLiteBuiltin.varHandle: { try $0.variableHandle() },
      TFLiteBuiltin.readVariable: { try $0.readVariable() },
      TFLiteBuiltin.assignVariable: { try $0.assignVariable() },
    ])

  static let recurrent = entries("recurrent", [TFLiteBuiltin.unidirectionalSequenceLSTM: { try $0.lstm() }])
}
