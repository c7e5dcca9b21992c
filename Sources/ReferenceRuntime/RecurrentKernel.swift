import ModelIR

/// Runs SimpleRNN, LSTM and GRU layers step by step, as Keras defines them.
enum RecurrentKernel {
  /// `initial`: the single direction's initial hidden state and (LSTM) cell state, zeros when absent.
  static func run(_ x: Tensor, _ layer: Recurrent, initial: [[Float]] = []) -> [Float] {
    let steps = x.shape[0]
    let forward = direction(
      x, layer, layer.forward, reversed: layer.goBackwards, cellState: layer.returnsCellState,
      initialH: initial.first, initialC: initial.count > 1 ? initial[1] : nil)
    guard let backwardWeights = layer.backward else {
      return layer.returnSequences ? forward.flatMap { $0 } : forward.last!
    }
    // The backward pass reads the sequence last step first; Keras puts its outputs back in time order.
    let backward = direction(x, layer, backwardWeights, reversed: true, cellState: layer.returnsCellState)
    let pairs: [([Float], [Float])] =
      layer.returnSequences
      ? (0..<steps).map { (forward[$0], backward[steps - 1 - $0]) } : [(forward.last!, backward.last!)]
    return pairs.flatMap { a, b -> [Float] in
      switch layer.merge {
      case .concat: return a + b
      case .sum: return zip(a, b).map { $0 + $1 }
      case .mul: return zip(a, b).map { $0 * $1 }
      case .ave: return zip(a, b).map { ($0 + $1) / 2 }
      }
    }
  }

  /// The hidden state (or an LSTM's cell state, with `cellState`) after every step, in processing order.
  static func direction(
    _ x: Tensor, _ layer: Recurrent, _ weights: Recurrent.Weights, reversed: Bool, cellState: Bool = false,
    initialH: [Float]? = nil, initialC: [Float]? = nil
  ) -> [[Float]] {
    let (steps, inputs, units) = (x.shape[0], x.shape[1], layer.units)
    let width = layer.cell.gates * units
    let kernel = weights.kernel.values
    let recurrent = weights.recurrentKernel.values
    let bias =
      weights.bias?.values ?? [Float](repeating: 0, count: layer.cell == .gru(resetAfter: true) ? 2 * width : width)
    func act(_ v: [Float]) -> [Float] { Kernels.activation(layer.activation, Tensor(shape: [v.count], values: v)) }
    func gate(_ v: [Float]) -> [Float] {
      Kernels.activation(layer.recurrentActivation, Tensor(shape: [v.count], values: v))
    }
    /// `vector · matrix[rows, width]` for the columns `columns`.
    func product(_ vector: [Float], _ matrix: [Float], _ columns: Range<Int>) -> [Float] {
      columns.map { column in
        var sum: Float = 0
        for (row, value) in vector.enumerated() { sum += value * matrix[row * width + column] }
        return sum
      }
    }

    var h = initialH ?? [Float](repeating: 0, count: units)
    var c = initialC ?? [Float](repeating: 0, count: units)
    var outputs: [[Float]] = []
    for step in 0..<steps {
      let t = reversed ? steps - 1 - step : step
      let input = Array(x.values[t * inputs..<(t + 1) * inputs])
      let projected = zip(product(input, kernel, 0..<width), bias.prefix(width)).map { $0 + $1 }
      func slice(_ v: [Float], _ gateIndex: Int) -> [Float] { Array(v[gateIndex * units..<(gateIndex + 1) * units]) }
      switch layer.cell {
      case .simple:
        h = act(zip(projected, product(h, recurrent, 0..<width)).map { $0 + $1 })
      case .lstm:
        let z = zip(projected, product(h, recurrent, 0..<width)).map { $0 + $1 }
        let (i, f, g, o) = (gate(slice(z, 0)), gate(slice(z, 1)), act(slice(z, 2)), gate(slice(z, 3)))
        c = (0..<units).map { f[$0] * c[$0] + i[$0] * g[$0] }
        let activated = act(c)
        h = (0..<units).map { o[$0] * activated[$0] }
      case .gru(let resetAfter):
        let z: [Float]
        let r: [Float]
        let candidate: [Float]
        if resetAfter {
          let inner = zip(product(h, recurrent, 0..<width), bias.suffix(width)).map { $0 + $1 }
          z = gate(zip(slice(projected, 0), slice(inner, 0)).map { $0 + $1 })
          r = gate(zip(slice(projected, 1), slice(inner, 1)).map { $0 + $1 })
          candidate = act((0..<units).map { slice(projected, 2)[$0] + r[$0] * slice(inner, 2)[$0] })
        } else {
          z = gate(zip(slice(projected, 0), product(h, recurrent, 0..<units)).map { $0 + $1 })
          r = gate(zip(slice(projected, 1), product(h, recurrent, units..<2 * units)).map { $0 + $1 })
          let resetState = (0..<units).map { r[$0] * h[$0] }
          candidate = act(
            zip(slice(projected, 2), product(resetState, recurrent, 2 * units..<3 * units)).map { $0 + $1 })
        }
        h = (0..<units).map { z[$0] * h[$0] + (1 - z[$0]) * candidate[$0] }
      }
      outputs.append(cellState ? c : h)
    }
    return outputs
  }
}
