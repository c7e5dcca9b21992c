import ModelFormats
import ModelIR

extension KerasLayerRegistry {
  /// SimpleRNN, LSTM and GRU (also the classes Bidirectional may wrap).
  /// The cells of the recurrent layers store their recurrent kernel between kernel and bias.
  static let recurrentStoredWeights: [String: @Sendable (JSONValue) -> [String]] = [
    "SimpleRNNCell": { _ in ["kernel", "recurrent_kernel", "bias"] },
    "LSTMCell": { _ in ["kernel", "recurrent_kernel", "bias"] },
    "GRUCell": { _ in ["kernel", "recurrent_kernel", "bias"] },
  ]

  static let recurrentHandlers: [String: KerasLayerHandler] = Dictionary(
    uniqueKeysWithValues: KerasGraphImporter.recurrentClassNames.map {
      ($0, { try $0.convertRecurrent($1) } as KerasLayerHandler)
    })
}

extension KerasGraphImporter {
  static let recurrentClassNames = ["SimpleRNN", "LSTM", "GRU"]

  mutating func convertRecurrent(_ call: KerasLayerCall) throws -> ValueID {
    try add(
      .recurrent(try recurrent(call.layer, input: try call.single(), weightGroup: call.weightGroup)),
      [try call.single()], call)
  }

  /// The IR form of a SimpleRNN, LSTM or GRU config; `owner` and `direction` locate a Bidirectional half's weights.
  func recurrent(
    _ layer: KerasLayerConfig, input: ValueID, weightGroup: String, owner: String? = nil, direction: String? = nil
  ) throws -> Recurrent {
    let reader = LayerConfigReader(layer: layer, path: model.path)
    let s = builder.type(of: input).shape
    guard s.count == 2 else { throw reader.fail("expects a [steps, channels] sequence, got \(s)") }
    guard !reader.bool("return_state", default: false) else { throw reader.fail("return_state is not supported") }
    let units = try reader.int("units")
    let cell: Recurrent.Cell
    if layer.className == "SimpleRNN" {
      cell = .simple
    } else if layer.className == "LSTM" {
      cell = .lstm
    } else {
      // Keras 2.0-2.2 had no reset_after and used the older formula.
      cell = .gru(resetAfter: reader.bool("reset_after", default: false))
    }
    let width = try checkedProduct([cell.gates, units], reader)
    /// Keras 1 stored one matrix per gate (`W_i`, `U_i`, `b_i`, ...), Keras 2 and 3 one for all gates.
    let legacyGates: [String]? = ["LSTM": ["i", "f", "c", "o"], "GRU": ["z", "r", "h"]][layer.className]
    func weight(_ kind: String, _ shape: [Int]) throws -> Constant {
      func stored(_ kinds: [String], _ shape: [Int]?) throws -> Constant {
        try model.weights.weight(
          kinds, layer: owner ?? layer.name, topLevel: weightGroup, expectedShape: shape, direction: direction)
      }
      do {
        return try stored([kind], shape)
      } catch let error as KerasReaderError {
        guard case .missingWeight = error, let gates = legacyGates else { throw error }
        let prefix = ["kernel": "W", "recurrent_kernel": "U", "bias": "b"][kind]!
        let parts = try gates.map { try stored([prefix + "_" + $0], shape.count == 2 ? [shape[0], units] : [units]) }
        // Concatenate the gates along the last axis.
        let rows = shape.count == 2 ? shape[0] : 1
        var values: [Float] = []
        for row in 0..<rows { for part in parts { values += part.values[row * units..<(row + 1) * units] } }
        return Constant(shape: shape, values: values)
      }
    }
    var bias: Constant?
    if reader.bool("use_bias", default: true) {
      let stored = try weight("bias", cell == .gru(resetAfter: true) ? [2, width] : [width])
      bias = Constant(shape: [stored.count], values: stored.values)
    }
    let gateName = layer.className == "SimpleRNN" ? "sigmoid" : try reader.activationName("recurrent_activation")
    let outputName = try reader.activationName()
    // Any activation the IR has is written exactly (unrolled where Core ML's recurrent layers cannot compute it).
    guard let outputActivation = activation(named: outputName) else {
      throw reader.fail("activation '\(outputName)' is not supported")
    }
    guard let gateActivation = activation(named: gateName) else {
      throw reader.fail("recurrent_activation '\(gateName)' is not supported")
    }
    return Recurrent(
      cell: cell, units: units, activation: outputActivation, recurrentActivation: gateActivation,
      forward: .init(
        kernel: try weight("kernel", [s[1], width]), recurrentKernel: try weight("recurrent_kernel", [units, width]),
        bias: bias),
      returnSequences: reader.bool("return_sequences", default: false),
      goBackwards: reader.bool("go_backwards", default: false))
  }
}
