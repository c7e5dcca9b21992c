import CoreMLCommon
import ModelIR

extension CoreMLGraphImporter {
  /// Embedding and recurrent layers on `[Seq, C, 1, 1]` blobs, as IR operations on `[T, C]` sequences.
  /// A GRU, simple RNN or LSTM returns its output and its final hidden state (`<layer>_h_out`); an LSTM's
  /// final cell state and a bidirectional LSTM's final states are not computed.
  mutating func sequenceLayer(_ layer: CoreMLModelSpec.Layer, _ x: ValueID) throws -> [ValueID] {
    let ints = layer.integers
    func int(_ key: String, _ fallback: Int = 0) -> Int { ints[key]?.first ?? fallback }
    let s = shape(x)
    guard s.count == 4, s[2] == 1, s[3] == 1, !spec.exactArrayMapping else {
      throw unsupported("needs a classic [Seq, C, 1, 1] sequence blob, got \(s)")
    }
    let (steps, channels) = (s[0], s[1])

    if layer.kind == "embedding" {
      let dims = try sizes([int("inputDim"), int("outputChannels")], "embedding size")
      guard channels == 1 else { throw unsupported("embedding of \(channels) channels (one token id per step)") }
      guard int("hasBias") == 0 else { throw unsupported("embedding with a bias") }
      // Core ML stores [D, vocabulary]; the IR table is [vocabulary, D].
      let stored = try weights(layer, "weights", count: dims[0] * dims[1])
      let table = Constant(shape: dims, values: Matrix.transposed(stored, rows: dims[1], columns: dims[0]))
      let tokens = try reshape(x, to: [steps])
      let embedded = try add(.embedding(table: table), [tokens])
      return [try reshape(embedded, to: [steps, dims[1], 1, 1])]
    }

    let (inputs, units) = (int("inputVectorSize"), int("outputVectorSize"))
    _ = try sizes([inputs, units], "vector sizes")
    guard inputs == channels else { throw unsupported("inputVectorSize \(inputs) for \(channels) input channels") }
    let gates: [String], cell: Recurrent.Cell
    switch layer.kind {
    case "simpleRecurrent": (gates, cell) = (["x"], .simple)
    case "gru": (gates, cell) = (["z", "r", "o"], .gru(resetAfter: false))
    default: (gates, cell) = (["i", "f", "z", "o"], .lstm)
    }
    if cell == .lstm {
      guard int("peephole") == 0, int("coupledInputAndForgetGate") == 0, int("forgetBias") == 0 else {
        throw unsupported("peephole, coupled-gate or forgetBias LSTM options")
      }
    }
    let activations = try (ints["activations"] ?? []).enumerated().map { try activation(field: $1, layer: layer, index: $0) }
    guard activations.count == (cell == .lstm ? 3 : cell == .simple ? 1 : 2) else {
      throw unsupported("\(activations.count) activations")
    }
    if layer.kind == "biDirectionalLSTM", ints["backwardActivations"] != ints["activations"].map({ Array($0.prefix(3)) }) {
      throw unsupported("different activations in the two directions")
    }
    let hasBias = int("hasBiasVectors") == 1
    // Inputs past the first are the initial states (h, and c for an LSTM). The IR's recurrent layers start
    // from zeros, which is what Core ML uses when an optional state input is not given.
    for name in layer.inputs.dropFirst() {
      guard let feature = spec.inputs.first(where: { $0.name == name }), feature.isOptional else {
        let what = spec.inputs.contains { $0.name == name } ? "a required model input" : "computed by another layer"
        throw unsupported("its initial state '\(name)' is \(what); only optional state inputs (read as zeros) are supported")
      }
      zeroStateInputs.insert(name)
    }

    /// Core ML's per-gate `[units, inputs]` matrices as the IR's `[inputs, gates * units]` kernel.
    func kernel(_ prefix: String, _ matrix: String, rows: Int) throws -> Constant {
      var values = [Float](repeating: 0, count: rows * gates.count * units)
      for (g, gate) in gates.enumerated() {
        let stored = try weights(layer, prefix + matrix + "_" + gate, count: units * rows)
        for u in 0..<units { for row in 0..<rows { values[row * gates.count * units + g * units + u] = stored[u * rows + row] } }
      }
      return Constant(shape: [rows, gates.count * units], values: values)
    }
    func direction(_ prefix: String) throws -> Recurrent.Weights {
      let bias = hasBias ? Constant(shape: [gates.count * units], values: try gates.flatMap { try weights(layer, prefix + "b_" + $0, count: units) }) : nil
      return .init(kernel: try kernel(prefix, "W", rows: inputs), recurrentKernel: try kernel(prefix, "R", rows: units), bias: bias)
    }

    let returnSequences = int("sequenceOutput") == 1
    let reversed = int("reverseInput") == 1
    if reversed && returnSequences { throw unsupported("reverseInput with sequence output") }
    let recurrent = Recurrent(
      cell: cell, units: units, activation: activations.count > 1 ? activations[1] : activations[0],
      recurrentActivation: cell == .simple ? .sigmoid : activations[0], forward: try direction(""),
      backward: layer.kind == "biDirectionalLSTM" ? try direction("backward.") : nil, merge: .concat,
      returnSequences: returnSequences, goBackwards: reversed)
    let sequence = try reshape(x, to: [steps, channels])
    let result = try add(.recurrent(recurrent), [sequence])
    let out = shape(result)
    let output = try reshape(result, to: out.count == 2 ? [out[0], out[1], 1, 1] : [1, out[0], 1, 1])
    if layer.kind == "biDirectionalLSTM" || layer.outputs.count < 2 { return [output] }
    // The final hidden state: the output itself, or the sequence's last step.
    guard returnSequences else { return [output, output] }
    if out[0] == 1 { return [output, try reshape(output, to: [1, out[1], 1, 1])] }
    let last = try add(.slice(StridedSlice(begin: [out[0] - 1, 0], end: out, strides: [1, 1])), [result], suffix: "__last_step")
    return [output, try reshape(last, to: [1, out[1], 1, 1])]
  }

  /// A recurrent layer's activation from its oneof field number and parameters.
  func activation(field: Int, layer: CoreMLModelSpec.Layer, index: Int) throws -> Activation {
    let alpha = layer.floats["activation\(index).alpha"] ?? 0, beta = layer.floats["activation\(index).beta"] ?? 0
    switch field {
    case 40: return .sigmoid
    case 30: return .tanh
    case 10: return .relu
    case 41: return .hardSigmoid(slope: alpha, offset: beta)
    case 5: return .linear(scale: alpha, offset: beta)
    default: throw unsupported("recurrent activation with field number \(field)")
    }
  }
}
