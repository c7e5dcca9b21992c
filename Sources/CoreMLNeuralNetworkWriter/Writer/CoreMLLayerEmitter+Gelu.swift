import CoreMLCommon
import ModelIR

/// GELU from classic layers.
///
/// Core ML's `gelu` layer arrived with specification 4, and Apple's text forbids such layers in a network
/// that keeps the rank-5 input mapping ([rule RANK5-MAPPING] in `Schemas/NeuralNetwork.proto`), which our
/// classic writer uses. So GELU is written with specification-1 layers:
/// - exact (erf): `x Phi(x) = 0.5 x + |x| (0.5 - q)`, where `q = phi(|x|) P(t)`, `t = 1 / (1 + p |x|)`, is the
///   normal tail of Abramowitz and Stegun 26.2.17 (absolute error below 7.5e-8 for every x), so no sign
///   function is needed;
/// - tanh approximation: `0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))`, exactly.
extension CoreMLLayerEmitter {
  /// Abramowitz and Stegun 26.2.17: `p` and `b1...b5`.
  static let normalTail: (p: Float, b: [Float]) = (
    0.231_641_9, [0.319_381_530, -0.356_563_782, 1.781_477_937, -1.821_255_978, 1.330_274_429]
  )

  mutating func emitGelu(approximate: Bool, name: String, input: String, output: String) throws {
    var step = 0
    func blob(_ label: String) -> String {
      step += 1
      return "\(name)__gelu\(step)_\(label)"
    }
    func unary(_ kind: NeuralNetworkUnaryOperation, _ x: String, scale: Float = 1, shift: Float = 0, label: String)
      -> String
    {
      let out = blob(label)
      // Apple reads an epsilon of 0 as 1e-6 ([rule UNARY-DEFAULTS]); 1e-12 keeps 1 / (1 + p|x|) exact to float precision.
      builder.unary(kind, out, input: x, output: out, shift: shift, scale: scale, epsilon: 1e-12)
      return out
    }
    func linear(_ x: String, _ alpha: Float, _ beta: Float, label: String, output: String? = nil) throws -> String {
      let out = output ?? blob(label)
      try builder.activation(.linear(alpha: alpha, beta: beta), output == nil ? out : name, input: x, output: out)
      return out
    }
    func multiply(_ a: String, _ b: String, label: String, output: String? = nil) throws -> String {
      let out = output ?? blob(label)
      try emitElementwise(.multiply, name: output == nil ? out : name, inputs: [a, b], output: out)
      return out
    }
    func add(_ a: String, _ b: String, output: String) throws {
      try emitElementwise(.add, name: name, inputs: [a, b], output: output)
    }

    if approximate {
      let square = try multiply(input, input, label: "square")
      let cube = try multiply(square, input, label: "cube")
      let cubic = try linear(cube, 0.044_715, 0, label: "cubic")
      let inner = blob("inner")
      try emitElementwise(.add, name: inner, inputs: [input, cubic], output: inner)
      let scaled = try linear(inner, (2 / Float.pi).squareRoot(), 0, label: "scaled")
      let tanh = blob("tanh")
      try builder.activation(.tanh, tanh, input: scaled, output: tanh)
      let gate = try linear(tanh, 0.5, 0.5, label: "gate")
      _ = try multiply(input, gate, label: "", output: output)
      return
    }
    let (p, b) = Self.normalTail
    let magnitude = unary(.abs, input, label: "abs")
    let t = unary(.inverse, magnitude, scale: p, shift: 1, label: "t")
    // Horner: P(t) = t (b1 + t (b2 + t (b3 + t (b4 + t b5)))).
    var polynomial = try linear(t, b[4], b[3], label: "horner")
    for coefficient in [b[2], b[1], b[0]] {
      polynomial = try linear(try multiply(polynomial, t, label: "horner"), 1, coefficient, label: "horner")
    }
    polynomial = try multiply(polynomial, t, label: "polynomial")
    let square = try multiply(magnitude, magnitude, label: "square")
    let density = unary(.exp, square, scale: -0.5, label: "exp")
    let tail = try multiply(density, polynomial, label: "tail")
    // 0.5 - phi(|x|) P(t), with phi's 1 / sqrt(2 pi) folded in.
    let centred = try linear(tail, -1 / (2 * Float.pi).squareRoot(), 0.5, label: "centred")
    let odd = try multiply(magnitude, centred, label: "odd")
    let half = try linear(input, 0.5, 0, label: "half")
    try add(half, odd, output: output)
  }
}
