import CoreMLFormat
import ModelIR
import ReferenceRuntime

/// Layers whose values a float16 ML Program cannot hold, so that the default precision of an ML Program
/// (float16, as coremltools') becomes float32 for a model that has them, and a float16 program asked for
/// is written with a warning naming them: found at convert time, not left for `verify` (or a device) to
/// find in the file.
///
/// - A recurrent layer with `exponential` as its gate or output activation: exp overflows float16 above
///   11.09, and the gates compound over the steps (an LSTM's cell state grows by their product), so such
///   a layer's states leave float16's range (65 504) on ordinary inputs. Computing only the layer in
///   float32 is not enough: its outputs themselves pass 65 504 (measured on an LSTM with go_backwards from
///   the hostile corpus).
/// - A floor or ceil: a step function, whose result float16's rounding of its input changes by 1 near
///   every integer.
/// - A weight beyond 65 504 (a folded BatchNorm constant of 1.05e7 in a real exported model): float16
///   cannot even store it.
/// - A layer whose values pass 65 504 when the converted graph runs in float32 on the inputs `verify`
///   draws (pixels 0-255 through the image preprocessing, other inputs uniform in [-1, 1]; two seeded
///   samples): a 3 000-way sum, a huge image scale.
/// - A layer whose values the float16 program itself (weights rounded to float16, every result rounded to
///   float16) moves by more than `verify` allows a float16 program (relative RMS 64 x 2^-11) on the same sampled
///   inputs: MediaPipe's pose landmark model, whose segmentation logits near 10^3 come out at 29 dB. Models whose tensors would take more than
///   `maximumCheckedBytes`, that read token ids, or that the runtime cannot run are not run.
enum Float16Range {
  /// float16's largest finite value.
  static let largest: Float = 65_504
  /// The most tensor bytes one checking run may hold.
  static let maximumCheckedBytes = 256 << 20

  /// The reasons a source graph alone gives (its recurrent layers), in graph order.
  static func float32Reasons(in graph: Graph) -> [String] {
    graph.nodes.compactMap { node in
      if case .activation(let function) = node.operation, function == .floor || function == .ceil {
        // A step function: float16's rounding of its input (a relative 2^-11) moves values across an integer,
        // changing the result by 1 wherever that happens.
        return "layer '\(node.origin?.name ?? node.name)' rounds to integers (\(function)), which float16's rounding "
          + "of its input changes by 1 near each integer"
      }
      guard case .recurrent(let r) = node.operation, [r.activation, r.recurrentActivation].contains(.exponential) else {
        return nil
      }
      let layer = node.origin?.name ?? node.name
      return "recurrent layer '\(layer)' has exponential activations, whose values overflow float16"
    }
  }

  /// The reasons the converted graph gives: weights beyond float16, and values beyond it on sampled inputs
  /// (`imageInputs`: the image inputs' scale and biases, by input name, whose graph input is the tensor after them).
  static func valueReasons(in graph: Graph, imageInputs: [String: ImagePreprocessing]) -> [String] {
    let found = reasons(in: graph, imageInputs: imageInputs)
    return found.weights + found.values
  }

  /// The layers holding weights float16 cannot store (a constant node is named by its readers), in graph order.
  static func weightReasons(in graph: Graph) -> [String] {
    var reasons: [String] = []
    var named = Set<String>()
    func layer(_ node: Node) -> String { node.origin?.name ?? node.name }
    var bigConstants: [ValueID: Float] = [:]
    for node in graph.nodes {
      if case .constant(let constant) = node.operation {
        if let big = constant.values.first(where: { $0.isFinite && abs($0) > largest }) {
          bigConstants[node.output] = big
        }
        continue
      }
      let big =
        node.operation.constants.lazy.compactMap { $0.values.first(where: { $0.isFinite && abs($0) > largest }) }.first
        ?? node.inputs.lazy.compactMap { bigConstants[$0] }.first
      guard let big, named.insert(layer(node)).inserted else { continue }
      reasons.append("layer '\(layer(node))' holds a weight of \(big), beyond float16's largest value 65 504")
    }
    return reasons
  }

  /// The reasons split: weights float16 cannot store (which mixed precision keeps in float32 where they
  /// are), and values beyond float16 on sampled inputs or from an image scaler (which only a float32
  /// program holds).
  static func reasons(in graph: Graph, imageInputs: [String: ImagePreprocessing], checkingPrecision: Bool = false) -> (
    weights: [String], values: [String], precision: [String]
  ) {
    let weights = weightReasons(in: graph)
    var reasons: [String] = []
    func layer(_ node: Node) -> String { node.origin?.name ?? node.name }
    // An image scaler taking pixels 0-255 beyond float16 (a hostile scale of 3.4e38).
    for (name, image) in imageInputs.sorted(by: { $0.key < $1.key }) {
      let peak =
        abs(image.scale) * 255 + ([image.redBias, image.greenBias, image.blueBias, image.grayBias].map(abs).max() ?? 0)
      if !(peak <= largest) {
        reasons.append(
          "image input '\(name)' gives the network values up to \(peak) (scale \(image.scale)), beyond float16's largest value 65 504"
        )
      }
    }
    guard Interpreter.unsupportedOperations(in: graph).isEmpty,
      RuntimeMemory.tensorBytes(in: graph).total <= maximumCheckedBytes
    else {
      return (weights, reasons, [])
    }
    // Token ids index an embedding table: uniform values would not be ids, so such a model is not run.
    let readsTokens = graph.nodes.contains { node in
      if case .embedding = node.operation { return true }
      return false
    }
    if readsTokens { return (weights, reasons, []) }
    var generator = SplitMix64(seed: 0)
    var worst: [ValueID: Float] = [:]
    let interpreter = Interpreter(graph: graph, kernels: .direct, observed: Set(graph.nodes.map(\.output)))
    // The same graph as a float16 program computes it, when asked and nothing above already rules float16 out.
    let float16 =
      checkingPrecision && weights.isEmpty && reasons.isEmpty
      ? Interpreter(graph: graph.emulatingFloat16(), kernels: .direct, observed: Set(graph.nodes.map(\.output))) : nil
    var lost: [ValueID: (signal: Double, noise: Double)] = [:]
    for _ in 0..<2 {
      var inputs: [Tensor] = []
      for id in graph.inputs {
        let shape = graph[id].type.shape
        let count = shape.reduce(1, *)
        if let image = imageInputs[graph[id].name], let channels = shape.last, shape.count == 3 {
          let biases = image.networkBiases(channels: channels)
          inputs.append(
            Tensor(
              shape: shape,
              values: (0..<count).map { index in
                image.scale * Float(generator.next() % 256) + biases[index % channels]
              }))
        } else {
          inputs.append(Tensor(shape: shape, values: (0..<count).map { _ in generator.nextUnit() * 2 - 1 }))
        }
      }
      // Inputs that are not finite make nothing to measure (a source's own NaN scaler is refused elsewhere).
      guard inputs.allSatisfy({ $0.values.allSatisfy(\.isFinite) }) else { return (weights, reasons, []) }
      let observed = interpreter.runObserving(inputs).observed
      for (id, tensor) in observed {
        let peak = tensor.values.reduce(Float(0)) { abs($1).isNaN ? $0 : max($0, abs($1)) }
        worst[id] = max(worst[id] ?? 0, peak)
      }
      if let float16 {
        for (id, tensor) in float16.runObserving(inputs).observed {
          guard let expected = observed[id] else { continue }
          var (signal, noise) = lost[id] ?? (0, 0)
          for (a, b) in zip(tensor.values, expected.values) where a.isFinite || b.isFinite {
            signal += Double(b) * Double(b)
            noise += a.isFinite && b.isFinite ? Double(a - b) * Double(a - b) : .infinity
          }
          lost[id] = (signal, noise)
        }
      }
    }
    var named = Set<String>()
    for node in graph.nodes {
      // A constant's values are weights (above); what is computed from them is checked here.
      if case .constant = node.operation { continue }
      // One reason a layer (a source layer may become several nodes).
      guard let peak = worst[node.output], peak > largest, named.insert(layer(node)).inserted else { continue }
      if peak > Float.greatestFiniteMagnitude / 65_536 {
        // The source's own values reach float32's limit: no precision holds them.
        let what = peak.isInfinite ? "infinite values" : "values up to \(peak)"
        reasons.append(
          "layer '\(layer(node))' computes \(what) on sampled inputs, beyond float16 and at float32's limit")
      } else {
        reasons.append(
          "layer '\(layer(node))' computes values up to \(peak) on sampled inputs, beyond float16's largest value 65 504"
        )
      }
      if reasons.count >= 3 { break }
    }
    return (weights, reasons, reasons.isEmpty ? precisionReasons(graph, lost: lost) : [])
  }

  /// The relative RMS error a tensor may have in a float16 program, as `verify` allows it (64 roundings of
  /// float16, 64 x 2^-11).
  static let float16RelativeRMS = 64.0 / 2048

  /// The first layer (in graph order) whose values the float16 program moves by more than `verify` allows
  /// on the sampled inputs, and how many do.
  static func precisionReasons(_ graph: Graph, lost: [ValueID: (signal: Double, noise: Double)]) -> [String] {
    var first: (Node, Double)?
    var count = 0
    for node in graph.nodes {
      if case .constant = node.operation { continue }
      guard let (signal, noise) = lost[node.output] else { continue }
      let elements = Double(graph[node.output].type.elementCount * 2)
      let relative = (noise / max(signal, elements)).squareRoot()
      guard !(relative <= float16RelativeRMS) else { continue }
      count += 1
      if first == nil { first = (node, relative) }
    }
    guard let (node, relative) = first else { return [] }
    let others = count > 1 ? " (and \(count - 1) layers after it)" : ""
    return [
      "layer '\(node.origin?.name ?? node.name)'\(others) computes values float16's rounding moves by a relative RMS of "
        + "\(relative.isFinite ? String(format: "%.3g", relative) : "infinity") on sampled inputs, more than verify allows a "
        + "float16 program (\(float16RelativeRMS))"
    ]
  }
}
