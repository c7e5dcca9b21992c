import CoreMLCommon
import ModelIR

extension CoreMLGraphImporter {
  /// Embedding and recurrent layers on `[Seq, C, 1, 1]` blobs, as IR operations on `[T, C]` sequences.
  /// A GRU, simple RNN or LSTM returns its output and its final hidden state (`<layer>_h_out`), an LSTM
  /// also its final cell state, a bidirectional LSTM both directions' final states.
  mutating func sequenceLayer(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> [ValueID] {
    let s = shape(x)
    guard s.count == 4, s[2] == 1, s[3] == 1, !spec.exactArrayMapping else {
      throw unsupported("needs a classic [Seq, C, 1, 1] sequence blob, got \(s)")
    }
    let (steps, channels) = (s[0], s[1])

    if case .embedding(let p) = layer.parameters {
      let dims = try sizes([p.inputDim, p.outputChannels], "embedding size")
      guard channels == 1 else { throw unsupported("embedding of \(channels) channels (one token id per step)") }
      guard !p.hasBias else { throw unsupported("embedding with a bias") }
      // Core ML stores [D, vocabulary]; the IR table is [vocabulary, D].
      let stored = try weights(p.weights, "weights", count: dims[0] * dims[1])
      let table = Constant(shape: dims, values: Matrix.transposed(stored, rows: dims[1], columns: dims[0]))
      let tokens = try reshape(x, to: [steps])
      let embedded = try add(.embedding(table: table), [tokens])
      return [try reshape(embedded, to: [steps, dims[1], 1, 1])]
    }

    // The four recurrent layers, seen alike: sizes, options, activations and per-gate weights by direction.
    let gates: [String]
    let cell: Recurrent.Cell
    var layerActivations: [ActivationParameters]
    var backwardActivations: [ActivationParameters]? = nil
    let (inputs, units): (Int, Int)
    let hasBias: Bool
    let returnSequences: Bool
    let reversed: Bool
    var forwardGates: [RecurrentGateWeights]
    var backwardGates: [RecurrentGateWeights]? = nil
    var lstmOptions: (peephole: Bool, coupled: Bool, forgetBias: Bool)? = nil
    switch layer.parameters {
    case .simpleRecurrent(let p):
      (gates, cell) = (["x"], .simple)
      (inputs, units, layerActivations) = (p.inputVectorSize, p.outputVectorSize, p.activations)
      (hasBias, returnSequences, reversed, forwardGates) = (p.hasBiasVector, p.sequenceOutput, p.reverseInput, [p.gate])
    case .gru(let p):
      (gates, cell) = (["z", "r", "o"], .gru(resetAfter: false))
      (inputs, units, layerActivations) = (p.inputVectorSize, p.outputVectorSize, p.activations)
      (hasBias, returnSequences, reversed, forwardGates) = (p.hasBiasVectors, p.sequenceOutput, p.reverseInput, p.gates)
    case .uniDirectionalLSTM(let p):
      (gates, cell) = (["i", "f", "z", "o"], .lstm)
      (inputs, units, layerActivations) = (p.inputVectorSize, p.outputVectorSize, p.activations)
      (hasBias, returnSequences, reversed, forwardGates) = (
        p.params.hasBiasVectors, p.params.sequenceOutput, p.reverseInput, p.weightParams.gates
      )
      lstmOptions = (
        p.params.hasPeepholeVectors || p.weightParams.hasPeepholeVector, p.params.coupledInputAndForgetGate,
        p.params.forgetBias
      )
    case .biDirectionalLSTM(let p):
      (gates, cell) = (["i", "f", "z", "o"], .lstm)
      (inputs, units, layerActivations, backwardActivations) = (
        p.inputVectorSize, p.outputVectorSize, p.activationsForwardLSTM, p.activationsBackwardLSTM
      )
      (hasBias, returnSequences, reversed) = (p.params.hasBiasVectors, p.params.sequenceOutput, false)
      (forwardGates, backwardGates) = (p.forwardWeights.gates, p.backwardWeights.gates)
      let peephole =
        p.params.hasPeepholeVectors || p.forwardWeights.hasPeepholeVector || p.backwardWeights.hasPeepholeVector
      lstmOptions = (peephole, p.params.coupledInputAndForgetGate, p.params.forgetBias)
    default:
      throw unsupported("not an embedding or recurrent layer")
    }
    _ = try sizes([inputs, units], "vector sizes")
    guard inputs == channels else { throw unsupported("inputVectorSize \(inputs) for \(channels) input channels") }
    if let lstmOptions {
      guard !lstmOptions.peephole, !lstmOptions.coupled, !lstmOptions.forgetBias else {
        throw unsupported("peephole, coupled-gate or forgetBias LSTM options")
      }
    }
    let activations = try layerActivations.map { try recurrentActivation($0) }
    guard activations.count == (cell == .lstm ? 3 : cell == .simple ? 1 : 2) else {
      throw unsupported("\(activations.count) activations")
    }
    if let backwardActivations,
      backwardActivations.map(\.fieldNumber) != Array(layerActivations.map(\.fieldNumber).prefix(3))
    {
      throw unsupported("different activations in the two directions")
    }
    // Inputs past the first are the initial states (h, and c for an LSTM; zeros when an optional state
    // input is not given, as Core ML documents). A single direction reads them as the IR node's state
    // inputs; a bidirectional LSTM's four states are read as zeros, and only from optional inputs.
    var initialStates: [ValueID] = []
    let stateNames = Array(layer.inputs.dropFirst())
    if backwardGates == nil {
      guard stateNames.count <= (cell == .lstm ? 2 : 1) else { throw unsupported("\(stateNames.count) state inputs") }
      for name in stateNames {
        guard let blob = blobs[name] else { throw unsupported("its initial state '\(name)' is not computed before it") }
        guard builder.type(of: blob).elementCount == units else {
          throw unsupported("its initial state '\(name)' of shape \(shape(blob)) is not \(units) values")
        }
        initialStates.append(try reshape(blob, to: [units]))
      }
      if cell == .lstm && initialStates.count == 1 {
        // An LSTM given h only starts from a zero cell state.
        initialStates.append(try add(.constant(.filled(0, shape: [units])), [], suffix: "__c_in"))
      }
    } else {
      for name in stateNames {
        guard let feature = spec.inputs.first(where: { $0.name == name }), feature.isOptional else {
          let what = spec.inputs.contains { $0.name == name } ? "a required model input" : "computed by another layer"
          throw unsupported(
            "its initial state '\(name)' is \(what); a bidirectional LSTM's states are read as zeros, only from optional inputs"
          )
        }
        zeroStateInputs.insert(name)
      }
    }

    /// Core ML's per-gate `[units, inputs]` matrices as the IR's `[inputs, gates * units]` kernel.
    func kernel(_ prefix: String, _ matrix: String, _ matrices: [[Float]?], rows: Int) throws -> Constant {
      var values = [Float](repeating: 0, count: rows * gates.count * units)
      for (g, gate) in gates.enumerated() {
        let stored = try weights(matrices[g], prefix + matrix + "_" + gate, count: units * rows)
        for u in 0..<units {
          for row in 0..<rows { values[row * gates.count * units + g * units + u] = stored[u * rows + row] }
        }
      }
      return Constant(shape: [rows, gates.count * units], values: values)
    }
    func direction(_ prefix: String, _ weights: [RecurrentGateWeights]) throws -> Recurrent.Weights {
      let bias =
        hasBias
        ? Constant(
          shape: [gates.count * units],
          values: try gates.indices.flatMap {
            try self.weights(weights[$0].biasVector, prefix + "b_" + gates[$0], count: units)
          })
        : nil
      return .init(
        kernel: try kernel(prefix, "W", weights.map(\.weightMatrix), rows: inputs),
        recurrentKernel: try kernel(prefix, "R", weights.map(\.recursionMatrix), rows: units), bias: bias)
    }

    if reversed && returnSequences { throw unsupported("reverseInput with sequence output") }
    let recurrent = Recurrent(
      cell: cell, units: units, activation: activations.count > 1 ? activations[1] : activations[0],
      recurrentActivation: cell == .simple ? .sigmoid : activations[0], forward: try direction("", forwardGates),
      backward: try backwardGates.map { try direction("backward.", $0) }, merge: .concat,
      returnSequences: returnSequences, goBackwards: reversed)
    let sequence = try reshape(x, to: [steps, channels])
    let result = try add(.recurrent(recurrent), [sequence] + initialStates)
    let out = shape(result)
    let output = try reshape(result, to: out.count == 2 ? [out[0], out[1], 1, 1] : [1, out[0], 1, 1])
    if layer.outputs.count < 2 { return [output] }
    /// One direction's final hidden or cell state, `[1, units, 1, 1]`, as a layer of its own.
    func finalState(_ weights: Recurrent.Weights, reversed: Bool, cellState: Bool, _ tag: String) throws -> ValueID {
      let state = Recurrent(
        cell: cell, units: units, activation: recurrent.activation, recurrentActivation: recurrent.recurrentActivation,
        forward: weights,
        returnSequences: false, goBackwards: reversed, returnsCellState: cellState)
      return try reshape(
        try add(.recurrent(state), [sequence] + initialStates, suffix: "__" + tag), to: [1, units, 1, 1])
    }
    // Outputs past the first: the final hidden state, an LSTM's final cell state, and for a bidirectional
    // LSTM the backward direction's two (Core ML's output order). Only those a later layer or the model
    // reads are computed; the others are left to dead-code removal.
    if let backward = recurrent.backward {
      var results = [output]
      for (index, (weights, reversed, cellState, tag)) in [
        (recurrent.forward, false, false, "h_forward"), (recurrent.forward, false, true, "c_forward"),
        (backward, true, false, "h_backward"), (backward, true, true, "c_backward"),
      ].enumerated() where index + 1 < layer.outputs.count {
        results.append(try finalState(weights, reversed: reversed, cellState: cellState, tag))
      }
      return results
    }
    let hidden: ValueID
    // The final hidden state: the output itself, or the sequence's last step.
    if !returnSequences {
      hidden = output
    } else if out[0] == 1 {
      hidden = try reshape(output, to: [1, out[1], 1, 1])
    } else {
      let last = try add(
        .slice(StridedSlice(begin: [out[0] - 1, 0], end: out, strides: [1, 1])), [result], suffix: "__last_step")
      hidden = try reshape(last, to: [1, out[1], 1, 1])
    }
    guard cell == .lstm, layer.outputs.count > 2 else { return [output, hidden] }
    return [output, hidden, try finalState(recurrent.forward, reversed: reversed, cellState: true, "c")]
  }

  /// A recurrent layer's activation.
  func recurrentActivation(_ activation: ActivationParameters) throws -> Activation {
    switch activation {
    case .sigmoid: return .sigmoid
    case .tanh: return .tanh
    case .relu: return .relu
    case .sigmoidHard(let alpha, let beta): return .hardSigmoid(slope: alpha, offset: beta)
    case .linear(let alpha, let beta): return .linear(scale: alpha, offset: beta)
    default: throw unsupported("recurrent activation with field number \(activation.fieldNumber)")
    }
  }
}
