import Dispatch
import ModelIR

/// Refuses weights that Core ML cannot compute with, naming the layer and the weight.
///
/// A NaN or infinite weight (also a float64 weight beyond float32's range, which reads as infinity)
/// and a negative BatchNormalization variance make the converted model output NaN or infinity
/// where Keras' output may be finite, or hide that the file is corrupt. A weight of 2^112 (5.2e33) or more
/// is refused too: no trained model holds one, and its products reach float32's limit, where whether a
/// sum overflows depends on the order a device adds in (weights of 9e37 and 3.4e38 from the hostile corpus
/// made files whose two formats disagreed). `allowNonFinite` keeps them.
enum WeightValueCheck {
  static func check(_ graph: Graph) throws {
    // Every weight scanned on every core; the first bad one in graph order is reported, as a serial scan would.
    let weights = graph.nodes.flatMap { node in
      namedConstants(node.operation).map { (layer: node.origin?.name ?? node.name, weight: $0.0, constant: $0.1) }
    }
    let found = SlotBox<Int?>(count: weights.count)
    DispatchQueue.concurrentPerform(iterations: weights.count) {
      found.set($0, firstUnusable(weights[$0].constant.values))
    }
    for (item, index) in zip(weights, found.values) {
      if let index = index ?? nil {
        let value = item.constant.values[index]
        throw ConversionError.invalidWeightValue(
          layer: item.layer, weight: item.weight,
          detail: value.isFinite
            ? "element \(index) is \(value), 2^112 (5.2e33) or more: its products reach float32's limit, where results depend on the order of computation"
            : "element \(index) is \(value.isNaN ? "NaN" : "\(value > 0 ? "+" : "-")infinity (or beyond the float32 range)")"
        )
      }
    }
    for node in graph.nodes {
      let layer = node.origin?.name ?? node.name
      if case .batchNormalization(let norm) = node.operation,
        let index = norm.variance.values.firstIndex(where: { $0 < 0 })
      {
        throw ConversionError.invalidWeightValue(
          layer: layer, weight: "moving_variance",
          detail: "element \(index) is \(norm.variance.values[index]); a variance cannot be negative")
      }
    }
  }

  /// The index of the first NaN, infinity or magnitude of 2^112 or more. Scans whole blocks without
  /// branching first (such a float's biased exponent is 239 or more: adding 17 to the exponent field
  /// carries into the sign bit), so the common case vectorizes.
  static func firstUnusable(_ values: [Float]) -> Int? {
    values.withUnsafeBufferPointer { buffer in
      buffer.withMemoryRebound(to: UInt32.self) { bits in
        let block = 4096
        var start = 0
        while start < bits.count {
          let end = min(start + block, bits.count)
          var carries: UInt32 = 0
          for index in start..<end { carries |= (bits[index] & 0x7F80_0000) &+ (17 << 23) }
          if carries & 0x8000_0000 != 0 { return (start..<end).first { bits[$0] & 0x7F80_0000 >= (239 << 23) } }
          start = end
        }
        return nil
      }
    }
  }

  /// Every constant of an operation with the Keras weight name it came from.
  static func namedConstants(_ operation: Operation) -> [(String, Constant)] {
    func withBias(_ kernel: Constant, _ bias: Constant?) -> [(String, Constant)] {
      [("kernel", kernel)] + (bias.map { [("bias", $0)] } ?? [])
    }
    switch operation {
    case .convolution2D(let c): return withBias(c.kernel, c.bias)
    case .dense(let d): return withBias(d.kernel, d.bias)
    case .convolutionTranspose(let c): return withBias(c.kernel, c.bias)
    case .batchNormalization(let b):
      return [("gamma", b.gamma), ("beta", b.beta), ("moving_mean", b.mean), ("moving_variance", b.variance)]
    case .activation(.parametricReLU(let alpha)): return [("alpha", alpha)]
    case .constant(let value): return [("value", value)]
    case .embedding(let table): return [("embeddings", table)]
    case .custom(let layer): return layer.weights.enumerated().map { ("weight \($0.offset)", $0.element) }
    case .layerNormalization(let norm):
      return [("gamma", norm.gamma), ("beta", norm.beta)].compactMap { name, c in c.map { (name, $0) } }
    case .recurrent(let r):
      return [("forward", r.forward), ("backward", r.backward)].flatMap { direction, weights -> [(String, Constant)] in
        guard let weights else { return [] }
        let prefix = r.backward == nil ? "" : direction + " "
        return [(prefix + "kernel", weights.kernel), (prefix + "recurrent_kernel", weights.recurrentKernel)]
          + (weights.bias.map { [(prefix + "bias", $0)] } ?? [])
      }
    default: return []
    }
  }
}

/// `WeightValueCheck` as the last pass of a conversion: the graph is unchanged, or the conversion stops.
struct WeightValueCheckPass: GraphPass {
  let name = "check-weight-values"
  var stage: GraphPassStage { .check }
  func run(_ graph: inout Graph) throws { try WeightValueCheck.check(graph) }
}
