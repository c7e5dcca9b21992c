import CoreMLCommon
import CProtobufC
import CoreMLSpec
import ModelIR

typealias ActivationParams = CoreML__Specification__ActivationParams

/// Recurrent and embedding layers: Keras' `[T, C]` sequences run on Core ML's sequence axis.
extension CoreMLLayerEmitter {
  /// An activation as the parameter message recurrent layers take (not a layer of its own).
  func activationParams(_ activation: Activation, layer: String) throws -> UnsafeMutablePointer<ActivationParams> {
    let params = arena.message(core_ml__specification__activation_params__init)
    switch activation {
    case .sigmoid:
      params.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID
      params.pointee.sigmoid = arena.message(core_ml__specification__activation_sigmoid__init)
    case .tanh:
      params.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_TANH
      params.pointee.tanh = arena.message(core_ml__specification__activation_tanh__init)
    case .relu:
      params.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_RE_LU
      params.pointee.relu = arena.message(core_ml__specification__activation_re_lu__init)
    case .hardSigmoid(let slope, let offset):
      params.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD
      params.pointee.sigmoidhard = arena.message(core_ml__specification__activation_sigmoid_hard__init)
      params.pointee.sigmoidhard.pointee.alpha = slope
      params.pointee.sigmoidhard.pointee.beta = offset
    case .linear(let scale, let offset):
      params.pointee.nonlinearity_type_case = CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR
      params.pointee.linear = arena.message(core_ml__specification__activation_linear__init)
      params.pointee.linear.pointee.alpha = scale
      params.pointee.linear.pointee.beta = offset
    default:
      throw CoreMLWriterError.unsupportedOperation(layer: layer, detail: "recurrent activation \(activation) (sigmoid, hard_sigmoid, tanh, relu, linear)")
    }
    return params
  }

  /// One gate's `[units, inputs]` matrix from a Keras `[inputs, gates * units]` kernel.
  static func gateMatrix(_ kernel: Constant, gate: Int, units: Int) -> [Float] {
    let (rows, width) = (kernel.shape[0], kernel.shape[1])
    var result = [Float](repeating: 0, count: rows * units)
    for row in 0..<rows { for u in 0..<units { result[u * rows + row] = kernel.values[row * width + gate * units + u] } }
    return result
  }

  static func gateBias(_ bias: Constant?, gate: Int, units: Int) -> [Float]? {
    bias.map { Array($0.values[gate * units..<(gate + 1) * units]) }
  }

  mutating func emitRecurrent(_ r: Recurrent, name: String, input: String, output: String, inputShape: [Int]) throws {
    func unsupported(_ detail: String) -> CoreMLWriterError { .unsupportedOperation(layer: name, detail: detail) }
    let inputs = inputShape[1], units = r.units
    // What Core ML's recurrent layers cannot express is written step by step.
    if Self.needsUnrolling(r) {
      try emitUnrolled(r, name: name, input: input, output: output, inputShape: inputShape)
      return
    }
    func weights(_ values: [Float]) throws -> UnsafeMutablePointer<WeightParams> { try self.weights(values, layer: name) }
    let stateOutputs = [name + "__h_out", name + "__c_out"]

    switch r.cell {
    case .lstm:
      func lstmWeights(_ w: Recurrent.Weights) throws -> UnsafeMutablePointer<CoreML__Specification__LSTMWeightParams> {
        let p = arena.message(core_ml__specification__lstmweight_params__init)
        // Keras gate order i, f, c, o.
        p.pointee.inputgateweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 0, units: units))
        p.pointee.forgetgateweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 1, units: units))
        p.pointee.blockinputweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 2, units: units))
        p.pointee.outputgateweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 3, units: units))
        p.pointee.inputgaterecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 0, units: units))
        p.pointee.forgetgaterecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 1, units: units))
        p.pointee.blockinputrecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 2, units: units))
        p.pointee.outputgaterecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 3, units: units))
        if let bias = w.bias {
          p.pointee.inputgatebiasvector = try weights(Self.gateBias(bias, gate: 0, units: units)!)
          p.pointee.forgetgatebiasvector = try weights(Self.gateBias(bias, gate: 1, units: units)!)
          p.pointee.blockinputbiasvector = try weights(Self.gateBias(bias, gate: 2, units: units)!)
          p.pointee.outputgatebiasvector = try weights(Self.gateBias(bias, gate: 3, units: units)!)
        }
        return p
      }
      let settings = arena.message(core_ml__specification__lstmparams__init)
      settings.pointee.sequenceoutput = r.returnSequences ? 1 : 0
      settings.pointee.hasbiasvectors = r.forward.bias == nil ? 0 : 1
      // Keras never clips the cell state; Core ML clips at this threshold (coremltools' value).
      settings.pointee.cellclipthreshold = 50000
      let activations = try [r.recurrentActivation, r.activation, r.activation].map { try activationParams($0, layer: name) }
      if let backward = r.backward {
        // Core ML's bidirectional LSTM concatenates; other merges split the halves and combine them.
        let merged = r.merge == .concat ? output : name + "__both___output"
        let params = arena.message(core_ml__specification__bi_directional_lstmlayer_params__init)
        params.pointee.inputvectorsize = UInt64(inputs)
        params.pointee.outputvectorsize = UInt64(units)
        params.pointee.n_activationsforwardlstm = 3
        params.pointee.activationsforwardlstm = arena.pointerArray(activations)
        params.pointee.n_activationsbackwardlstm = 3
        params.pointee.activationsbackwardlstm = arena.pointerArray(try [r.recurrentActivation, r.activation, r.activation].map { try activationParams($0, layer: name) })
        params.pointee.params = settings
        params.pointee.n_weightparams = 2
        params.pointee.weightparams = arena.pointerArray([try lstmWeights(r.forward), try lstmWeights(backward)])
        let layer = layer(name, inputs: [input], outputs: [merged] + stateOutputs + [name + "__h_out_backward", name + "__c_out_backward"])
        layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BI_DIRECTIONAL_LSTM
        layer.pointee.bidirectionallstm = params
        if r.merge != .concat { try emitSplitMerge(r.merge, name: name, input: merged, output: output) }
        return
      }
      let params = arena.message(core_ml__specification__uni_directional_lstmlayer_params__init)
      params.pointee.inputvectorsize = UInt64(inputs)
      params.pointee.outputvectorsize = UInt64(units)
      params.pointee.n_activations = 3
      params.pointee.activations = arena.pointerArray(activations)
      params.pointee.params = settings
      params.pointee.weightparams = try lstmWeights(r.forward)
      params.pointee.reverseinput = r.goBackwards ? 1 : 0
      let layer = layer(name, inputs: [input], outputs: [output] + stateOutputs)
      layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNI_DIRECTIONAL_LSTM
      layer.pointee.unidirectionallstm = params

    case .gru:
      try emitDirections(r, name: name, input: input, output: output) { emitter, weights, reverse, name, output in
        try emitter.emitGRU(r, weights, reverse: reverse, name: name, input: input, output: output, inputs: inputs)
      }

    case .simple:
      try emitDirections(r, name: name, input: input, output: output) { emitter, weights, reverse, name, output in
        try emitter.emitSimpleRNN(r, weights, reverse: reverse, name: name, input: input, output: output, inputs: inputs)
      }
    }
  }

  /// One layer per direction. Core ML has no bidirectional GRU or RNN: for the last step, a forward and
  /// a reversed layer give the same two final states as Keras' halves, then merge.
  private mutating func emitDirections(
    _ r: Recurrent, name: String, input: String, output: String,
    _ emit: (inout CoreMLLayerEmitter, Recurrent.Weights, Bool, String, String) throws -> Void
  ) throws {
    guard let backward = r.backward else {
      try emit(&self, r.forward, r.goBackwards, name, output)
      return
    }
    // Sequences in both directions are unrolled instead (`needsUnrolling`); only the last steps reach here.
    let halves = [name + "__forward___output", name + "__backward___output"]
    try emit(&self, r.forward, false, name + "__forward__", halves[0])
    try emit(&self, backward, true, name + "__backward__", halves[1])
    try emitMerge(r.merge, name: name, inputs: halves, output: output)
  }

  private mutating func emitGRU(_ r: Recurrent, _ w: Recurrent.Weights, reverse: Bool, name: String, input: String, output: String, inputs: Int) throws {
    let units = r.units
    func weights(_ values: [Float]) throws -> UnsafeMutablePointer<WeightParams> { try self.weights(values, layer: name) }
    let params = arena.message(core_ml__specification__grulayer_params__init)
    params.pointee.inputvectorsize = UInt64(inputs)
    params.pointee.outputvectorsize = UInt64(units)
    params.pointee.n_activations = 2
    params.pointee.activations = arena.pointerArray(try [r.recurrentActivation, r.activation].map { try activationParams($0, layer: name) })
    params.pointee.sequenceoutput = r.returnSequences ? 1 : 0
    // Keras gate order z (update), r (reset), h (output).
    params.pointee.updategateweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 0, units: units))
    params.pointee.resetgateweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 1, units: units))
    params.pointee.outputgateweightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 2, units: units))
    params.pointee.updategaterecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 0, units: units))
    params.pointee.resetgaterecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 1, units: units))
    params.pointee.outputgaterecursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 2, units: units))
    if let bias = w.bias {
      params.pointee.hasbiasvectors = 1
      params.pointee.updategatebiasvector = try weights(Self.gateBias(bias, gate: 0, units: units)!)
      params.pointee.resetgatebiasvector = try weights(Self.gateBias(bias, gate: 1, units: units)!)
      params.pointee.outputgatebiasvector = try weights(Self.gateBias(bias, gate: 2, units: units)!)
    }
    params.pointee.reverseinput = reverse ? 1 : 0
    let layer = layer(name, inputs: [input], outputs: [output, name + "__h_out"])
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GRU
    layer.pointee.gru = params
  }

  private mutating func emitSimpleRNN(_ r: Recurrent, _ w: Recurrent.Weights, reverse: Bool, name: String, input: String, output: String, inputs: Int) throws {
    let params = arena.message(core_ml__specification__simple_recurrent_layer_params__init)
    params.pointee.inputvectorsize = UInt64(inputs)
    params.pointee.outputvectorsize = UInt64(r.units)
    params.pointee.activation = try activationParams(r.activation, layer: name)
    params.pointee.sequenceoutput = r.returnSequences ? 1 : 0
    params.pointee.weightmatrix = try weights(Self.gateMatrix(w.kernel, gate: 0, units: r.units), layer: name)
    params.pointee.recursionmatrix = try weights(Self.gateMatrix(w.recurrentKernel, gate: 0, units: r.units), layer: name)
    if let bias = w.bias {
      params.pointee.hasbiasvector = 1
      params.pointee.biasvector = try weights(bias.values, layer: name)
    }
    params.pointee.reverseinput = reverse ? 1 : 0
    let layer = layer(name, inputs: [input], outputs: [output, name + "__h_out"])
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SIMPLE_RECURRENT
    layer.pointee.simplerecurrent = params
  }

  /// Splits a bidirectional output's two halves along C and combines them with `sum`, `mul` or `ave`.
  private mutating func emitSplitMerge(_ merge: Recurrent.Merge, name: String, input: String, output: String) throws {
    let halves = [name + "__forward___output", name + "__backward___output"]
    let split = arena.message(core_ml__specification__split_layer_params__init)
    split.pointee.noutputs = 2
    let splitLayer = layer(name + "__split__", inputs: [input], outputs: halves)
    splitLayer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SPLIT
    splitLayer.pointee.split = split
    try emitMerge(merge, name: name + "__merge__", inputs: halves, output: output)
  }

  /// The two directions of a bidirectional layer joined as Keras' `merge_mode` says: `concat` along C,
  /// or elementwise `add`, `multiply` or `average`.
  mutating func emitMerge(_ merge: Recurrent.Merge, name: String, inputs halves: [String], output: String) throws {
    let elementwise: [Recurrent.Merge: ElementwiseKind] = [.sum: .add, .mul: .multiply, .ave: .average]
    guard let kind = elementwise[merge] else {
      let concat = layer(name, inputs: halves, output: output)
      concat.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT
      concat.pointee.concat = arena.message(core_ml__specification__concat_layer_params__init)
      return
    }
    try emitElementwise(kind, name: name, inputs: halves, output: output)
  }

  /// Keras' `[vocabulary, D]` table as Core ML's `[D, vocabulary]` embedding weights.
  mutating func emitEmbedding(_ table: Constant, name: String, input: String, output: String) throws {
    let (vocabulary, width) = (table.shape[0], table.shape[1])
    let params = arena.message(core_ml__specification__embedding_layer_params__init)
    params.pointee.inputdim = UInt64(vocabulary)
    params.pointee.outputchannels = UInt64(width)
    params.pointee.weights = try weights(.transposed(table.values, rows: vocabulary, columns: width), layer: name)
    let layer = layer(name, inputs: [input], output: output)
    layer.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EMBEDDING
    layer.pointee.embedding = params
  }
}
