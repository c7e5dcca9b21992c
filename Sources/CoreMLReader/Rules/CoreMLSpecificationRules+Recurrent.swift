import CoreMLCommon
extension CoreMLSpecificationRules {
  /// Activation oneof field numbers Core ML's recurrent layers accept ([rule RNN-ACTIVATIONS]):
  /// linear 5, ReLU 10, tanh 30, scaledTanh 31, sigmoid 40, sigmoidHard 41.
  static let recurrentActivationKinds: Set<Int> = [5, 10, 30, 31, 40, 41]

  /// How many activations each recurrent layer lists ([rule RNN-ACTIVATION-COUNT]).
  static let recurrentActivationCounts: [String: Int] = ["simpleRecurrent": 1, "gru": 2, "uniDirectionalLSTM": 3, "biDirectionalLSTM": 3]

  /// Gate letters per layer, as the reader names the weight blobs (`W_<g>`, `R_<g>`, `b_<g>`).
  static let recurrentGates: [String: [String]] = ["simpleRecurrent": ["x"], "gru": ["z", "r", "o"], "uniDirectionalLSTM": ["i", "f", "z", "o"], "biDirectionalLSTM": ["i", "f", "z", "o"]]

  static func checkRecurrent(_ layer: CoreMLModelSpec.Layer, _ r: inout Reporter) {
    guard let count = recurrentActivationCounts[layer.kind], let gates = recurrentGates[layer.kind] else { return }
    let kinds = r.ints("activations")
    // [rule RNN-ACTIVATION-COUNT]
    if kinds.count != count { r.add("RNN-ACTIVATION-COUNT", "\(kinds.count) activations (\(layer.kind) takes \(count))") }
    checkActivations(kinds, prefix: "activation", &r)
    if layer.kind == "biDirectionalLSTM" {
      // [rule BILSTM-BACKWARD-ACTIVATIONS]: the backward LSTM must use the forward LSTM's activations.
      let backward = r.ints("backwardActivations")
      let sameParameters = (0..<max(kinds.count, backward.count)).allSatisfy { k in
        layer.floats["activation\(k).alpha"] == layer.floats["backwardActivation\(k).alpha"]
          && layer.floats["activation\(k).beta"] == layer.floats["backwardActivation\(k).beta"]
      }
      if backward != kinds || !sameParameters {
        r.add("BILSTM-BACKWARD-ACTIVATIONS", "backward activations \(backward.map(activationName)) differ from the forward ones \(kinds.map(activationName))")
      }
    }
    // [rule RNN-WEIGHT-SIZES]: W [out, in], R [out, out], b [out] per gate.
    let inputs = r.int("inputVectorSize") ?? 0, outputs = r.int("outputVectorSize") ?? 0
    let prefixes = layer.kind == "biDirectionalLSTM" ? ["", "backward."] : [""]
    for prefix in prefixes {
      for gate in gates {
        r.expectCount("RNN-WEIGHT-SIZES", prefix + "W_" + gate, product([outputs, inputs]), "[outputVectorSize, inputVectorSize] = [\(outputs), \(inputs)]")
        r.expectCount("RNN-WEIGHT-SIZES", prefix + "R_" + gate, product([outputs, outputs]), "[outputVectorSize, outputVectorSize]")
        r.expectCount("RNN-WEIGHT-SIZES", prefix + "b_" + gate, outputs, "[outputVectorSize]")
      }
    }
  }

  static func activationName(_ kind: Int) -> String {
    CoreMLSpecReader.activationKinds[UInt32(clamping: kind)] ?? "activation #\(kind)"
  }

  /// [rule RNN-ACTIVATIONS], [rule RNN-SIGMOID-HARD], [rule RNN-SCALED-TANH].
  static func checkActivations(_ kinds: [Int], prefix: String, _ r: inout Reporter) {
    for (k, kind) in kinds.enumerated() {
      guard recurrentActivationKinds.contains(kind) else {
        r.add("RNN-ACTIVATIONS", "activation \(k) is \(activationName(kind)); recurrent layers take only linear, sigmoid, tanh, ReLU, scaled tanh and hard sigmoid")
        continue
      }
      let alpha = r.layer.floats["\(prefix)\(k).alpha"], beta = r.layer.floats["\(prefix)\(k).beta"]
      if kind == 41 && !(alpha == 0.2 && beta == 0.5) {
        r.add("RNN-SIGMOID-HARD", "activation \(k) is hard sigmoid with alpha \(alpha.map { "\($0)" } ?? "?") and beta \(beta.map { "\($0)" } ?? "?"); recurrent layers support only alpha 0.2, beta 0.5")
      }
      if kind == 31 {
        // Apple's overview gives alpha 1.7159, the field comments 1.71: either is taken; beta is 2/3.
        let alphaOK = alpha.map { abs($0 - 1.7159) < 1e-4 || abs($0 - 1.71) < 1e-4 } ?? false
        let betaOK = beta.map { abs($0 - 2.0 / 3) < 1e-4 } ?? false
        if !(alphaOK && betaOK) {
          r.add("RNN-SCALED-TANH", "activation \(k) is scaled tanh with alpha \(alpha.map { "\($0)" } ?? "?") and beta \(beta.map { "\($0)" } ?? "?"); recurrent layers support only alpha 1.7159, beta 2/3")
        }
      }
    }
  }
}
