import CProtobufC
import CoreMLSpec
import ModelIR

/// Keras' default GRU (`reset_after=True`) unrolled over its fixed number of steps.
///
/// Core ML's `gru` layer applies the reset gate before the recurrent product (`reset_after=False`),
/// so this form is written step by step from classic layers instead:
///
///     z = σ(x·Wz + bz + h·Uz + b'z)      r = σ(x·Wr + br + h·Ur + b'r)
///     ĥ = tanh(x·Wh + bh + r ⊙ (h·Uh + b'h))      h ← ĥ + z ⊙ (h − ĥ)
///
/// The model then takes exactly the number of steps the Keras model was built for.
extension CoreMLLayerEmitter {
  mutating func emitUnrolledGRU(_ r: Recurrent, name: String, input: String, output: String, inputShape: [Int]) throws {
    guard let backward = r.backward else {
      let states = try unrolledGRUStates(r, r.forward, reversed: r.goBackwards, name: name, input: input, inputShape: inputShape)
      try emitSequence(r.returnSequences ? states : [states.last!], name: name, output: output)
      return
    }
    // Bidirectional: the backward pass runs last step first; Keras puts its outputs back in time order.
    let forward = try unrolledGRUStates(r, r.forward, reversed: false, name: name + "__forward", input: input, inputShape: inputShape)
    let backwardStates = try unrolledGRUStates(r, backward, reversed: true, name: name + "__backward", input: input, inputShape: inputShape)
    let halves = [blob(name, "forward_all"), blob(name, "backward_all")]
    try emitSequence(r.returnSequences ? forward : [forward.last!], name: name + "__forward_all__", output: halves[0])
    try emitSequence(r.returnSequences ? backwardStates.reversed() : [backwardStates.last!], name: name + "__backward_all__", output: halves[1])
    let merged = layer(name, inputs: halves, output: output)
    switch r.merge {
    case .concat:
      merged.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT
      merged.pointee.concat = arena.message(core_ml__specification__concat_layer_params__init)
    case .sum:
      merged.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD
      merged.pointee.add = arena.message(core_ml__specification__add_layer_params__init)
    case .mul:
      merged.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY
      merged.pointee.multiply = arena.message(core_ml__specification__multiply_layer_params__init)
    case .ave:
      merged.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_AVERAGE
      merged.pointee.average = arena.message(core_ml__specification__average_layer_params__init)
    }
  }

  private func blob(_ name: String, _ suffix: String) -> String { "\(name)__\(suffix)__output" }

  /// Joins per-step blobs along the sequence axis (a single blob is copied by an identity activation).
  private mutating func emitSequence(_ states: [String], name: String, output: String) throws {
    guard states.count > 1 else {
      try emitActivation(.identity, name: name, input: states[0], output: output, shape: [])
      return
    }
    let joined = layer(name, inputs: states, output: output)
    joined.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT
    joined.pointee.concat = arena.message(core_ml__specification__concat_layer_params__init)
    joined.pointee.concat.pointee.sequenceconcat = 1
  }

  /// The state blob after every step, in processing order.
  private mutating func unrolledGRUStates(
    _ r: Recurrent, _ w: Recurrent.Weights, reversed: Bool, name: String, input: String, inputShape: [Int]
  ) throws -> [String] {
    let (steps, inputs, units) = (inputShape[0], inputShape[1], r.units)
    let width = 3 * units
    let bias = w.bias?.values ?? [Float](repeating: 0, count: 2 * width)
    func blob(_ suffix: String) -> String { self.blob(name, suffix) }

    // Input projections for every step at once, then time moved into W so steps can be sliced out.
    try emitInnerProduct(
      name: "\(name)__projection__", input: input, output: blob("projection"),
      weights: Self.transposed(w.kernel.values, rows: inputs, columns: width), bias: Array(bias.prefix(width)), inputs: inputs, outputs: width)
    emitPermute(Self.sequenceToRow, name: "\(name)__row__", input: blob("projection"), output: blob("row"))

    var state: String?
    var states: [String] = []
    for step in 0..<steps {
      let t = reversed ? steps - 1 - step : step
      let prefix = "s\(step)_"
      emitSlice(name: "\(name)__\(prefix)x__", input: blob("row"), output: blob(prefix + "x"), axis: .width, range: t..<t + 1)
      // The recurrent product; from a zero state it is just the recurrent bias.
      if let state {
        try emitInnerProduct(
          name: "\(name)__\(prefix)inner__", input: state, output: blob(prefix + "inner"),
          weights: Self.transposed(w.recurrentKernel.values, rows: units, columns: width), bias: Array(bias.suffix(width)), inputs: units,
          outputs: width)
      } else {
        try emitConstant(name: "\(name)__\(prefix)inner__", output: blob(prefix + "inner"), values: Array(bias.suffix(width)))
      }
      var parts: [String: (x: String, inner: String)] = [:]
      for (gate, label) in ["z", "r", "h"].enumerated() {
        emitSlice(name: "\(name)__\(prefix)x\(label)__", input: blob(prefix + "x"), output: blob(prefix + "x" + label), axis: .channel, range: gate * units..<(gate + 1) * units)
        emitSlice(
          name: "\(name)__\(prefix)i\(label)__", input: blob(prefix + "inner"), output: blob(prefix + "i" + label), axis: .channel,
          range: gate * units..<(gate + 1) * units)
        parts[label] = (blob(prefix + "x" + label), blob(prefix + "i" + label))
      }
      for gate in ["z", "r"] {
        emitBinary(.add, name: "\(name)__\(prefix)\(gate)sum__", inputs: [parts[gate]!.x, parts[gate]!.inner], output: blob(prefix + gate + "sum"))
        try emitActivation(r.recurrentActivation, name: "\(name)__\(prefix)\(gate)__", input: blob(prefix + gate + "sum"), output: blob(prefix + gate), shape: [units])
      }
      emitBinary(.multiply, name: "\(name)__\(prefix)reset__", inputs: [blob(prefix + "r"), parts["h"]!.inner], output: blob(prefix + "reset"))
      emitBinary(.add, name: "\(name)__\(prefix)hsum__", inputs: [parts["h"]!.x, blob(prefix + "reset")], output: blob(prefix + "hsum"))
      try emitActivation(r.activation, name: "\(name)__\(prefix)candidate__", input: blob(prefix + "hsum"), output: blob(prefix + "candidate"), shape: [units])
      // h = ĥ + z ⊙ (h − ĥ), with h − ĥ = −ĥ from the zero state.
      try emitActivation(
        .linear(scale: -1, offset: 0), name: "\(name)__\(prefix)negated__", input: blob(prefix + "candidate"), output: blob(prefix + "negated"),
        shape: [units])
      var difference = blob(prefix + "negated")
      if let state {
        emitBinary(.add, name: "\(name)__\(prefix)difference__", inputs: [state, blob(prefix + "negated")], output: blob(prefix + "difference"))
        difference = blob(prefix + "difference")
      }
      emitBinary(.multiply, name: "\(name)__\(prefix)kept__", inputs: [blob(prefix + "z"), difference], output: blob(prefix + "kept"))
      let next = blob(prefix + "h")
      emitBinary(.add, name: "\(name)__\(prefix)h__", inputs: [blob(prefix + "candidate"), blob(prefix + "kept")], output: next)
      state = next
      states.append(next)
    }
    return states
  }

  enum SliceAxis { case channel, width }

  mutating func emitSlice(name: String, input: String, output: String, axis: SliceAxis, range: Range<Int>) {
    let params = arena.message(core_ml__specification__slice_layer_params__init)
    params.pointee.startindex = Int64(range.lowerBound)
    params.pointee.endindex = Int64(range.upperBound)
    params.pointee.stride = 1
    params.pointee.axis =
      axis == .channel ? CORE_ML__SPECIFICATION__SLICE_LAYER_PARAMS__SLICE_AXIS__CHANNEL_AXIS : CORE_ML__SPECIFICATION__SLICE_LAYER_PARAMS__SLICE_AXIS__WIDTH_AXIS
    let added = layer(name, inputs: [input], output: output)
    added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE
    added.pointee.slice = params
  }

  /// A `[values.count, 1, 1]` constant blob.
  mutating func emitConstant(name: String, output: String, values: [Float]) throws {
    let params = arena.message(core_ml__specification__load_constant_layer_params__init)
    params.pointee.n_shape = 3
    params.pointee.shape = uint64s([values.count, 1, 1])
    params.pointee.data = try weights(values, layer: name)
    let added = layer(name, inputs: [], output: output)
    added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT
    added.pointee.loadconstant = params
  }

  /// `weights` is Core ML's `[outputs, inputs]`.
  mutating func emitInnerProduct(name: String, input: String, output: String, weights values: [Float], bias: [Float], inputs: Int, outputs: Int) throws {
    let params = arena.message(core_ml__specification__inner_product_layer_params__init)
    params.pointee.inputchannels = UInt64(inputs)
    params.pointee.outputchannels = UInt64(outputs)
    params.pointee.weights = try weights(values, layer: name)
    params.pointee.hasbias = 1
    params.pointee.bias = try weights(bias, layer: name)
    let added = layer(name, inputs: [input], output: output)
    added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_INNER_PRODUCT
    added.pointee.innerproduct = params
  }

  enum BinaryKind { case add, multiply }

  mutating func emitBinary(_ kind: BinaryKind, name: String, inputs: [String], output: String) {
    let added = layer(name, inputs: inputs, output: output)
    switch kind {
    case .add:
      added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD
      added.pointee.add = arena.message(core_ml__specification__add_layer_params__init)
    case .multiply:
      added.pointee.layer_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY
      added.pointee.multiply = arena.message(core_ml__specification__multiply_layer_params__init)
    }
  }
}
