import CoreMLCommon
import ModelIR

/// Recurrent layers as MIL's own `lstm`, `gru` and `rnn` operations, where those compute the IR's
/// formula exactly (what coremltools writes for Keras' LSTM): a forward layer, a reversed one that
/// returns only its last state, or a bidirectional LSTM joined by concatenation, with activations MIL
/// names. Everything else is unrolled (`MILEmitter+Recurrent.swift`).
///
/// MIL orders gates LSTM `input, forget, output, cell` and GRU `reset, output (candidate), update`;
/// weights are `[gates * units, columns]`. MIL's `gru` adds its single bias outside the reset gate: the
/// IR's reset-after GRU whose recurrent candidate bias is zero (the other recurrent biases simply add).
extension MILEmitter {
  /// Emits `recurrent` as one MIL operation and returns true, or returns false (nothing emitted) when
  /// MIL's operation would compute something else.
  mutating func emitFusedRecurrent(_ node: Node, _ recurrent: Recurrent) throws -> Bool {
    guard let plan = FusedRecurrentPlan(recurrent) else { return false }
    let x = try tensor(node.inputs[0], .natural)
    let (steps, columns) = (x.shape[1], x.shape[2])
    let computed = x.dataType
    // Before iOS 17 the operation takes float32 only: a float16 program casts around it.
    let dt: MILElementType = computed == .fp16 && !recurrentTakesFloat16 ? .fp32 : computed
    func cast(_ value: MILTensor, _ suffix: String) throws -> MILTensor {
      guard value.dataType != dt else { return value }
      return try op(
        "cast", [("x", .tensor(value)), ("dtype", .string(dt.castName))], temporary(node.output, suffix), dt,
        value.shape)
    }
    let width = plan.directions * recurrent.units
    let sequence = try op(
      "reshape", [("x", .tensor(try cast(x, "fp32"))), ("shape", .ints([steps, 1, columns]))],
      temporary(node.output, "steps"), dt, [steps, 1, columns])
    // The initial states: the node's state inputs (`[1, units]` tensors, a single direction), else zeros.
    let zeros = [Float](repeating: 0, count: width)
    func initial(_ index: Int) throws -> MILParam {
      node.inputs.count > index
        ? .tensor(try cast(try tensor(node.inputs[index], .natural), "state\(index)_fp32"))
        : .floats(zeros, shape: [1, width], dt)
    }
    var params: [(String, MILParam)] = [("x", .tensor(sequence)), ("initial_h", try initial(1))]
    if plan.type == "lstm" { params.append(("initial_c", try initial(2))) }
    let directions = [(recurrent.forward, "")] + (recurrent.backward.map { [($0, "_back")] } ?? [])
    for (weights, suffix) in directions {
      let (ih, hh, bias) = plan.milWeights(weights, units: recurrent.units, columns: columns)
      params += [
        ("weight_ih" + suffix, .floats(ih, shape: [plan.gates * recurrent.units, columns], dt)),
        ("weight_hh" + suffix, .floats(hh, shape: [plan.gates * recurrent.units, recurrent.units], dt)),
        ("bias" + suffix, .floats(bias, shape: [plan.gates * recurrent.units], dt)),
      ]
    }
    params += [("direction", .string(plan.direction)), ("output_sequence", .bool(recurrent.returnSequences))]
    params += plan.activations.map { ($0.key, MILParam.string($0.name)) }
    let outputSteps = recurrent.returnSequences ? steps : 1
    var outputs: [(dataType: MILElementType, shape: [Int])] = [(dt, [outputSteps, 1, width]), (dt, [1, width])]
    if plan.type == "lstm" { outputs.append((dt, [1, width])) }
    let results = try builder.op(plan.type, params, name: temporary(node.output, plan.type).name, outputs: outputs)
    let shape = MILLayout.natural.shape(graph[node.output].type.shape)
    // lstm's outputs: the sequence (or last step), the final hidden state, the final cell state.
    let picked = recurrent.returnsCellState ? 2 : recurrent.returnSequences ? 0 : 1
    guard dt != computed else {
      let final = resultName(node.output, layout: .natural, dataType: dt)
      define(
        node.output, .natural,
        try op("reshape", [("x", .tensor(results[picked])), ("shape", .ints(shape))], final, dt, shape))
      return true
    }
    let reshaped = try op(
      "reshape", [("x", .tensor(results[picked])), ("shape", .ints(shape))], temporary(node.output, "fp32_out"), dt,
      shape)
    define(
      node.output, .natural,
      try op(
        "cast", [("x", .tensor(reshaped)), ("dtype", .string(computed.castName))],
        resultName(node.output, layout: .natural, dataType: computed), computed, shape))
    return true
  }
}

/// What MIL operation (and parameters) computes a recurrent layer exactly, if one does.
struct FusedRecurrentPlan {
  var type: String
  var direction: String
  var directions: Int
  var gates: Int
  /// For IR gate `k`, the MIL gate it becomes.
  var milGate: [Int]
  var activations: [(key: String, name: String)]
  var cell: Recurrent.Cell

  init?(_ r: Recurrent) {
    /// MIL's names for the activations its recurrent operations take (with their default parameters).
    func name(_ activation: Activation) -> String? {
      switch activation {
      case .sigmoid: return "sigmoid"
      case .tanh: return "tanh"
      case .relu: return "relu"
      case .hardSigmoid(let slope, let offset) where slope == 0.2 && offset == 0.5: return "sigmoid_hard"
      default: return nil
      }
    }
    guard let output = name(r.activation) else { return nil }
    cell = r.cell
    gates = r.cell.gates
    switch r.cell {
    case .lstm:
      guard let gate = name(r.recurrentActivation) else { return nil }
      (type, milGate) = ("lstm", [0, 1, 3, 2])
      activations = [("recurrent_activation", gate), ("cell_activation", output), ("activation", output)]
    case .gru(resetAfter: true):
      guard let gate = name(r.recurrentActivation) else { return nil }
      // IR z, r, h -> MIL update (2), reset (0), candidate (1).
      (type, milGate) = ("gru", [2, 0, 1])
      activations = [("recurrent_activation", gate), ("activation", output)]
      // MIL has no recurrent bias on the candidate.
      for weights in [r.forward] + (r.backward.map { [$0] } ?? []) {
        if let bias = weights.bias, bias.values[(5 * r.units)..<(6 * r.units)].contains(where: { $0 != 0 }) {
          return nil
        }
      }
    case .gru(resetAfter: false): return nil
    case .simple:
      (type, milGate) = ("rnn", [0])
      activations = [("activation", output)]
    }
    switch (r.backward != nil, r.goBackwards, r.returnSequences) {
    case (false, false, _): (direction, directions) = ("forward", 1)
    // A reversed layer's sequence comes out in processing order in the IR; MIL does not say which.
    case (false, true, false): (direction, directions) = ("reverse", 1)
    case (true, _, _) where type == "lstm" && r.merge == .concat: (direction, directions) = ("bidirectional", 2)
    default: return nil
    }
  }

  /// One direction's weights in MIL's layout and gate order: `weight_ih`, `weight_hh` and the bias.
  func milWeights(_ w: Recurrent.Weights, units: Int, columns: Int) -> (ih: [Float], hh: [Float], bias: [Float]) {
    func matrix(_ kernel: [Float], columns: Int) -> [Float] {
      // The IR's [columns, gates * units] to MIL's [gates * units, columns].
      var result = [Float](repeating: 0, count: kernel.count)
      for k in 0..<gates {
        for u in 0..<units {
          for c in 0..<columns {
            result[(milGate[k] * units + u) * columns + c] = kernel[c * gates * units + k * units + u]
          }
        }
      }
      return result
    }
    let width = gates * units
    var irBias = w.bias.map { Array($0.values[0..<width]) } ?? [Float](repeating: 0, count: width)
    if case .gru = cell, let bias = w.bias, bias.count == 2 * width {
      // The update and reset gates' recurrent biases add to their input biases.
      for i in 0..<(2 * units) { irBias[i] += bias.values[width + i] }
    }
    var bias = [Float](repeating: 0, count: width)
    for k in 0..<gates { for u in 0..<units { bias[milGate[k] * units + u] = irBias[k * units + u] } }
    return (matrix(w.kernel.values, columns: columns), matrix(w.recurrentKernel.values, columns: units), bias)
  }
}
