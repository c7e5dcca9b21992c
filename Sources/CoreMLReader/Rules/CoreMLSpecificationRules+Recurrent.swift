import CoreMLCommon

extension CoreMLSpecificationRules {
  /// Activation oneof field numbers Core ML's recurrent layers accept ([rule RNN-ACTIVATIONS]):
  /// linear 5, ReLU 10, tanh 30, scaledTanh 31, sigmoid 40, sigmoidHard 41.
  static let recurrentActivationKinds: Set<Int> = [5, 10, 30, 31, 40, 41]

  /// A recurrent layer's activations, sizes and gate weights by name (`W_<g>`, `R_<g>`, `b_<g>`, the backward half of a
  /// bidirectional LSTM prefixed `backward.`).
  struct RecurrentView {
    var activationCount: Int
    var activations: [ActivationParameters]
    var backwardActivations: [ActivationParameters]?
    var inputs: Int
    var outputs: Int
    var gates: [(prefix: String, letter: String, weights: RecurrentGateWeights)]

    init?(_ parameters: CoreMLLayerParameters) {
      func named(_ prefix: String, _ letters: [String], _ gates: [RecurrentGateWeights]) -> [(
        prefix: String, letter: String, weights: RecurrentGateWeights
      )] {
        zip(letters, gates).map { (prefix, $0, $1) }
      }
      let lstm = ["i", "f", "z", "o"]
      switch parameters {
      case .simpleRecurrent(let p):
        (activationCount, activations, inputs, outputs) = (1, p.activations, p.inputVectorSize, p.outputVectorSize)
        gates = named("", ["x"], [p.gate])
      case .gru(let p):
        (activationCount, activations, inputs, outputs) = (2, p.activations, p.inputVectorSize, p.outputVectorSize)
        gates = named("", ["z", "r", "o"], p.gates)
      case .uniDirectionalLSTM(let p):
        (activationCount, activations, inputs, outputs) = (3, p.activations, p.inputVectorSize, p.outputVectorSize)
        gates = named("", lstm, p.weightParams.gates)
      case .biDirectionalLSTM(let p):
        (activationCount, activations, inputs, outputs) = (
          3, p.activationsForwardLSTM, p.inputVectorSize, p.outputVectorSize
        )
        backwardActivations = p.activationsBackwardLSTM
        gates = named("", lstm, p.forwardWeights.gates) + named("backward.", lstm, p.backwardWeights.gates)
      default: return nil
      }
    }
  }

  static func checkRecurrent(_ layer: CoreMLModelSpec.Layer, _ r: inout Reporter) {
    guard let view = RecurrentView(layer.parameters) else { return }
    let kinds = view.activations.map(\.fieldNumber)
    // [rule RNN-ACTIVATION-COUNT]
    if kinds.count != view.activationCount {
      r.add("RNN-ACTIVATION-COUNT", "\(kinds.count) activations (\(layer.kind) takes \(view.activationCount))")
    }
    checkActivations(view.activations, &r)
    if let backwardActivations = view.backwardActivations {
      // [rule BILSTM-BACKWARD-ACTIVATIONS]: the backward LSTM must use the forward LSTM's activations.
      let backward = backwardActivations.map(\.fieldNumber)
      let sameParameters = (0..<max(kinds.count, backward.count)).allSatisfy { k in
        let forward = k < view.activations.count ? view.activations[k].recurrentAlphaBeta : nil
        let other = k < backwardActivations.count ? backwardActivations[k].recurrentAlphaBeta : nil
        return forward?.alpha == other?.alpha && forward?.beta == other?.beta
      }
      if backward != kinds || !sameParameters {
        r.add(
          "BILSTM-BACKWARD-ACTIVATIONS",
          "backward activations \(backward.map(activationName)) differ from the forward ones \(kinds.map(activationName))"
        )
      }
    }
    // [rule RNN-WEIGHT-SIZES]: W [out, in], R [out, out], b [out] per gate.
    let (inputs, outputs) = (view.inputs, view.outputs)
    for (prefix, gate, weights) in view.gates {
      r.expectCount(
        "RNN-WEIGHT-SIZES", prefix + "W_" + gate, weights.weightMatrix, product([outputs, inputs]),
        "[outputVectorSize, inputVectorSize] = [\(outputs), \(inputs)]")
      r.expectCount(
        "RNN-WEIGHT-SIZES", prefix + "R_" + gate, weights.recursionMatrix, product([outputs, outputs]),
        "[outputVectorSize, outputVectorSize]")
      r.expectCount("RNN-WEIGHT-SIZES", prefix + "b_" + gate, weights.biasVector, outputs, "[outputVectorSize]")
    }
  }

  static func activationName(_ kind: Int) -> String {
    CoreMLSpecReader.activationKinds[UInt32(clamping: kind)] ?? "activation #\(kind)"
  }

  /// [rule RNN-ACTIVATIONS], [rule RNN-SIGMOID-HARD], [rule RNN-SCALED-TANH].
  static func checkActivations(_ activations: [ActivationParameters], _ r: inout Reporter) {
    for (k, activation) in activations.enumerated() {
      let kind = activation.fieldNumber
      guard recurrentActivationKinds.contains(kind) else {
        r.add(
          "RNN-ACTIVATIONS",
          "activation \(k) is \(activationName(kind)); recurrent layers take only linear, sigmoid, tanh, ReLU, scaled tanh and hard sigmoid"
        )
        continue
      }
      let alpha = activation.recurrentAlphaBeta?.alpha
      let beta = activation.recurrentAlphaBeta?.beta
      if kind == 41 && !(alpha == 0.2 && beta == 0.5) {
        r.add(
          "RNN-SIGMOID-HARD",
          "activation \(k) is hard sigmoid with alpha \(alpha.map { "\($0)" } ?? "?") and beta \(beta.map { "\($0)" } ?? "?"); recurrent layers support only alpha 0.2, beta 0.5"
        )
      }
      if kind == 31 {
        // Apple's overview gives alpha 1.7159, the field comments 1.71: either is taken; beta is 2/3.
        let alphaOK = alpha.map { abs($0 - 1.7159) < 1e-4 || abs($0 - 1.71) < 1e-4 } ?? false
        let betaOK = beta.map { abs($0 - 2.0 / 3) < 1e-4 } ?? false
        if !(alphaOK && betaOK) {
          r.add(
            "RNN-SCALED-TANH",
            "activation \(k) is scaled tanh with alpha \(alpha.map { "\($0)" } ?? "?") and beta \(beta.map { "\($0)" } ?? "?"); recurrent layers support only alpha 1.7159, beta 2/3"
          )
        }
      }
    }
  }
}
