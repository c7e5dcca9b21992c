import CoreMLCommon
import ModelIR

/// Recurrent and embedding layers: Keras' `[T, C]` sequences run on Core ML's sequence axis.
extension CoreMLLayerEmitter {
  /// An activation as recurrent layers take it (not a layer of its own).
  func recurrentActivation(_ activation: Activation, layer: String) throws -> NeuralNetworkActivation {
    switch activation {
    case .sigmoid: return .sigmoid
    case .tanh: return .tanh
    case .relu: return .relu
    case .hardSigmoid(let slope, let offset): return .sigmoidHard(alpha: slope, beta: offset)
    case .linear(let scale, let offset): return .linear(alpha: scale, beta: offset)
    default:
      throw CoreMLWriterError.unsupportedOperation(
        layer: layer, detail: "recurrent activation \(activation) (sigmoid, hard_sigmoid, tanh, relu, linear)")
    }
  }

  /// One gate's `[units, inputs]` matrix from a Keras `[inputs, gates * units]` kernel.
  static func gateMatrix(_ kernel: Constant, gate: Int, units: Int) -> [Float] {
    let (rows, width) = (kernel.shape[0], kernel.shape[1])
    var result = [Float](repeating: 0, count: rows * units)
    for row in 0..<rows {
      for u in 0..<units { result[u * rows + row] = kernel.values[row * width + gate * units + u] }
    }
    return result
  }

  static func gateBias(_ bias: Constant?, gate: Int, units: Int) -> [Float]? {
    bias.map { Array($0.values[gate * units..<(gate + 1) * units]) }
  }

  /// `states`: the blobs of the initial hidden state and (LSTM) cell state, when the node reads them.
  mutating func emitRecurrent(
    _ r: Recurrent, name: String, input: String, states: [String] = [], output: String, inputShape: [Int]
  ) throws {
    func unsupported(_ detail: String) -> CoreMLWriterError { .unsupportedOperation(layer: name, detail: detail) }
    let inputs = inputShape[1]
    let units = r.units
    // What Core ML's recurrent layers cannot express is written step by step.
    if Self.needsUnrolling(r) {
      if r.returnsCellState { throw unsupported("an LSTM cell state of a layer written step by step") }
      try emitUnrolled(r, name: name, input: input, initial: states, output: output, inputShape: inputShape)
      return
    }
    // Core ML's LSTM layers output the sequence or last step, then the final hidden and cell states; the
    // IR's node is the cell state instead when it asks for it.
    let sequenceOutput = r.returnsCellState ? name + "__y_out" : output
    let stateOutputs = [name + "__h_out", r.returnsCellState && r.backward == nil ? output : name + "__c_out"]

    switch r.cell {
    case .lstm:
      func lstmWeights(_ w: Recurrent.Weights) -> NeuralNetworkLSTMWeights {
        func gate(_ matrix: Constant, _ gate: Int) -> CoreMLWeightValues {
          .values(Self.gateMatrix(matrix, gate: gate, units: units))
        }
        func bias(_ gate: Int) -> CoreMLWeightValues? {
          Self.gateBias(w.bias, gate: gate, units: units).map { .values($0) }
        }
        // Keras gate order i, f, c, o.
        return NeuralNetworkLSTMWeights(
          input: gate(w.kernel, 0), forget: gate(w.kernel, 1), block: gate(w.kernel, 2), output: gate(w.kernel, 3),
          inputRecursion: gate(w.recurrentKernel, 0), forgetRecursion: gate(w.recurrentKernel, 1),
          blockRecursion: gate(w.recurrentKernel, 2), outputRecursion: gate(w.recurrentKernel, 3),
          bias: w.bias == nil ? nil : (bias(0)!, bias(1)!, bias(2)!, bias(3)!))
      }
      let activations = try [r.recurrentActivation, r.activation, r.activation].map {
        try recurrentActivation($0, layer: name)
      }
      // Keras never clips the cell state; Core ML clips at this threshold (coremltools' value).
      let cellClipThreshold: Float = 50000
      if let backward = r.backward {
        // Core ML's bidirectional LSTM concatenates; other merges split the halves and combine them.
        let merged = r.merge == .concat && !r.returnsCellState ? output : name + "__both___output"
        let cellStates = [name + "__c_out", name + "__c_out_backward"]
        try builder.bidirectionalLSTM(
          name, input: input, outputs: [merged] + stateOutputs + [name + "__h_out_backward", cellStates[1]],
          inputSize: inputs, outputSize: units, forwardActivations: activations, backwardActivations: activations,
          sequenceOutput: r.returnSequences, cellClipThreshold: cellClipThreshold, forward: lstmWeights(r.forward),
          backward: lstmWeights(backward))
        if r.returnsCellState {
          try emitMerge(r.merge, name: name + "__cell_merge__", inputs: cellStates, output: output)
        } else if r.merge != .concat {
          try emitSplitMerge(r.merge, name: name, input: merged, output: output)
        }
        return
      }
      try builder.unidirectionalLSTM(
        name, input: input, states: states, outputs: [sequenceOutput] + stateOutputs, inputSize: inputs,
        outputSize: units, activations: activations,
        sequenceOutput: r.returnSequences, cellClipThreshold: cellClipThreshold, reverseInput: r.goBackwards,
        weights: lstmWeights(r.forward))

    case .gru:
      try emitDirections(r, name: name, input: input, output: output) { emitter, weights, reverse, name, output in
        try emitter.emitGRU(
          r, weights, reverse: reverse, name: name, input: input, states: states, output: output, inputs: inputs)
      }

    case .simple:
      try emitDirections(r, name: name, input: input, output: output) { emitter, weights, reverse, name, output in
        try emitter.emitSimpleRNN(
          r, weights, reverse: reverse, name: name, input: input, states: states, output: output, inputs: inputs)
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

  private mutating func emitGRU(
    _ r: Recurrent, _ w: Recurrent.Weights, reverse: Bool, name: String, input: String, states: [String],
    output: String, inputs: Int
  ) throws {
    let units = r.units
    func gate(_ matrix: Constant, _ gate: Int) -> CoreMLWeightValues {
      .values(Self.gateMatrix(matrix, gate: gate, units: units))
    }
    func bias(_ gate: Int) -> CoreMLWeightValues { .values(Self.gateBias(w.bias, gate: gate, units: units)!) }
    let activations = try [r.recurrentActivation, r.activation].map { try recurrentActivation($0, layer: name) }
    // Keras gate order z (update), r (reset), h (output).
    let weights = NeuralNetworkGRUWeights(
      update: gate(w.kernel, 0), reset: gate(w.kernel, 1), output: gate(w.kernel, 2),
      updateRecursion: gate(w.recurrentKernel, 0), resetRecursion: gate(w.recurrentKernel, 1),
      outputRecursion: gate(w.recurrentKernel, 2),
      bias: w.bias == nil ? nil : (bias(0), bias(1), bias(2)))
    try builder.gru(
      name, input: input, states: states, outputs: [output, name + "__h_out"], inputSize: inputs, outputSize: units,
      activations: activations,
      sequenceOutput: r.returnSequences, reverseInput: reverse, weights: weights)
  }

  private mutating func emitSimpleRNN(
    _ r: Recurrent, _ w: Recurrent.Weights, reverse: Bool, name: String, input: String, states: [String],
    output: String, inputs: Int
  ) throws {
    try builder.simpleRecurrent(
      name, input: input, states: states, outputs: [output, name + "__h_out"], inputSize: inputs, outputSize: r.units,
      activation: try recurrentActivation(r.activation, layer: name), sequenceOutput: r.returnSequences,
      reverseInput: reverse,
      weights: .values(Self.gateMatrix(w.kernel, gate: 0, units: r.units)),
      recursion: .values(Self.gateMatrix(w.recurrentKernel, gate: 0, units: r.units)),
      bias: w.bias.map { .values($0.values) })
  }

  /// Splits a bidirectional output's two halves along C and combines them with `sum`, `mul` or `ave`.
  private mutating func emitSplitMerge(_ merge: Recurrent.Merge, name: String, input: String, output: String) throws {
    let halves = [name + "__forward___output", name + "__backward___output"]
    builder.split(name + "__split__", input: input, outputs: halves)
    try emitMerge(merge, name: name + "__merge__", inputs: halves, output: output)
  }

  /// The two directions of a bidirectional layer joined as Keras' `merge_mode` says: `concat` along C,
  /// or elementwise `add`, `multiply` or `average`.
  mutating func emitMerge(_ merge: Recurrent.Merge, name: String, inputs halves: [String], output: String) throws {
    let elementwise: [Recurrent.Merge: ElementwiseKind] = [.sum: .add, .mul: .multiply, .ave: .average]
    guard let kind = elementwise[merge] else {
      builder.concat(name, inputs: halves, output: output)
      return
    }
    try emitElementwise(kind, name: name, inputs: halves, output: output)
  }

  /// Keras' `[vocabulary, D]` table as Core ML's `[D, vocabulary]` embedding weights.
  mutating func emitEmbedding(_ table: Constant, name: String, input: String, output: String) throws {
    let (vocabulary, width) = (table.shape[0], table.shape[1])
    try builder.embedding(
      name, input: input, output: output, inputDim: vocabulary, outputChannels: width,
      weights: .transposed(table.values, rows: vocabulary, columns: width))
  }
}
