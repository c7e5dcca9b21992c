import ModelIR

extension ONNXOperatorRegistry {
  /// `LSTM`, `GRU` and `RNN`: forward, reverse or bidirectional, zero initial states, no peepholes or
  /// clipping, every sequence full length; each batch element runs as its own IR recurrent layer (and
  /// per output read: `Y`, `Y_h`, an LSTM's `Y_c`).
  static let recurrentOperators: [String: [ONNXOperatorEntry]] =
    entries(["LSTM": [1, 7, 14]]) { try $0.recurrent(.lstm) }
    .merging(entries(["GRU": [1, 3, 7, 14]]) { try $0.recurrent(.gru(resetAfter: false)) }) { $0 + $1 }
    .merging(entries(["RNN": [1, 7, 14]]) { try $0.recurrent(.simple) }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// ONNX's gate order for each cell (LSTM `i, o, f, c`; GRU `z, r, h`): for the IR's gate `k` (LSTM
  /// `i, f, c, o`; GRU `z, r, h`), the ONNX gate it is.
  static func onnxGate(_ cell: Recurrent.Cell) -> [Int] {
    switch cell {
    case .lstm: return [0, 2, 3, 1]
    case .gru: return [0, 1, 2]
    case .simple: return [0]
    }
  }

  /// The IR activation an ONNX recurrent activation name stands for, with `activation_alpha`/`beta`.
  func recurrentActivation(_ name: String, alpha: Float?, beta: Float?) throws -> Activation {
    switch name.lowercased() {
    case "sigmoid": return .sigmoid
    case "tanh": return .tanh
    case "relu": return .relu
    case "hardsigmoid": return .hardSigmoid(slope: alpha ?? 0.2, offset: beta ?? 0.5)
    case "leakyrelu": return .leakyReLU(alpha: alpha ?? 0.01)
    case "elu": return .elu(alpha: alpha ?? 1)
    case "softsign": return .softsign
    case "softplus": return .softplus
    default:
      throw invalid(
        "activation '\(name)' is not supported (Sigmoid, Tanh, Relu, HardSigmoid, LeakyRelu, Elu, Softsign, Softplus)")
    }
  }

  mutating func recurrent(_ kind: Recurrent.Cell) throws {
    var cell = kind
    if case .gru = kind { cell = .gru(resetAfter: try int("linear_before_reset", 0) == 1) }
    let x = try tensor(0)
    var shape = builder.type(of: x).shape
    guard shape.count == 3 else { throw invalid("X of shape \(shape) must be [seq, batch, input]") }
    let layout = opset >= 14 ? try int("layout", 0) : 0
    let batchFirst = layout == 1
    if batchFirst { shape = [shape[1], shape[0], shape[2]] }
    let (steps, batch, inputSize) = (shape[0], shape[1], shape[2])
    let direction = try string("direction", "forward")
    guard ["forward", "reverse", "bidirectional"].contains(direction) else { throw invalid("direction '\(direction)'") }
    let directions = direction == "bidirectional" ? 2 : 1
    let gates = cell.gates
    guard hasAttribute("hidden_size") || hasInput(2) else { throw invalid("attribute 'hidden_size' is required") }
    let w = try requiredConstant(1, "W")
    let r = try requiredConstant(2, "R")
    let units = try int("hidden_size", w.shape.count == 3 ? w.shape[1] / gates : 0)
    guard units >= 1, w.shape == [directions, gates * units, inputSize], r.shape == [directions, gates * units, units]
    else {
      throw invalid(
        "W \(w.shape) / R \(r.shape) do not fit \(directions) direction(s), \(units) units and \(inputSize) inputs")
    }
    if hasAttribute("clip") { throw invalid("clip is not supported") }
    if case .lstm = cell, try int("input_forget", 0) != 0 { throw invalid("input_forget is not supported") }
    // sequence_lens (4): every sequence the full length; initial states (5, 6) and peepholes (7): zero.
    if hasInput(4) {
      let lengths = try requiredInts(4, "sequence_lens")
      guard lengths.allSatisfy({ $0 == steps }) else {
        throw invalid("sequence_lens \(lengths) shorter than the \(steps) steps are not supported")
      }
    }
    for (index, what) in [(5, "initial_h"), (6, "initial_c"), (7, "P")] where hasInput(index) {
      guard try requiredConstant(index, what).floats.allSatisfy({ $0 == 0 }) else {
        throw invalid("a non-zero \(what) is not supported")
      }
    }
    var wantsCell = false
    if case .lstm = cell { wantsCell = outputCount > 2 && !node.outputs[2].isEmpty }
    let wantsSequence = outputCount > 0 && !node.outputs[0].isEmpty
    let wantsLast = outputCount > 1 && !node.outputs[1].isEmpty
    if direction == "reverse" && wantsSequence {
      throw invalid("a reverse direction's Y (in time order) is not supported; Y_h is")
    }

    // Activations: per direction, (gate, candidate[, output]); the IR has one candidate/output activation.
    let names = node.attribute("activations")?.strings
    let alphas = node.attribute("activation_alpha")?.floats
    let betas = node.attribute("activation_beta")?.floats
    let perDirection: Int
    switch cell {
    case .lstm: perDirection = 3
    case .gru: perDirection = 2
    case .simple: perDirection = 1
    }
    let defaults: [String]
    switch cell {
    case .lstm: defaults = ["Sigmoid", "Tanh", "Tanh"]
    case .gru: defaults = ["Sigmoid", "Tanh"]
    case .simple: defaults = ["Tanh"]
    }
    let given = names ?? Array([[String]](repeating: defaults, count: directions).joined())
    guard given.count == perDirection * directions else {
      throw invalid("activations \(given) must have \(perDirection * directions) names")
    }
    var activations: [Activation] = []
    for (index, name) in given.enumerated() {
      activations.append(
        try recurrentActivation(
          name, alpha: alphas.flatMap { index < $0.count ? $0[index] : nil },
          beta: betas.flatMap { index < $0.count ? $0[index] : nil }))
    }
    if directions == 2 && Array(activations.prefix(perDirection)) != Array(activations.suffix(perDirection)) {
      throw invalid("different activations per direction are not supported")
    }
    let gateActivation: Activation = cell == .simple ? .sigmoid : activations[0]
    let candidate = cell == .simple ? activations[0] : activations[1]
    if case .lstm = cell, activations[2] != candidate {
      throw invalid("an output activation other than the cell's (\(activations[2]) vs \(candidate)) is not supported")
    }

    let bias = hasInput(3) ? try requiredConstant(3, "B") : nil
    if let bias, bias.shape != [directions, 2 * gates * units] {
      throw invalid("B \(bias.shape) must be [\(directions), \(2 * gates * units)]")
    }
    let order = Self.onnxGate(cell)
    func weights(_ d: Int) -> Recurrent.Weights {
      func matrix(_ c: ONNXConstant, columns: Int) -> Constant {
        // ONNX [gates * units, columns] to the IR's [columns, gates * units], IR gate order.
        var values = [Float](repeating: 0, count: columns * gates * units)
        let offset = d * gates * units * columns
        for k in 0..<gates {
          for u in 0..<units {
            for col in 0..<columns {
              values[col * gates * units + k * units + u] = c.floats[offset + (order[k] * units + u) * columns + col]
            }
          }
        }
        return Constant(shape: [columns, gates * units], values: values)
      }
      var irBias: Constant?
      if let bias {
        let base: Int = d * 2 * gates * units
        var input: [Float] = []
        var hidden: [Float] = []
        for k in 0..<gates {
          let start: Int = base + order[k] * units
          input += bias.floats[start..<(start + units)]
          let recurrentStart: Int = start + gates * units
          hidden += bias.floats[recurrentStart..<(recurrentStart + units)]
        }
        if case .gru(resetAfter: true) = cell {
          irBias = Constant(shape: [2 * gates * units], values: input + hidden)
        } else {
          irBias = Constant(shape: [gates * units], values: zip(input, hidden).map { $0 + $1 })
        }
      } else if case .gru(resetAfter: true) = cell {
        irBias = .filled(0, shape: [2 * gates * units])
      }
      return Recurrent.Weights(
        kernel: matrix(w, columns: inputSize), recurrentKernel: matrix(r, columns: units), bias: irBias)
    }
    let forward = weights(0)
    let backward = directions == 2 ? weights(1) : nil
    func layer(_ sequences: Bool, cellState: Bool = false) -> Recurrent {
      Recurrent(
        cell: cell, units: units, activation: candidate, recurrentActivation: gateActivation, forward: forward,
        backward: backward,
        returnSequences: sequences, goBackwards: direction == "reverse", returnsCellState: cellState)
    }
    // One IR layer per batch element (and per output asked for).
    let source = batchFirst ? try add(.permute(order: [1, 0, 2]), [x], suffix: "__seq_first") : x
    var sequences: [ValueID] = []
    var lasts: [ValueID] = []
    var cells: [ValueID] = []
    for b in 0..<batch {
      let slice =
        batch == 1
        ? source
        : try add(
          .slice(StridedSlice(begin: [0, b, 0], end: [steps, b + 1, inputSize], strides: [1, 1, 1])), [source],
          suffix: "__batch\(b)")
      let steps2D = try add(.reshape(targetShape: [steps, inputSize]), [slice], suffix: "__steps\(b)")
      if wantsSequence {
        let y = try add(.recurrent(layer(true)), [steps2D], suffix: "__sequence\(b)")
        sequences.append(try add(.reshape(targetShape: [steps, directions, 1, units]), [y], suffix: "__y\(b)"))
      }
      if wantsLast {
        let h = try add(.recurrent(layer(false)), [steps2D], suffix: "__last\(b)")
        lasts.append(try add(.reshape(targetShape: [directions, 1, units]), [h], suffix: "__h\(b)"))
      }
      if wantsCell {
        let c = try add(.recurrent(layer(false, cellState: true)), [steps2D], suffix: "__cell\(b)")
        cells.append(try add(.reshape(targetShape: [directions, 1, units]), [c], suffix: "__c\(b)"))
      }
    }
    if wantsSequence {
      var y = sequences.count == 1 ? sequences[0] : try add(.concatenate(axis: 2), sequences, suffix: "__y")
      if batchFirst { y = try add(.permute(order: [2, 0, 1, 3]), [y], suffix: "__y_batch_first") }
      define(y, output: 0)
    }
    if wantsLast {
      var h = lasts.count == 1 ? lasts[0] : try add(.concatenate(axis: 1), lasts, suffix: "__h")
      if batchFirst { h = try add(.permute(order: [1, 0, 2]), [h], suffix: "__h_batch_first") }
      define(h, output: 1)
    }
    if wantsCell {
      var c = cells.count == 1 ? cells[0] : try add(.concatenate(axis: 1), cells, suffix: "__c")
      if batchFirst { c = try add(.permute(order: [1, 0, 2]), [c], suffix: "__c_batch_first") }
      define(c, output: 2)
    }
  }
}
