import CProtobufC
import CoreMLCommon
import CoreMLSpec

/// `UnaryFunctionLayerParams.Operation` (the ones the emitters use).
enum NeuralNetworkUnaryOperation {
  case abs, inverse, exp, rsqrt, threshold, sqrt, log, power

  var proto: CoreML__Specification__UnaryFunctionLayerParams__Operation {
    switch self {
    case .abs: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__ABS
    case .inverse: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__INVERSE
    case .exp: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__EXP
    case .rsqrt: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__RSQRT
    case .threshold: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__THRESHOLD
    case .sqrt: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__SQRT
    case .log: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__LOG
    case .power: return CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__POWER
    }
  }
}

/// `ReduceLayerParams.ReduceOperation` (the ones the emitters use).
enum NeuralNetworkReduction {
  case average, sumSquare
}

/// One value of a custom layer's parameter dictionary.
enum NeuralNetworkCustomParameter {
  case double(Double)
  case string(String)
  case int(Int64)
  case bool(Bool)
}

/// Elementwise functions, reductions, normalizations, constants, embeddings and custom layers.
extension NeuralNetworkBuilder {
  /// `f(scale * x + shift)`; `alpha` is the power or threshold, `epsilon` guards `inverse`, `rsqrt` and `log`
  /// (Apple reads 0 as 1e-6, [rule UNARY-DEFAULTS]). Specification 1.
  mutating func unary(
    _ operation: NeuralNetworkUnaryOperation, _ name: String, input: String, output: String,
    alpha: Float = 0, shift: Float = 0, scale: Float = 1, epsilon: Float = 0
  ) {
    let params = arena.message(core_ml__specification__unary_function_layer_params__init)
    params.pointee.type = operation.proto
    params.pointee.alpha = alpha
    params.pointee.epsilon = epsilon
    params.pointee.shift = shift
    params.pointee.scale = scale
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY, \.unary,
      params)
  }

  /// A reduction over C (blobs `[C, H, W]` become `[1, H, W]`). Specification 1.
  mutating func reduceChannels(_ reduction: NeuralNetworkReduction, _ name: String, input: String, output: String) {
    let params = arena.message(core_ml__specification__reduce_layer_params__init)
    params.pointee.mode =
      reduction == .average
      ? CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_OPERATION__AVG
      : CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_OPERATION__SUMSQUARE
    params.pointee.axis = CORE_ML__SPECIFICATION__REDUCE_LAYER_PARAMS__REDUCE_AXIS__C
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE, \.reduce,
      params)
  }

  /// `x / sqrt(sum of x^2 over C, H and W + epsilon)`. Specification 1.
  mutating func l2Normalize(_ name: String, input: String, output: String, epsilon: Float) {
    let params = arena.message(core_ml__specification__l2_normalize_layer_params__init)
    params.pointee.epsilon = epsilon
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_L2NORMALIZE,
      \.l2normalize, params)
  }

  /// Local response normalization across C (a window of `localSize` channels). Specification 1.
  mutating func localResponseNormalization(
    _ name: String, input: String, output: String, localSize: Int, alpha: Float, beta: Float, k: Float
  ) {
    let params = arena.message(core_ml__specification__lrnlayer_params__init)
    params.pointee.alpha = alpha
    params.pointee.beta = beta
    params.pointee.localsize = UInt64(localSize)
    params.pointee.k = k
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LRN, \.lrn, params)
  }

  /// The dot product (or cosine similarity) of two vectors over C. Specification 1.
  mutating func dot(_ name: String, inputs: [String], output: String, cosineSimilarity: Bool) {
    let params = arena.message(core_ml__specification__dot_product_layer_params__init)
    params.pointee.cosinesimilarity = cosineSimilarity ? 1 : 0
    append(
      name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_DOT, \.dot, params)
  }

  /// `scale * x (+ bias)` with `scale` and `bias` of shape `shape` (`[C]`: per channel), registered in that order.
  /// Specification 1.
  mutating func scale(
    _ name: String, input: String, output: String, shape: [Int], scale: CoreMLWeightValues, bias: CoreMLWeightValues?
  ) throws {
    let params = arena.message(core_ml__specification__scale_layer_params__init)
    params.pointee.n_shapescale = shape.count
    params.pointee.shapescale = uint64s(shape)
    params.pointee.scale = try weights(scale, layer: name)
    if let bias {
      params.pointee.hasbias = 1
      params.pointee.n_shapebias = shape.count
      params.pointee.shapebias = uint64s(shape)
      params.pointee.bias = try weights(bias, layer: name)
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SCALE, \.scale,
      params)
  }

  /// A constant blob of `[C, H, W]` `shape`, with no inputs. Specification 1.
  mutating func loadConstant(_ name: String, output: String, shape: [Int], values: CoreMLWeightValues) throws {
    let params = arena.message(core_ml__specification__load_constant_layer_params__init)
    params.pointee.n_shape = shape.count
    params.pointee.shape = uint64s(shape)
    params.pointee.data = try weights(values, layer: name)
    append(
      name, inputs: [], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT,
      \.loadconstant, params)
  }

  /// A lookup of token ids below `inputDim` in `[outputChannels, inputDim]` `weights` (no bias). Specification 1.
  mutating func embedding(
    _ name: String, input: String, output: String, inputDim: Int, outputChannels: Int, weights: CoreMLWeightValues
  ) throws {
    let params = arena.message(core_ml__specification__embedding_layer_params__init)
    params.pointee.inputdim = UInt64(inputDim)
    params.pointee.outputchannels = UInt64(outputChannels)
    params.pointee.weights = try self.weights(weights, layer: name)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EMBEDDING,
      \.embedding, params)
  }

  /// A layer the app implements (`MLCustomLayer` named `className`), with its weights in the order given and
  /// its parameter dictionary in the order given. Custom layers arrived with Core ML 1.2: specification 2.
  mutating func custom(
    _ name: String, inputs: [String], output: String, className: String, description: String,
    weights: [CoreMLWeightValues], parameters: [(key: String, value: NeuralNetworkCustomParameter)]
  ) throws {
    let params = arena.message(core_ml__specification__custom_layer_params__init)
    params.pointee.classname = arena.string(className)
    params.pointee.description = arena.string(description)
    let weightParams = try weights.map { try self.weights($0, layer: name) }
    params.pointee.n_weights = weightParams.count
    params.pointee.weights = arena.pointerArray(weightParams)
    let arena = self.arena
    let entries = parameters.map {
      key, parameter -> UnsafeMutablePointer<CoreML__Specification__CustomLayerParams__ParametersEntry> in
      let value = arena.message(core_ml__specification__custom_layer_params__custom_layer_param_value__init)
      switch parameter {
      case .double(let number):
        value.pointee.value_case =
          CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_DOUBLE_VALUE
        value.pointee.doublevalue = number
      case .string(let text):
        value.pointee.value_case =
          CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_STRING_VALUE
        value.pointee.stringvalue = arena.string(text)
      case .int(let number):
        value.pointee.value_case =
          CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_LONG_VALUE
        value.pointee.longvalue = number
      case .bool(let flag):
        value.pointee.value_case =
          CORE_ML__SPECIFICATION__CUSTOM_LAYER_PARAMS__CUSTOM_LAYER_PARAM_VALUE__VALUE_BOOL_VALUE
        value.pointee.boolvalue = flag ? 1 : 0
      }
      let entry = arena.message(core_ml__specification__custom_layer_params__parameters_entry__init)
      entry.pointee.key = arena.string(key)
      entry.pointee.value = value
      return entry
    }
    params.pointee.n_parameters = entries.count
    params.pointee.parameters = arena.pointerArray(entries)
    append(
      name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CUSTOM, \.custom,
      params)
    requireSpecificationVersion(2)
  }
}
