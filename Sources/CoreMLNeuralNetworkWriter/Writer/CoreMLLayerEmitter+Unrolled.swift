import CoreMLCommon
import ModelIR

/// Recurrent layers unrolled over their fixed number of steps, from classic layers.
///
/// Core ML's recurrent layers cover most Keras ones, but not Keras' default GRU (`reset_after=True`:
/// Core ML's `gru` applies the reset gate before the recurrent product), nor sequences read backwards
/// (Keras returns them in processing order) or bidirectional GRU and SimpleRNN sequences. Those are
/// written step by step: the input projection for all steps at once, then per step a `slice` of it,
/// the recurrent `innerProduct`, the gates and the state update. For GRU with `reset_after=True`:
///
///     z = σ(x·Wz + bz + h·Uz + b'z)      r = σ(x·Wr + br + h·Ur + b'r)
///     ĥ = tanh(x·Wh + bh + r ⊙ (h·Uh + b'h))      h ← ĥ + z ⊙ (h − ĥ)
///
/// The model then takes exactly the number of steps the Keras model was built for.
extension CoreMLLayerEmitter {
  /// Whether Core ML's own recurrent layer cannot express `r`, so it must be unrolled.
  static func needsUnrolling(_ r: Recurrent) -> Bool {
    // Unrolled steps use standalone `activation` layers, which take any activation and any hard-sigmoid alpha/beta.
    if !recurrentLayerComputes(r.activation) || !recurrentLayerComputes(r.recurrentActivation) { return true }
    if r.cell == .gru(resetAfter: true) { return true }
    if r.goBackwards && r.returnSequences { return true }
    return r.backward != nil && r.returnSequences && r.cell != .lstm
  }

  /// Whether Core ML's recurrent layers compute `activation` exactly as written: only linear, sigmoid, tanh, ReLU
  /// and hard sigmoid with alpha 0.2 / beta 0.5 ([rule RNN-ACTIVATIONS] and [rule RNN-SIGMOID-HARD] in
  /// Schemas/NeuralNetwork.proto). Keras 3's hard_sigmoid (slope 1/6) is not among them.
  static func recurrentLayerComputes(_ activation: Activation) -> Bool {
    switch activation {
    case .sigmoid, .tanh, .relu, .linear: return true
    case .hardSigmoid(let slope, let offset): return slope == 0.2 && offset == 0.5
    default: return false
    }
  }

  /// `initial`: a single direction's initial state blobs (h, and c for an LSTM); zeros without.
  mutating func emitUnrolled(
    _ r: Recurrent, name: String, input: String, initial: [String] = [], output: String, inputShape: [Int]
  ) throws {
    // Every step is several layers: the step count is limited so conversion stays within memory.
    guard let steps = inputShape.first, steps <= GraphLimits.maxUnrolledSteps else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: name,
        detail:
          "this recurrent layer is written step by step, and its \(inputShape.first ?? 0) steps are more than the limit of \(GraphLimits.maxUnrolledSteps)"
      )
    }
    guard let backward = r.backward else {
      let states = try unrolledStates(
        r, r.forward, reversed: r.goBackwards, name: name, input: input, initial: initial, inputShape: inputShape)
      try emitSequence(r.returnSequences ? states : [states.last!], name: name, output: output)
      return
    }
    // Bidirectional: the backward pass runs last step first; Keras puts its outputs back in time order.
    let forward = try unrolledStates(
      r, r.forward, reversed: false, name: name + "__forward", input: input, inputShape: inputShape)
    let backwardStates = try unrolledStates(
      r, backward, reversed: true, name: name + "__backward", input: input, inputShape: inputShape)
    let halves = [blob(name, "forward_all"), blob(name, "backward_all")]
    try emitSequence(r.returnSequences ? forward : [forward.last!], name: name + "__forward_all__", output: halves[0])
    try emitSequence(
      r.returnSequences ? backwardStates.reversed() : [backwardStates.last!], name: name + "__backward_all__",
      output: halves[1])
    try emitMerge(r.merge, name: name, inputs: halves, output: output)
  }

  private func blob(_ name: String, _ suffix: String) -> String { "\(name)__\(suffix)__output" }

  /// Joins per-step blobs along the sequence axis (a single blob is copied by an identity activation).
  private mutating func emitSequence(_ states: [String], name: String, output: String) throws {
    guard states.count > 1 else {
      try emitActivation(.identity, name: name, input: states[0], output: output, shape: [])
      return
    }
    builder.concat(name, inputs: states, output: output, sequence: true)
  }

  /// Core ML `[columns.count, rows]` weights for some columns of a Keras `[rows, width]` matrix.
  private static func columns(_ matrix: Constant, _ columns: Range<Int>) -> [Float] {
    let (rows, width) = (matrix.shape[0], matrix.shape[1])
    var result: [Float] = []
    result.reserveCapacity(rows * columns.count)
    for column in columns { for row in 0..<rows { result.append(matrix.values[row * width + column]) } }
    return result
  }

  /// The state blob after every step, in processing order.
  private mutating func unrolledStates(
    _ r: Recurrent, _ w: Recurrent.Weights, reversed: Bool, name: String, input: String, initial: [String] = [],
    inputShape: [Int]
  ) throws -> [String] {
    let (steps, inputs, units) = (inputShape[0], inputShape[1], r.units)
    let width = r.cell.gates * units
    let resetAfter = r.cell == .gru(resetAfter: true)
    let bias = w.bias?.values ?? [Float](repeating: 0, count: resetAfter ? 2 * width : width)
    let zeros = [Float](repeating: 0, count: width)
    func blob(_ suffix: String) -> String { self.blob(name, suffix) }
    func part(_ source: String, _ gate: Int, _ label: String, _ prefix: String) -> String {
      emitSlice(
        name: "\(name)__\(prefix)\(label)__", input: source, output: blob(prefix + label), axis: .channel,
        range: gate * units..<(gate + 1) * units)
      return blob(prefix + label)
    }
    func activate(_ activation: Activation, _ source: String, _ label: String, _ prefix: String) throws -> String {
      try emitActivation(
        activation, name: "\(name)__\(prefix)\(label)__", input: source, output: blob(prefix + label), shape: [units])
      return blob(prefix + label)
    }
    func combine(_ kind: ElementwiseKind, _ inputs: [String], _ label: String, _ prefix: String) throws -> String {
      try emitElementwise(kind, name: "\(name)__\(prefix)\(label)__", inputs: inputs, output: blob(prefix + label))
      return blob(prefix + label)
    }
    /// `state · U[:, columns]` (+ `bias`), or nil from the zero state.
    func recurrent(_ state: String?, _ columns: Range<Int>, bias: [Float]?, _ label: String, _ prefix: String) throws
      -> String?
    {
      guard let state else { return nil }
      try emitInnerProduct(
        name: "\(name)__\(prefix)\(label)__", input: state, output: blob(prefix + label),
        weights: Self.columns(w.recurrentKernel, columns),
        bias: bias ?? Array(zeros.prefix(columns.count)), inputs: units, outputs: columns.count)
      return blob(prefix + label)
    }

    // Input projections for every step at once, then time moved into W so steps can be sliced out.
    try emitInnerProduct(
      name: "\(name)__projection__", input: input, output: blob("projection"),
      weights: Matrix.transposed(w.kernel.values, rows: inputs, columns: width), bias: Array(bias.prefix(width)),
      inputs: inputs, outputs: width)
    emitPermute(Self.sequenceToRow, name: "\(name)__row__", input: blob("projection"), output: blob("row"))

    // nil stands for the zero state.
    var state: String? = initial.first
    var cell: String? = initial.count > 1 ? initial[1] : nil
    var states: [String] = []
    for step in 0..<steps {
      let t = reversed ? steps - 1 - step : step
      let p = "s\(step)_"
      emitSlice(name: "\(name)__\(p)x__", input: blob("row"), output: blob(p + "x"), axis: .width, range: t..<t + 1)
      let x = blob(p + "x")
      switch r.cell {
      case .simple:
        let sum =
          try recurrent(state, 0..<units, bias: nil, "inner", p).map { try combine(.add, [x, $0], "sum", p) } ?? x
        state = try activate(r.activation, sum, "h", p)

      case .lstm:
        let sum =
          try recurrent(state, 0..<width, bias: nil, "inner", p).map { try combine(.add, [x, $0], "sum", p) } ?? x
        let i = try activate(r.recurrentActivation, part(sum, 0, "ipre", p), "i", p)
        let f = try activate(r.recurrentActivation, part(sum, 1, "fpre", p), "f", p)
        let g = try activate(r.activation, part(sum, 2, "gpre", p), "g", p)
        let o = try activate(r.recurrentActivation, part(sum, 3, "opre", p), "o", p)
        let written = try combine(.multiply, [i, g], "written", p)
        let next =
          try cell.map { try combine(.add, [try combine(.multiply, [f, $0], "kept", p), written], "c", p) } ?? written
        cell = next
        state = try combine(.multiply, [o, try activate(r.activation, next, "cact", p)], "h", p)

      case .gru:
        let (xz, xr, xh) = (part(x, 0, "xz", p), part(x, 1, "xr", p), part(x, 2, "xh", p))
        var z: String
        var candidateSum: String
        if resetAfter {
          // From the zero state the recurrent product is just the recurrent bias.
          let inner: String
          if let product = try recurrent(state, 0..<width, bias: Array(bias.suffix(width)), "inner", p) {
            inner = product
          } else {
            try emitConstant(name: "\(name)__\(p)inner__", output: blob(p + "inner"), values: Array(bias.suffix(width)))
            inner = blob(p + "inner")
          }
          z = try activate(r.recurrentActivation, try combine(.add, [xz, part(inner, 0, "iz", p)], "zsum", p), "z", p)
          let reset = try activate(
            r.recurrentActivation, try combine(.add, [xr, part(inner, 1, "ir", p)], "rsum", p), "r", p)
          candidateSum = try combine(
            .add, [xh, try combine(.multiply, [reset, part(inner, 2, "ih", p)], "reset", p)], "hsum", p)
        } else if let gates = try recurrent(state, 0..<2 * units, bias: nil, "gates", p), let previous = state {
          z = try activate(r.recurrentActivation, try combine(.add, [xz, part(gates, 0, "iz", p)], "zsum", p), "z", p)
          let reset = try activate(
            r.recurrentActivation, try combine(.add, [xr, part(gates, 1, "ir", p)], "rsum", p), "r", p)
          let resetState = try combine(.multiply, [reset, previous], "resetstate", p)
          let inner = try recurrent(resetState, 2 * units..<width, bias: nil, "ih", p)!
          candidateSum = try combine(.add, [xh, inner], "hsum", p)
        } else {
          z = try activate(r.recurrentActivation, xz, "z", p)
          candidateSum = xh
        }
        let candidate = try activate(r.activation, candidateSum, "candidate", p)
        // h = ĥ + z ⊙ (h − ĥ), with h − ĥ = −ĥ from the zero state.
        let difference =
          try state.map { try combine(.subtract, [$0, candidate], "difference", p) }
          ?? activate(.linear(scale: -1, offset: 0), candidate, "negated", p)
        state = try combine(.add, [candidate, try combine(.multiply, [z, difference], "kept", p)], "h", p)
      }
      states.append(state!)
    }
    return states
  }

  mutating func emitSlice(name: String, input: String, output: String, axis: NeuralNetworkSliceAxis, range: Range<Int>)
  {
    builder.slice(name, input: input, output: output, axis: axis, range: range)
  }

  /// A `[values.count, 1, 1]` constant blob.
  mutating func emitConstant(name: String, output: String, values: [Float]) throws {
    try builder.loadConstant(name, output: output, shape: [values.count, 1, 1], values: .values(values))
  }

  /// `weights` is Core ML's `[outputs, inputs]`.
  mutating func emitInnerProduct(
    name: String, input: String, output: String, weights values: [Float], bias: [Float], inputs: Int, outputs: Int
  ) throws {
    try builder.innerProduct(
      name, input: input, output: output, inputChannels: inputs, outputChannels: outputs, weights: .values(values),
      bias: .values(bias))
  }
}
