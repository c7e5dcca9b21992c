import CProtobufC
import CoreMLCommon
import CoreMLSpec

/// A GRU's `[outputSize, inputSize]` input matrices, `[outputSize, outputSize]` recursion matrices and
/// optional `[outputSize]` biases, per gate (update, reset, output).
struct NeuralNetworkGRUWeights {
  var update: CoreMLWeightValues, reset: CoreMLWeightValues, output: CoreMLWeightValues
  var updateRecursion: CoreMLWeightValues, resetRecursion: CoreMLWeightValues, outputRecursion: CoreMLWeightValues
  var bias: (update: CoreMLWeightValues, reset: CoreMLWeightValues, output: CoreMLWeightValues)?
}

/// An LSTM's matrices and optional biases per gate (input, forget, block input, output).
struct NeuralNetworkLSTMWeights {
  var input: CoreMLWeightValues, forget: CoreMLWeightValues, block: CoreMLWeightValues, output: CoreMLWeightValues
  var inputRecursion: CoreMLWeightValues, forgetRecursion: CoreMLWeightValues, blockRecursion: CoreMLWeightValues,
    outputRecursion: CoreMLWeightValues
  var bias:
    (input: CoreMLWeightValues, forget: CoreMLWeightValues, block: CoreMLWeightValues, output: CoreMLWeightValues)?
}

/// Recurrent layers over Core ML's sequence axis: specification 1. Their `outputs` are the sequence (or
/// last step) output followed by the final states (`h`, then `c` for an LSTM; a bidirectional LSTM adds the
/// backward `h` and `c`). `states` are the initial-state blobs the layer reads after its input (`h`, then
/// `c` for an LSTM), zeros when none are given.
extension NeuralNetworkBuilder {
  /// A GRU with activations `[recurrent (gates), output]`; weights registered in `NeuralNetworkGRUWeights` order.
  mutating func gru(
    _ name: String, input: String, states: [String] = [], outputs: [String], inputSize: Int, outputSize: Int,
    activations: [NeuralNetworkActivation], sequenceOutput: Bool, reverseInput: Bool, weights w: NeuralNetworkGRUWeights
  ) throws {
    let params = arena.message(core_ml__specification__grulayer_params__init)
    params.pointee.inputvectorsize = UInt64(inputSize)
    params.pointee.outputvectorsize = UInt64(outputSize)
    params.pointee.n_activations = activations.count
    params.pointee.activations = arena.pointerArray(try activations.map { try activationParams($0, layer: name) })
    params.pointee.sequenceoutput = sequenceOutput ? 1 : 0
    func weights(_ values: CoreMLWeightValues) throws -> UnsafeMutablePointer<WeightParams> {
      try self.weights(values, layer: name)
    }
    params.pointee.updategateweightmatrix = try weights(w.update)
    params.pointee.resetgateweightmatrix = try weights(w.reset)
    params.pointee.outputgateweightmatrix = try weights(w.output)
    params.pointee.updategaterecursionmatrix = try weights(w.updateRecursion)
    params.pointee.resetgaterecursionmatrix = try weights(w.resetRecursion)
    params.pointee.outputgaterecursionmatrix = try weights(w.outputRecursion)
    if let bias = w.bias {
      params.pointee.hasbiasvectors = 1
      params.pointee.updategatebiasvector = try weights(bias.update)
      params.pointee.resetgatebiasvector = try weights(bias.reset)
      params.pointee.outputgatebiasvector = try weights(bias.output)
    }
    params.pointee.reverseinput = reverseInput ? 1 : 0
    append(
      name, inputs: [input] + states, outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GRU, \.gru,
      params)
  }

  /// A simple RNN; weights registered as input matrix, recursion matrix, bias.
  mutating func simpleRecurrent(
    _ name: String, input: String, states: [String] = [], outputs: [String], inputSize: Int, outputSize: Int,
    activation: NeuralNetworkActivation,
    sequenceOutput: Bool, reverseInput: Bool, weights: CoreMLWeightValues, recursion: CoreMLWeightValues,
    bias: CoreMLWeightValues?
  ) throws {
    let params = arena.message(core_ml__specification__simple_recurrent_layer_params__init)
    params.pointee.inputvectorsize = UInt64(inputSize)
    params.pointee.outputvectorsize = UInt64(outputSize)
    params.pointee.activation = try activationParams(activation, layer: name)
    params.pointee.sequenceoutput = sequenceOutput ? 1 : 0
    params.pointee.weightmatrix = try self.weights(weights, layer: name)
    params.pointee.recursionmatrix = try self.weights(recursion, layer: name)
    if let bias {
      params.pointee.hasbiasvector = 1
      params.pointee.biasvector = try self.weights(bias, layer: name)
    }
    params.pointee.reverseinput = reverseInput ? 1 : 0
    append(
      name, inputs: [input] + states, outputs: outputs,
      CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SIMPLE_RECURRENT, \.simplerecurrent, params)
  }

  /// A unidirectional LSTM with activations `[recurrent (gates), cell, output]`.
  mutating func unidirectionalLSTM(
    _ name: String, input: String, states: [String] = [], outputs: [String], inputSize: Int, outputSize: Int,
    activations: [NeuralNetworkActivation],
    sequenceOutput: Bool, cellClipThreshold: Float, reverseInput: Bool, weights: NeuralNetworkLSTMWeights
  ) throws {
    let settings = lstmSettings(
      sequenceOutput: sequenceOutput, hasBias: weights.bias != nil, cellClipThreshold: cellClipThreshold)
    let params = arena.message(core_ml__specification__uni_directional_lstmlayer_params__init)
    params.pointee.inputvectorsize = UInt64(inputSize)
    params.pointee.outputvectorsize = UInt64(outputSize)
    params.pointee.n_activations = activations.count
    params.pointee.activations = arena.pointerArray(try activations.map { try activationParams($0, layer: name) })
    params.pointee.params = settings
    params.pointee.weightparams = try lstmWeights(weights, layer: name)
    params.pointee.reverseinput = reverseInput ? 1 : 0
    append(
      name, inputs: [input] + states, outputs: outputs,
      CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNI_DIRECTIONAL_LSTM, \.unidirectionallstm, params)
  }

  /// A bidirectional LSTM whose output concatenates the forward and backward halves along C; the forward
  /// weights are registered before the backward ones.
  mutating func bidirectionalLSTM(
    _ name: String, input: String, outputs: [String], inputSize: Int, outputSize: Int,
    forwardActivations: [NeuralNetworkActivation], backwardActivations: [NeuralNetworkActivation],
    sequenceOutput: Bool, cellClipThreshold: Float, forward: NeuralNetworkLSTMWeights,
    backward: NeuralNetworkLSTMWeights
  ) throws {
    let settings = lstmSettings(
      sequenceOutput: sequenceOutput, hasBias: forward.bias != nil, cellClipThreshold: cellClipThreshold)
    let params = arena.message(core_ml__specification__bi_directional_lstmlayer_params__init)
    params.pointee.inputvectorsize = UInt64(inputSize)
    params.pointee.outputvectorsize = UInt64(outputSize)
    params.pointee.n_activationsforwardlstm = forwardActivations.count
    params.pointee.activationsforwardlstm = arena.pointerArray(
      try forwardActivations.map { try activationParams($0, layer: name) })
    params.pointee.n_activationsbackwardlstm = backwardActivations.count
    params.pointee.activationsbackwardlstm = arena.pointerArray(
      try backwardActivations.map { try activationParams($0, layer: name) })
    params.pointee.params = settings
    params.pointee.n_weightparams = 2
    params.pointee.weightparams = arena.pointerArray([
      try lstmWeights(forward, layer: name), try lstmWeights(backward, layer: name),
    ])
    append(
      name, inputs: [input], outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BI_DIRECTIONAL_LSTM,
      \.bidirectionallstm, params)
  }

  private func lstmSettings(sequenceOutput: Bool, hasBias: Bool, cellClipThreshold: Float) -> UnsafeMutablePointer<
    CoreML__Specification__LSTMParams
  > {
    let settings = arena.message(core_ml__specification__lstmparams__init)
    settings.pointee.sequenceoutput = sequenceOutput ? 1 : 0
    settings.pointee.hasbiasvectors = hasBias ? 1 : 0
    settings.pointee.cellclipthreshold = cellClipThreshold
    return settings
  }

  /// Registered as the four input matrices, the four recursion matrices, then the four biases.
  private mutating func lstmWeights(_ w: NeuralNetworkLSTMWeights, layer: String) throws -> UnsafeMutablePointer<
    CoreML__Specification__LSTMWeightParams
  > {
    let p = arena.message(core_ml__specification__lstmweight_params__init)
    func weights(_ values: CoreMLWeightValues) throws -> UnsafeMutablePointer<WeightParams> {
      try self.weights(values, layer: layer)
    }
    p.pointee.inputgateweightmatrix = try weights(w.input)
    p.pointee.forgetgateweightmatrix = try weights(w.forget)
    p.pointee.blockinputweightmatrix = try weights(w.block)
    p.pointee.outputgateweightmatrix = try weights(w.output)
    p.pointee.inputgaterecursionmatrix = try weights(w.inputRecursion)
    p.pointee.forgetgaterecursionmatrix = try weights(w.forgetRecursion)
    p.pointee.blockinputrecursionmatrix = try weights(w.blockRecursion)
    p.pointee.outputgaterecursionmatrix = try weights(w.outputRecursion)
    if let bias = w.bias {
      p.pointee.inputgatebiasvector = try weights(bias.input)
      p.pointee.forgetgatebiasvector = try weights(bias.forget)
      p.pointee.blockinputbiasvector = try weights(bias.block)
      p.pointee.outputgatebiasvector = try weights(bias.output)
    }
    return p
  }
}
