import CoreMLCommon

/// A classic neural-network layer's parameters, decoded once by the reader: one case per layer message of
/// Schemas/NeuralNetwork.proto that the reader decodes, with fields named and typed as in the proto.
///
/// Scalars keep proto3's zero for an absent field; the documented defaults (an epsilon of 0 meaning 1e-5, ...)
/// are applied by whoever reads the field, as the `[rule ...]` notes of the schema say. Weight blobs are `nil`
/// when the layer has no `WeightParams` message for them, and an empty array when the message holds no values.
public enum CoreMLLayerParameters: Sendable, Equatable {
  case convolution(ConvolutionParameters)
  case pooling(PoolingParameters)
  case activation(ActivationParameters)
  case innerProduct(InnerProductParameters)
  case embedding(EmbeddingParameters)
  case batchnorm(BatchnormParameters)
  case l2normalize(L2NormalizeParameters)
  case softmax
  case lrn(LRNParameters)
  case crop(CropParameters)
  case padding(PaddingParameters)
  case upsample(UpsampleParameters)
  case unary(UnaryParameters)
  /// `add`, `multiply`, `average`, `max`, `min`.
  case elementwise(ClassicElementwise)
  case scale(ScaleParameters)
  case dot(DotParameters)
  case reduce(ReduceParameters)
  case loadConstant(LoadConstantParameters)
  case reshape(ReshapeParameters)
  case flatten(FlattenParameters)
  case permute(PermuteParameters)
  case concat(ConcatParameters)
  case split(SplitParameters)
  case sequenceRepeat(SequenceRepeatParameters)
  case reorganizeData(ReorganizeDataParameters)
  case slice(SliceParameters)
  case simpleRecurrent(SimpleRecurrentParameters)
  case gru(GRUParameters)
  case uniDirectionalLSTM(UniDirectionalLSTMParameters)
  case biDirectionalLSTM(BiDirectionalLSTMParameters)
  case custom(CustomParameters)
  case copy
  case clip(ClipParameters)
  /// `sin`, `cos`, `floor`, `ceil`: no parameters.
  case elementwiseMath(ElementwiseMathKind)
  case gelu(GeluParameters)
  case clampedReLU(ClampedReLUParameters)
  /// `equal`, `notEqual`, `lessThan`, `lessEqual`, `greaterThan`, `greaterEqual`: `alpha` is the second operand of a one-input layer.
  case comparison(ComparisonKind, alpha: Float)
  /// `addBroadcastable`, `whereBroadcastable`, ...: no parameters.
  case broadcastable(BroadcastableKind)
  case tile(TileParameters)
  case softmaxND(SoftmaxNDParameters)
  case concatND(ConcatNDParameters)
  case transpose(TransposeParameters)
  case sliceStatic(SliceStaticParameters)
  case batchedMatmul(BatchedMatMulParameters)
  case loadConstantND(LoadConstantParameters)
  case squeeze(SqueezeParameters)
  case expandDims(ExpandDimsParameters)
  case flattenTo2D(FlattenTo2DParameters)
  case reshapeStatic(ReshapeStaticParameters)
  case constantPad(ConstantPadParameters)
  case layerNormalization(LayerNormalizationParameters)
  /// `reduceMean`, `reduceMax`, `reduceMin`, `reduceSum`.
  case reduceND(ReduceNDKind, ReduceNDParameters)
  /// A layer whose parameters the reader does not decode (`bias`, `mvn`, `resizeBilinear`,
  /// a field number our schema does not name, ...): only its kind, inputs and outputs are known.
  case notDecoded
}

/// An enum field read from a file: one of the values the proto names, or the number the file holds when it is
/// none of them (protobuf keeps unknown enum numbers), so checks can name it.
public enum CoreMLEnumField<Value>: Sendable, Equatable
where Value: RawRepresentable & Sendable & Equatable, Value.RawValue == Int {
  case known(Value)
  case unknown(Int)

  public init(rawValue: Int) { self = Value(rawValue: rawValue).map(Self.known) ?? .unknown(rawValue) }
  public init(_ value: Value) { self = .known(value) }

  /// The number stored in the file.
  public var rawValue: Int {
    switch self {
    case .known(let value): return value.rawValue
    case .unknown(let number): return number
    }
  }

  public var value: Value? { if case .known(let value) = self { return value } else { return nil } }
}

// MARK: Convolution, pooling, dense, normalization

public struct ConvolutionParameters: Sendable, Equatable {
  public enum Padding: Sendable, Equatable {
    /// `valid`, with its `paddingAmounts` as `[startH, endH, startW, endW]` (empty when the message lists none).
    case valid(paddingAmounts: [Int])
    case same(asymmetryMode: CoreMLEnumField<SamePaddingMode>)
    /// The oneof is not set.
    case unset
  }
  public var outputChannels = 0
  public var kernelChannels = 0
  public var nGroups = 0
  public var kernelSize: [Int] = []
  public var stride: [Int] = []
  public var dilationFactor: [Int] = []
  public var padding = Padding.unset
  public var isDeconvolution = false
  public var hasBias = false
  public var weights: [Float]?
  public var bias: [Float]?
  public var outputShape: [Int] = []
  public init() {}
}

public enum SamePaddingMode: Int, Sendable, Equatable {
  case bottomRightHeavy = 0
  case topLeftHeavy = 1
}

public struct PoolingParameters: Sendable, Equatable {
  public enum PoolingType: Int, Sendable, Equatable {
    case max = 0
    case average = 1
    case l2 = 2
  }
  public enum Padding: Sendable, Equatable { case valid, same, includeLastPixel, unset }
  public var type = CoreMLEnumField<PoolingType>.known(.max)
  public var kernelSize: [Int] = []
  public var stride: [Int] = []
  public var padding = Padding.unset
  /// VALID padding's `[top, bottom, left, right]` (empty when the file gives none).
  public var paddingAmounts: [Int] = []
  public var avgPoolExcludePadding = false
  public var globalPooling = false
  public init() {}
}

public struct InnerProductParameters: Sendable, Equatable {
  public var inputChannels = 0
  public var outputChannels = 0
  public var hasBias = false
  public var weights: [Float]?
  public var bias: [Float]?
  public var int8DynamicQuantize = false
  public init() {}
}

public struct EmbeddingParameters: Sendable, Equatable {
  public var inputDim = 0
  public var outputChannels = 0
  public var hasBias = false
  public var weights: [Float]?
  public var bias: [Float]?
  public init() {}
}

public struct BatchnormParameters: Sendable, Equatable {
  public var channels = 0
  public var computeMeanVar = false
  public var instanceNormalization = false
  /// 0 in the file means 1e-5 ([rule BATCHNORM-PARAMS]).
  public var epsilon: Float = 0
  public var gamma: [Float]?
  public var beta: [Float]?
  public var mean: [Float]?
  public var variance: [Float]?
  public init() {}
}

public struct L2NormalizeParameters: Sendable, Equatable {
  public var epsilon: Float = 0
  public init(epsilon: Float = 0) { self.epsilon = epsilon }
}

public struct LRNParameters: Sendable, Equatable {
  public var alpha: Float = 0
  public var beta: Float = 0
  public var localSize = 0
  public var k: Float = 0
  public init() {}
}

// MARK: Activations

/// `ActivationParams`'s `NonlinearityType` oneof (an activation layer, or one of a recurrent layer's activations).
public enum ActivationParameters: Sendable, Equatable {
  case linear(alpha: Float, beta: Float)
  case relu
  case leakyReLU(alpha: Float)
  case thresholdedReLU(alpha: Float)
  /// `alpha`: one slope per channel (or one for all).
  case preLU(alpha: [Float]?)
  case tanh
  case scaledTanh(alpha: Float, beta: Float)
  case sigmoid
  case sigmoidHard(alpha: Float, beta: Float)
  case elu(alpha: Float)
  case softsign
  case softplus
  /// Its per-channel alpha and beta are not decoded.
  case parametricSoftplus
  /// The oneof is not set, or holds a field number our schema does not name.
  case unknown(fieldNumber: Int)

  /// The oneof field number (`ReLU` 10, `sigmoid` 40, ...), as Core ML's documentation lists activations.
  public var fieldNumber: Int {
    switch self {
    case .linear: return 5
    case .relu: return 10
    case .leakyReLU: return 15
    case .thresholdedReLU: return 20
    case .preLU: return 25
    case .tanh: return 30
    case .scaledTanh: return 31
    case .sigmoid: return 40
    case .sigmoidHard: return 41
    case .elu: return 50
    case .softsign: return 60
    case .softplus: return 70
    case .parametricSoftplus: return 71
    case .unknown(let number): return number
    }
  }

  /// The alpha and beta of the activations recurrent layers parameterize (linear, scaled tanh, hard sigmoid).
  public var recurrentAlphaBeta: (alpha: Float, beta: Float)? {
    switch self {
    case .linear(let alpha, let beta), .scaledTanh(let alpha, let beta), .sigmoidHard(let alpha, let beta):
      return (alpha, beta)
    default: return nil
    }
  }
}

public struct ClipParameters: Sendable, Equatable {
  public var minVal: Float = 0
  public var maxVal: Float = 0
  public init(minVal: Float = 0, maxVal: Float = 0) { (self.minVal, self.maxVal) = (minVal, maxVal) }
}

public struct ClampedReLUParameters: Sendable, Equatable {
  public var alpha: Float = 0
  public var beta: Float = 0
  public init(alpha: Float = 0, beta: Float = 0) { (self.alpha, self.beta) = (alpha, beta) }
}

public struct GeluParameters: Sendable, Equatable {
  public enum Mode: Int, Sendable, Equatable {
    case exact = 0
    case tanhApproximation = 1
    case sigmoidApproximation = 2
  }
  public var mode = CoreMLEnumField<Mode>.known(.exact)
  public init(mode: CoreMLEnumField<Mode> = .known(.exact)) { self.mode = mode }
}

public struct UnaryParameters: Sendable, Equatable {
  public enum Operation: Int, Sendable, Equatable {
    case sqrt = 0
    case rsqrt, inverse, power, exp, log, abs, threshold
  }
  public var type = CoreMLEnumField<Operation>.known(.sqrt)
  public var alpha: Float = 0
  /// 0 in the file means 1e-6 ([rule UNARY-DEFAULTS]).
  public var epsilon: Float = 0
  public var shift: Float = 0
  /// 0 in the file means 1 ([rule UNARY-DEFAULTS]).
  public var scale: Float = 0
  public init() {}
}

// MARK: Elementwise

public enum ClassicElementwise: Sendable, Equatable {
  /// `alpha` is added to a single input.
  case add(alpha: Float)
  /// A single input is multiplied by `alpha`.
  case multiply(alpha: Float)
  case average, max, min
}

public enum ElementwiseMathKind: Sendable, Equatable { case sin, cos, floor, ceil }

public enum ComparisonKind: Sendable, Equatable { case equal, notEqual, lessThan, lessEqual, greaterThan, greaterEqual }

public enum BroadcastableKind: Sendable, Equatable { case add, subtract, multiply, divide, max, min, pow, `where` }

public struct ScaleParameters: Sendable, Equatable {
  public var shapeScale: [Int] = []
  public var scale: [Float]?
  public var hasBias = false
  public var shapeBias: [Int] = []
  public var bias: [Float]?
  public init() {}
}

public struct DotParameters: Sendable, Equatable {
  public var cosineSimilarity = false
  public init(cosineSimilarity: Bool = false) { self.cosineSimilarity = cosineSimilarity }
}

public struct CustomParameters: Sendable, Equatable {
  public var className = ""
  public init(className: String = "") { self.className = className }
}

public struct LoadConstantParameters: Sendable, Equatable {
  public var shape: [Int] = []
  public var data: [Float]?
  public init() {}
}

extension CoreMLLayerParameters {
  /// The decoded weight blobs by proto field name (`weights`, `bias`, `gamma`, ...; recurrent gates as
  /// `W_<gate>`, `R_<gate>`, `b_<gate>`, a bidirectional LSTM's backward half prefixed `backward.`): a read-only
  /// listing for inspection's parameter counts and for tests. Code that uses a blob reads its typed field.
  public var namedWeights: [String: [Float]] {
    var result: [String: [Float]] = [:]
    func add(_ name: String, _ values: [Float]?) { if let values { result[name] = values } }
    func gate(_ prefix: String, _ letter: String, _ weights: RecurrentGateWeights) {
      add(prefix + "W_" + letter, weights.weightMatrix)
      add(prefix + "R_" + letter, weights.recursionMatrix)
      add(prefix + "b_" + letter, weights.biasVector)
    }
    func lstm(_ prefix: String, _ weights: LSTMWeights) {
      for (letter, weights) in zip(["i", "f", "z", "o"], weights.gates) { gate(prefix, letter, weights) }
    }
    switch self {
    case .convolution(let p):
      add("weights", p.weights)
      add("bias", p.bias)
    case .innerProduct(let p):
      add("weights", p.weights)
      add("bias", p.bias)
    case .embedding(let p):
      add("weights", p.weights)
      add("bias", p.bias)
    case .batchedMatmul(let p):
      add("weights", p.weights)
      add("bias", p.bias)
    case .batchnorm(let p):
      add("gamma", p.gamma)
      add("beta", p.beta)
      add("mean", p.mean)
      add("variance", p.variance)
    case .activation(.preLU(let alpha)): add("alpha", alpha)
    case .scale(let p):
      add("scale", p.scale)
      add("bias", p.bias)
    case .loadConstant(let p), .loadConstantND(let p): add("data", p.data)
    case .simpleRecurrent(let p): gate("", "x", p.gate)
    case .gru(let p): for (letter, weights) in zip(["z", "r", "o"], p.gates) { gate("", letter, weights) }
    case .uniDirectionalLSTM(let p): lstm("", p.weightParams)
    case .biDirectionalLSTM(let p):
      lstm("", p.forwardWeights)
      lstm("backward.", p.backwardWeights)
    default: break
    }
    return result
  }
}
