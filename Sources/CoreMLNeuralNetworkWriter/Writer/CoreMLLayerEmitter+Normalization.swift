import CoreMLCommon
import ModelIR

extension CoreMLLayerEmitter {
  /// Layer normalization over Keras' last axis (Core ML's C) from classic layers: channel means by
  /// `reduce`, broadcasting subtraction and `multiply` (shapes `[1, H, W]` against `[C, H, W]`), `unary` RSQRT
  /// for `1 / sqrt(variance + epsilon)`, then `scale` for gamma and beta.
  mutating func emitLayerNormalization(
    _ norm: LayerNormalization, name: String, input: String, output: String, channels: Int
  ) throws {
    func blob(_ suffix: String) -> String { "\(name)__\(suffix)__output" }
    func reduceMean(_ source: String, _ target: String, _ step: String) {
      builder.reduceChannels(.average, "\(name)__\(step)__", input: source, output: target)
    }

    reduceMean(input, blob("mean"), "mean")
    try emitElementwise(
      .subtract, name: "\(name)__centered__", inputs: [input, blob("mean")], output: blob("centered"))
    try emitElementwise(
      .multiply, name: "\(name)__squared__", inputs: [blob("centered"), blob("centered")], output: blob("squared"))
    reduceMean(blob("squared"), blob("variance"), "variance")
    builder.unary(
      .rsqrt, "\(name)__rsqrt__", input: blob("variance"), output: blob("rsqrt"), scale: 1,
      epsilon: Self.unaryEpsilon(norm.epsilon))
    let normalized = norm.gamma == nil && norm.beta == nil ? output : blob("normalized")
    try emitElementwise(
      .multiply, name: "\(name)__normalized__", inputs: [blob("centered"), blob("rsqrt")], output: normalized)
    guard normalized != output else { return }
    try builder.scale(
      name, input: normalized, output: output, shape: [channels],
      scale: .values(norm.gamma?.values ?? [Float](repeating: 1, count: channels)),
      bias: norm.beta.map { .values($0.values) })
  }

  /// `x / sqrt(sum over C of x^2 + epsilon)` for images: `reduce` SUMSQUARE over C, `unary` RSQRT, and a
  /// broadcasting `multiply`.
  mutating func emitChannelL2Normalize(epsilon: Float, name: String, input: String, output: String) throws {
    builder.reduceChannels(.sumSquare, "\(name)__sumsquare__", input: input, output: "\(name)__sumsquare___output")
    builder.unary(
      .rsqrt, "\(name)__rsqrt__", input: "\(name)__sumsquare___output", output: "\(name)__rsqrt___output", scale: 1,
      epsilon: Self.unaryEpsilon(epsilon))
    try emitElementwise(.multiply, name: name, inputs: [input, "\(name)__rsqrt___output"], output: output)
  }

  /// An epsilon as a classic unary layer holds it: Core ML reads 0 as 1e-6 ([rule UNARY-DEFAULTS]), so 0 is
  /// written as the smallest normal float, which changes no normal value it is added to.
  static func unaryEpsilon(_ epsilon: Float) -> Float { epsilon == 0 ? Float.leastNormalMagnitude : epsilon }
}
