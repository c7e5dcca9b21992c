import CoreMLCommon
import ModelIR

extension MILProgramImporter {
  /// `lstm`, `gru` and `rnn` over `x` of shape `[s, 1, I]` as one IR recurrent node; initial states are
  /// zeros, or for a single direction any `[1, units]` tensors (the node's state inputs).
  ///
  /// MIL orders the gates LSTM `input, forget, output, cell` and GRU `reset, output (candidate), update`; the
  /// IR keeps Keras' orders (LSTM `i, f, c, o`, GRU `z, r, h`). MIL's `gru` adds its single bias outside the
  /// reset gate, which is the IR's reset-after GRU with a zero recurrent bias.
  mutating func recurrent() throws {
    let type = operation.type
    let x = try tensor("x")
    let s = shape(x)
    guard s.count == 3, s[1] == 1 else { throw unsupported("x of shape \(s) (a batch of 1, [s, 1, I], is supported)") }
    let direction = try string("direction", "forward")
    guard ["forward", "reverse"].contains(direction) || (type == "lstm" && direction == "bidirectional") else {
      throw invalid("direction '\(direction)' (forward, reverse\(type == "lstm" ? " or bidirectional" : ""))")
    }
    let sequences = try bool("output_sequence", false)
    if direction == "reverse" && sequences { throw unsupported("a reverse direction with output_sequence=True") }
    let directions = direction == "bidirectional" ? 2 : 1
    let weightIH = try requiredConstant("weight_ih")
    guard weightIH.type.shape.count == 2, weightIH.type.shape[1] == s[2] else {
      throw invalid("weight_ih \(weightIH.type.shape) does not fit x \(s)")
    }
    let (cell, order): (Recurrent.Cell, [Int])
    switch type {
    case "lstm": (cell, order) = (.lstm, [0, 1, 3, 2])
    case "gru": (cell, order) = (.gru(resetAfter: true), [2, 0, 1])
    default: (cell, order) = (.simple, [0])
    }
    let gates = cell.gates
    guard weightIH.type.shape[0] % gates == 0, weightIH.type.shape[0] > 0 else {
      throw invalid("weight_ih \(weightIH.type.shape) is not \(gates) gates")
    }
    let units = weightIH.type.shape[0] / gates
    var initialStates: [ValueID] = []
    var givenStates = false
    for key in ["initial_h", "initial_c"] where type == "lstm" || key == "initial_h" {
      // A constant (or a missing parameter, an error) is read as values; anything else is a computed state.
      if isConstant(key) || argument(key) == nil {
        guard let state = try constant(key) else { throw invalid("required parameter '\(key)' is missing") }
        guard state.count == directions * units else {
          throw invalid("\(key) has \(state.count) values, needs \(directions * units)")
        }
        if state.asFloats.allSatisfy({ $0 == 0 }) {
          initialStates.append(try add(.constant(.filled(0, shape: [units])), [], suffix: "__" + key))
          continue
        }
      }
      guard directions == 1 else { throw unsupported("\(key) of a bidirectional layer must be a constant of zeros") }
      let state = try tensor(key)
      guard builder.type(of: state).elementCount == units else {
        throw invalid("\(key) of shape \(shape(state)) is not [1, \(units)]")
      }
      initialStates.append(try reshape(state, to: [units]))
      givenStates = true
    }
    // Zero states are the node's default: only states the program computes become inputs.
    if !givenStates { initialStates = [] }
    if type == "lstm" {
      for key in ["peephole", "peephole_back"] {
        if let peephole = try constant(key), peephole.asFloats.contains(where: { $0 != 0 }) {
          throw unsupported("non-zero \(key)")
        }
      }
      if try constant("clip") != nil { throw unsupported("clip is not supported") }
    }

    /// One direction's weights in the IR's layout and gate order.
    func weights(_ suffix: String) throws -> Recurrent.Weights {
      let ih = try requiredConstant("weight_ih" + suffix)
      let hh = try requiredConstant("weight_hh" + suffix)
      guard ih.type.shape == [gates * units, s[2]], hh.type.shape == [gates * units, units] else {
        throw invalid(
          "weight_ih\(suffix) \(ih.type.shape) / weight_hh\(suffix) \(hh.type.shape) must be [\(gates * units), \(s[2])] / [\(gates * units), \(units)]"
        )
      }
      func reordered(_ matrix: [Float], columns: Int) -> Constant {
        // MIL [gates * units, columns] to the IR's [columns, gates * units].
        var result = [Float](repeating: 0, count: matrix.count)
        for (k, source) in order.enumerated() {
          for u in 0..<units {
            for c in 0..<columns {
              result[c * gates * units + k * units + u] = matrix[(source * units + u) * columns + c]
            }
          }
        }
        return Constant(shape: [columns, gates * units], values: result)
      }
      var bias: Constant?
      if let given = try constant("bias" + suffix) {
        guard given.count == gates * units else {
          throw invalid("bias\(suffix) has \(given.count) values, needs \(gates * units)")
        }
        let values = given.asFloats
        var ordered = order.flatMap { values[$0 * units..<($0 + 1) * units] }
        if case .gru = cell { ordered += [Float](repeating: 0, count: gates * units) }
        bias = Constant(shape: [ordered.count], values: ordered)
      } else if case .gru = cell {
        bias = .filled(0, shape: [2 * gates * units])
      }
      return Recurrent.Weights(
        kernel: reordered(ih.asFloats, columns: s[2]), recurrentKernel: reordered(hh.asFloats, columns: units),
        bias: bias)
    }

    func activation(_ key: String, _ fallback: String) throws -> Activation {
      let name = try string(key, fallback)
      switch name {
      case "sigmoid": return .sigmoid
      case "tanh": return .tanh
      case "relu": return .relu
      case "linear": return .identity
      case "hard_sigmoid", "sigmoid_hard": return .hardSigmoid(slope: 0.2, offset: 0.5)
      default: throw unsupported("\(key) '\(name)' (sigmoid, tanh, relu, linear and hard_sigmoid are supported)")
      }
    }
    let outputActivation = try activation("activation", "tanh")
    let gateActivation = type == "rnn" ? Activation.sigmoid : try activation("recurrent_activation", "sigmoid")
    if type == "lstm", try activation("cell_activation", "tanh") != outputActivation {
      throw unsupported("a cell_activation different from activation")
    }
    let forward = try weights("")
    let backward = directions == 2 ? try weights("_back") : nil

    let steps = try reshape(x, to: [s[0], s[2]])
    func layer(_ returnSequences: Bool, cellState: Bool = false) -> Recurrent {
      Recurrent(
        cell: cell, units: units, activation: outputActivation, recurrentActivation: gateActivation, forward: forward,
        backward: backward,
        returnSequences: returnSequences, goBackwards: direction == "reverse", returnsCellState: cellState)
    }
    let width = directions * units
    let output = try add(.recurrent(layer(sequences)), [steps] + initialStates, suffix: "__steps")
    try define(try reshape(output, to: [sequences ? s[0] : 1, 1, width]))
    if operation.outputs.count > 1 {
      let last = sequences ? try add(.recurrent(layer(false)), [steps] + initialStates, suffix: "__final") : output
      values[try outputName(1)] = try builder.add(
        .reshape(targetShape: [1, width]), name: builder.uniqueName(try outputName(1)), inputs: [last])
    }
    if type == "lstm", operation.outputs.count > 2 {
      // The final cell state `[1, width]` (both directions' joined), a layer of its own; left to dead-code
      // removal when nothing reads it.
      let cellState = try add(.recurrent(layer(false, cellState: true)), [steps] + initialStates, suffix: "__cell")
      values[try outputName(2)] = try builder.add(
        .reshape(targetShape: [1, width]), name: builder.uniqueName(try outputName(2)), inputs: [cellState])
    }
  }
}
