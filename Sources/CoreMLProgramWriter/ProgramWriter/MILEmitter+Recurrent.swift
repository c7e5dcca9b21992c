import CoreMLCommon
import ModelIR

/// Recurrent layers, unrolled over the time steps from linear, slice, activation and elementwise
/// operations with Keras' exact formulas (gate orders LSTM i, f, c, o and GRU z, r, h; either GRU reset
/// rule; any activation pair). MIL's `lstm`/`gru`/`rnn` are not used: their GRU is the reset-before
/// formula only, and they fix the choice of activations.
extension MILEmitter {
  mutating func emitRecurrent(_ node: Node, _ recurrent: Recurrent) throws {
    if try emitFusedRecurrent(node, recurrent) { return }
    if recurrent.returnsCellState {
      throw CoreMLWriterError.unsupportedOperation(
        layer: node.origin?.name ?? node.name,
        detail: "an LSTM cell state of a layer written step by step (activations MIL's lstm does not name)")
    }
    let x = try tensor(node.inputs[0], .natural)
    let steps = graph[node.inputs[0]].type.shape[0]
    // Every step is several operations: the classic writer's limit on unrolled steps holds here too.
    guard steps <= GraphLimits.maxUnrolledSteps else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: node.origin?.name ?? node.name,
        detail:
          "this recurrent layer is written step by step, and its \(steps) steps are more than the limit of \(GraphLimits.maxUnrolledSteps)"
      )
    }
    let directions: [(weights: Recurrent.Weights, reversed: Bool, tag: String)] =
      [(recurrent.forward, recurrent.goBackwards, "fw")] + (recurrent.backward.map { [($0, true, "bw")] } ?? [])
    var results: [MILTensor] = []
    for direction in directions {
      // A single direction may start from the node's state inputs (h, and c for an LSTM).
      let initial = try node.inputs.dropFirst().map { try tensor($0, .natural) }
      results.append(
        try unroll(
          recurrent, direction.weights, x: x, steps: steps, reversed: direction.reversed, tag: direction.tag,
          output: node.output,
          timeOrder: direction.tag == "bw", initial: initial))
    }
    let dt = x.dataType
    let shape = MILLayout.natural.shape(graph[node.output].type.shape)
    let final = resultName(node.output, layout: .natural, dataType: dt)
    let result: MILTensor
    if results.count == 1 {
      result = try op("identity", [("x", .tensor(results[0]))], final, dt, shape)
    } else {
      switch recurrent.merge {
      case .concat:
        result = try op(
          "concat", [("values", .tensors(results)), ("axis", .int(shape.count - 1)), ("interleave", .bool(false))],
          final, dt, shape)
      case .sum: result = try op("add", [("x", .tensor(results[0])), ("y", .tensor(results[1]))], final, dt, shape)
      case .mul: result = try op("mul", [("x", .tensor(results[0])), ("y", .tensor(results[1]))], final, dt, shape)
      case .ave:
        let sum = try op(
          "add", [("x", .tensor(results[0])), ("y", .tensor(results[1]))], temporary(node.output, "sum"), dt, shape)
        result = try op("mul", [("x", .tensor(sum)), ("y", .scalar(0.5, dt))], final, dt, shape)
      }
    }
    define(node.output, .natural, result)
  }

  /// One direction: the `[1, T, units]` states (in processing order, or time order when `timeOrder`)
  /// with `returnSequences`, else the last state `[1, units]`.
  private func unroll(
    _ r: Recurrent, _ w: Recurrent.Weights, x: MILTensor, steps: Int, reversed: Bool, tag: String, output: ValueID,
    timeOrder: Bool,
    initial: [MILTensor] = []
  ) throws -> MILTensor {
    let dt = x.dataType
    let units = r.units
    let gates = r.cell.gates
    let width = gates * units
    let inputWidth = w.kernel.shape[0]
    func name(_ suffix: String) -> MILName { temporary(output, "\(tag)_\(suffix)") }
    // Input projection for all steps at once: x · W + b_input.
    var inputBias = [Float](repeating: 0, count: width)
    var recurrentBias: [Float]?
    if let bias = w.bias {
      inputBias = Array(bias.values[0..<width])
      if case .gru(resetAfter: true) = r.cell { recurrentBias = Array(bias.values[width..<(2 * width)]) }
    }
    let projected = try op(
      "linear",
      [
        ("x", .tensor(x)),
        (
          "weight",
          .floats(Matrix.transposed(w.kernel.values, rows: inputWidth, columns: width), shape: [width, inputWidth], dt)
        ),
        ("bias", .floats(inputBias, shape: [width], dt)),
      ],
      name("input"), dt, [1, steps, width])
    // Recurrent kernel as linear weights [gates * units, units]; GRU's candidate part is applied separately.
    let recurrentWeights = Matrix.transposed(w.recurrentKernel.values, rows: units, columns: width)
    let recurrentWeight = try builder.const(
      recurrentWeights, shape: [width, units], dt, name: name("recurrent_weight").name)
    let zeros = try builder.const([Float](repeating: 0, count: units), shape: [1, units], dt, name: name("zeros").name)
    var h = initial.first ?? zeros
    var c = initial.count > 1 ? initial[1] : zeros
    var states: [MILTensor] = []
    func slice(_ t: MILTensor, _ from: Int, _ to: Int, _ suffix: String) throws -> MILTensor {
      try op(
        "slice_by_index", [("x", .tensor(t)), ("begin", .ints([0, from])), ("end", .ints([1, to]))], name(suffix), dt,
        [1, to - from])
    }
    func binary(_ type: String, _ a: MILTensor, _ b: MILTensor, _ suffix: String) throws -> MILTensor {
      try op(type, [("x", .tensor(a)), ("y", .tensor(b))], name(suffix), dt, a.shape)
    }
    func act(_ a: Activation, _ v: MILTensor, _ suffix: String) throws -> MILTensor {
      try activate(a, v, final: name(suffix), irShape: [units]) { name("\(suffix)_\($0)") }
    }
    let order = reversed ? Array((0..<steps).reversed()) : Array(0..<steps)
    for (index, t) in order.enumerated() {
      let s = "t\(index)"
      let stepSlice = try op(
        "slice_by_index",
        [("x", .tensor(projected)), ("begin", .ints([0, t, 0])), ("end", .ints([1, t + 1, width]))], name("\(s)_xs"),
        dt, [1, 1, width])
      let xt = try op(
        "reshape", [("x", .tensor(stepSlice)), ("shape", .ints([1, width]))], name("\(s)_x"), dt, [1, width])
      var params: [(String, MILParam)] = [("x", .tensor(h)), ("weight", .tensor(recurrentWeight))]
      if let recurrentBias { params.append(("bias", .floats(recurrentBias, shape: [width], dt))) }
      let hr = try op("linear", params, name("\(s)_hr"), dt, [1, width])
      switch r.cell {
      case .simple:
        let sum = try binary("add", xt, hr, "\(s)_sum")
        h = try act(r.activation, sum, "\(s)_h")
      case .lstm:
        let z = try binary("add", xt, hr, "\(s)_z")
        let i = try act(r.recurrentActivation, try slice(z, 0, units, "\(s)_zi"), "\(s)_i")
        let f = try act(r.recurrentActivation, try slice(z, units, 2 * units, "\(s)_zf"), "\(s)_f")
        let g = try act(r.activation, try slice(z, 2 * units, 3 * units, "\(s)_zg"), "\(s)_g")
        let o = try act(r.recurrentActivation, try slice(z, 3 * units, 4 * units, "\(s)_zo"), "\(s)_o")
        c = try binary("add", try binary("mul", f, c, "\(s)_fc"), try binary("mul", i, g, "\(s)_ig"), "\(s)_c")
        h = try binary("mul", o, try act(r.activation, c, "\(s)_ct"), "\(s)_h")
      case .gru(let resetAfter):
        let zr = try binary(
          "add", try slice(xt, 0, 2 * units, "\(s)_xzr"), try slice(hr, 0, 2 * units, "\(s)_hzr"), "\(s)_zr")
        let z = try act(r.recurrentActivation, try slice(zr, 0, units, "\(s)_zz"), "\(s)_u")
        let reset = try act(r.recurrentActivation, try slice(zr, units, 2 * units, "\(s)_zrr"), "\(s)_r")
        let candidateInput = try slice(xt, 2 * units, 3 * units, "\(s)_xh")
        let recurrentPart: MILTensor
        if resetAfter {
          // r * (h · U_h + b_h)
          recurrentPart = try binary("mul", reset, try slice(hr, 2 * units, 3 * units, "\(s)_hh"), "\(s)_rh")
        } else {
          // (r * h) · U_h
          let gated = try binary("mul", reset, h, "\(s)_gated")
          let candidateWeights = Array(recurrentWeights[(2 * units * units)..<(3 * units * units)])
          recurrentPart = try op(
            "linear", [("x", .tensor(gated)), ("weight", .floats(candidateWeights, shape: [units, units], dt))],
            name("\(s)_rh"), dt, [1, units])
        }
        let candidate = try act(r.activation, try binary("add", candidateInput, recurrentPart, "\(s)_hsum"), "\(s)_hc")
        // h = z * h + (1 - z) * candidate = candidate + z * (h - candidate)
        let difference = try binary("sub", h, candidate, "\(s)_diff")
        h = try binary("add", candidate, try binary("mul", z, difference, "\(s)_zd"), "\(s)_h")
      }
      states.append(h)
    }
    guard r.returnSequences else { return h }
    let ordered = timeOrder && reversed ? states.reversed() : states
    return try op(
      "stack", [("values", .tensors(Array(ordered))), ("axis", .int(1))], name("sequence"), dt, [1, steps, units])
  }
}
