import ModelIR

/// Layers whose values a float16 ML Program cannot hold, so that the default precision of an ML Program
/// (float16, as coremltools') becomes float32 for a model that has them.
///
/// A recurrent layer with `exponential` as its gate or output activation: exp overflows float16 above
/// 11.09, and the gates compound over the steps (an LSTM's cell state grows by their product), so such
/// a layer's states leave float16's range (65 504) on ordinary inputs. Computing only the layer in
/// float32 is not enough: its outputs themselves pass 65 504 (measured on an LSTM with go_backwards from
/// the hostile corpus). A precision given explicitly is kept.
enum Float16Range {
  /// The names of the layers that need float32, with why, in graph order.
  static func float32Reasons(in graph: Graph) -> [String] {
    graph.nodes.compactMap { node in
      guard case .recurrent(let r) = node.operation, [r.activation, r.recurrentActivation].contains(.exponential) else { return nil }
      let layer = node.origin?.name ?? node.name
      return "recurrent layer '\(layer)' has exponential activations, whose values overflow float16"
    }
  }
}
