import CProtobufC
import CoreMLCommon
import CoreMLSpec

/// `ConvolutionLayerParams` and `PoolingLayerParams` padding: `same` (bottom/right heavy, as TensorFlow),
/// `valid` (no border), or valid with explicit `(start, end)` borders for height then width.
enum NeuralNetworkPadding {
  case same, valid
  case explicit([(start: Int, end: Int)])
}

/// `PoolingLayerParams.PoolingType`.
enum NeuralNetworkPooling {
  case max, average
}

/// One `ActivationParams` nonlinearity and its parameters.
enum NeuralNetworkActivation {
  /// `alpha * x + beta`.
  case linear(alpha: Float, beta: Float)
  case relu
  case leakyReLU(alpha: Float)
  /// `x` where `x > alpha`, else 0.
  case thresholdedReLU(alpha: Float)
  /// One slope per channel.
  case preLU(alpha: CoreMLWeightValues)
  case elu(alpha: Float)
  case sigmoid
  /// `min(max(alpha * x + beta, 0), 1)`.
  case sigmoidHard(alpha: Float, beta: Float)
  case tanh, softplus, softsign
}

/// The elementwise layers over several blobs of the same (or broadcastable) shape.
enum NeuralNetworkElementwise {
  case add, multiply, average, max, min
}

/// Convolution, pooling, inner product, batchnorm, activation and elementwise layers: specification 1.
extension NeuralNetworkBuilder {
  /// A convolution (`deconvolutionOutputShape` nil) or a deconvolution with that explicit `[H, W]` output.
  /// `weights` are `[outputChannels, kernelChannels, kh, kw]` (deconvolution: `[kernelChannels, outputChannels / groups, kh, kw]`),
  /// registered before `bias`.
  mutating func convolution(
    _ name: String, input: String, output: String,
    outputChannels: Int, kernelChannels: Int, groups: Int, kernelSize: [Int], stride: [Int], dilation: [Int],
    padding: NeuralNetworkPadding, weights: CoreMLWeightValues, bias: CoreMLWeightValues?,
    deconvolutionOutputShape: [Int]? = nil,
    deconvolution: Bool = false
  ) throws {
    let deconvolution = deconvolution || deconvolutionOutputShape != nil
    let params = arena.message(core_ml__specification__convolution_layer_params__init)
    params.pointee.outputchannels = UInt64(outputChannels)
    params.pointee.kernelchannels = UInt64(kernelChannels)
    params.pointee.ngroups = UInt64(groups)
    params.pointee.n_kernelsize = kernelSize.count
    params.pointee.kernelsize = uint64s(kernelSize)
    params.pointee.n_stride = stride.count
    params.pointee.stride = uint64s(stride)
    params.pointee.n_dilationfactor = dilation.count
    params.pointee.dilationfactor = uint64s(dilation)
    if deconvolution { params.pointee.isdeconvolution = 1 }
    if let shape = deconvolutionOutputShape {
      params.pointee.n_outputshape = shape.count
      params.pointee.outputshape = uint64s(shape)
    }
    switch padding {
    case .same:
      params.pointee.convolution_padding_type_case =
        CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_SAME
      params.pointee.same = arena.message(core_ml__specification__same_padding__init)
    case .valid:
      params.pointee.convolution_padding_type_case =
        CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID
      params.pointee.valid = validPadding()
    case .explicit(let amounts):
      params.pointee.convolution_padding_type_case =
        CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID
      params.pointee.valid = validPadding(amounts)
    }
    // Per output channel; a deconvolution's weights lead with its input channels: one scale for the tensor.
    params.pointee.weights = try compressibleWeights(weights, channels: deconvolution ? 1 : outputChannels, layer: name)
    if let bias {
      params.pointee.hasbias = 1
      params.pointee.bias = try self.weights(bias, layer: name)
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONVOLUTION,
      \.convolution, params)
  }

  /// Valid padding with explicit zero borders on both spatial axes.
  private func validPadding(_ amounts: [(start: Int, end: Int)] = [(0, 0), (0, 0)]) -> UnsafeMutablePointer<
    CoreML__Specification__ValidPadding
  > {
    let valid = arena.message(core_ml__specification__valid_padding__init)
    valid.pointee.paddingamounts = border(amounts)
    return valid
  }

  /// Pooling over `kernelSize` windows (the whole `[H, W]` plane when `global`).
  mutating func pooling(
    _ kind: NeuralNetworkPooling, _ name: String, input: String, output: String,
    kernelSize: [Int], stride: [Int], padding: NeuralNetworkPadding, global: Bool, averageExcludesPadding: Bool
  ) {
    let params = arena.message(core_ml__specification__pooling_layer_params__init)
    params.pointee.type =
      kind == .max
      ? CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_TYPE__MAX
      : CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_TYPE__AVERAGE
    params.pointee.n_kernelsize = kernelSize.count
    params.pointee.kernelsize = uint64s(kernelSize)
    params.pointee.n_stride = stride.count
    params.pointee.stride = uint64s(stride)
    params.pointee.avgpoolexcludepadding = averageExcludesPadding ? 1 : 0
    params.pointee.globalpooling = global ? 1 : 0
    switch padding {
    case .same:
      params.pointee.pooling_padding_type_case = CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME
      params.pointee.same = arena.message(core_ml__specification__same_padding__init)
    case .valid:
      params.pointee.pooling_padding_type_case =
        CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID
      params.pointee.valid = validPadding()
    case .explicit(let amounts):
      params.pointee.pooling_padding_type_case =
        CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID
      params.pointee.valid = validPadding(amounts)
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POOLING, \.pooling,
      params)
  }

  /// A fully connected layer over C: `weights` are `[outputChannels, inputChannels]`, registered before `bias`.
  mutating func innerProduct(
    _ name: String, input: String, output: String, inputChannels: Int, outputChannels: Int, weights: CoreMLWeightValues,
    bias: CoreMLWeightValues?
  ) throws {
    let params = arena.message(core_ml__specification__inner_product_layer_params__init)
    params.pointee.inputchannels = UInt64(inputChannels)
    params.pointee.outputchannels = UInt64(outputChannels)
    params.pointee.weights = try compressibleWeights(weights, channels: outputChannels, layer: name)
    if let bias {
      params.pointee.hasbias = 1
      params.pointee.bias = try self.weights(bias, layer: name)
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_INNER_PRODUCT,
      \.innerproduct, params)
  }

  /// Batch normalization with stored statistics, weights registered as gamma, beta, mean, variance.
  mutating func batchnorm(
    _ name: String, input: String, output: String, channels: Int, epsilon: Float,
    gamma: CoreMLWeightValues, beta: CoreMLWeightValues, mean: CoreMLWeightValues, variance: CoreMLWeightValues
  ) throws {
    let params = arena.message(core_ml__specification__batchnorm_layer_params__init)
    params.pointee.channels = UInt64(channels)
    params.pointee.epsilon = epsilon
    params.pointee.gamma = try weights(gamma, layer: name)
    params.pointee.beta = try weights(beta, layer: name)
    params.pointee.mean = try weights(mean, layer: name)
    params.pointee.variance = try weights(variance, layer: name)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHNORM,
      \.batchnorm, params)
  }

  /// An `activation` layer.
  mutating func activation(_ activation: NeuralNetworkActivation, _ name: String, input: String, output: String) throws
  {
    let params = try activationParams(activation, layer: name)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ACTIVATION,
      \.activation, params)
  }

  /// The `ActivationParams` message (a layer's own, or one of a recurrent layer's); `layer` names weight errors.
  mutating func activationParams(_ activation: NeuralNetworkActivation, layer: String) throws -> UnsafeMutablePointer<
    CoreML__Specification__ActivationParams
  > {
    let params = arena.message(core_ml__specification__activation_params__init)
    let arena = self.arena
    /// Selects one nonlinearity, whose message `configure` fills in.
    func select<T>(
      _ kind: CoreML__Specification__ActivationParams__NonlinearityTypeCase,
      _ field: WritableKeyPath<CoreML__Specification__ActivationParams, UnsafeMutablePointer<T>?>,
      _ initialize: (UnsafeMutablePointer<T>?) -> Void,
      configure: (UnsafeMutablePointer<T>) -> Void = { _ in }
    ) {
      params.pointee.nonlinearity_type_case = kind
      let message = arena.message(initialize)
      configure(message)
      params.pointee[keyPath: field] = message
    }
    switch activation {
    case .linear(let alpha, let beta):
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR, \.linear,
        core_ml__specification__activation_linear__init
      ) {
        $0.pointee.alpha = alpha
        $0.pointee.beta = beta
      }
    case .relu:
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_RE_LU, \.relu,
        core_ml__specification__activation_re_lu__init)
    case .leakyReLU(let alpha):
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LEAKY_RE_LU, \.leakyrelu,
        core_ml__specification__activation_leaky_re_lu__init
      ) {
        $0.pointee.alpha = alpha
      }
    case .thresholdedReLU(let alpha):
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_THRESHOLDED_RE_LU, \.thresholdedrelu,
        core_ml__specification__activation_thresholded_re_lu__init
      ) {
        $0.pointee.alpha = alpha
      }
    case .preLU(let alpha):
      let slopes = try weights(alpha, layer: layer)
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PRE_LU, \.prelu,
        core_ml__specification__activation_pre_lu__init
      ) {
        $0.pointee.alpha = slopes
      }
    case .elu(let alpha):
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_ELU, \.elu,
        core_ml__specification__activation_elu__init
      ) {
        $0.pointee.alpha = alpha
      }
    case .sigmoid:
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID, \.sigmoid,
        core_ml__specification__activation_sigmoid__init)
    case .sigmoidHard(let alpha, let beta):
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD, \.sigmoidhard,
        core_ml__specification__activation_sigmoid_hard__init
      ) {
        $0.pointee.alpha = alpha
        $0.pointee.beta = beta
      }
    case .tanh:
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_TANH, \.tanh,
        core_ml__specification__activation_tanh__init)
    case .softplus:
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SOFTPLUS, \.softplus,
        core_ml__specification__activation_softplus__init)
    case .softsign:
      select(
        CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SOFTSIGN, \.softsign,
        core_ml__specification__activation_softsign__init)
    }
    return params
  }

  /// add, multiply, average, max or min of the inputs.
  mutating func elementwise(_ kind: NeuralNetworkElementwise, _ name: String, inputs: [String], output: String) {
    let outputs = [output]
    switch kind {
    case .add:
      append(
        name, inputs: inputs, outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD, \.add,
        arena.message(core_ml__specification__add_layer_params__init))
    case .multiply:
      append(
        name, inputs: inputs, outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY,
        \.multiply,
        arena.message(core_ml__specification__multiply_layer_params__init))
    case .average:
      append(
        name, inputs: inputs, outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_AVERAGE, \.average,
        arena.message(core_ml__specification__average_layer_params__init))
    case .max:
      append(
        name, inputs: inputs, outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MAX, \.max,
        arena.message(core_ml__specification__max_layer_params__init))
    case .min:
      append(
        name, inputs: inputs, outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MIN, \.min,
        arena.message(core_ml__specification__min_layer_params__init))
    }
  }

  /// Softmax over C.
  mutating func softmax(_ name: String, input: String, output: String) {
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX, \.softmax,
      arena.message(core_ml__specification__softmax_layer_params__init))
  }
}
