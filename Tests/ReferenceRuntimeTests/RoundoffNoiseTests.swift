import ModelIR
import ReferenceRuntime
import Testing

/// Runs with float32-sized noise on every layer (`RoundoffNoise`), which `verify` uses to measure how far a model's
/// own rounding moves its outputs when it compares with another framework's.
@Suite struct RoundoffNoiseTests {
  static func mean(_ shape: [Int], kind: PoolingKind = .average) throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType(shape))
    let y = try builder.add(.globalPooling2D(kind: kind, keepDims: false), name: "pool", inputs: [x])
    return builder.build(outputs: [y])
  }

  static let input = Tensor(
    shape: [96, 96, 3], values: FastKernelTests.values(96 * 96 * 3, seed: 11).map { 1_000 + 10 * $0 })

  /// The same seed gives the same run, another seed another one; without noise the run is the plain one.
  @Test func theNoiseIsSeeded() throws {
    let runtime = Interpreter(graph: try Self.mean([96, 96, 3]))
    let plain = runtime.run([Self.input])[0].values
    let first = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 1)).outputs[0].values
    let again = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 1)).outputs[0].values
    let other = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 2)).outputs[0].values
    #expect(first == again && first != other && first != plain)
    #expect(runtime.runObserving([Self.input]).outputs[0].values == plain)
  }

  /// A mean of n values moves by at most u · n of its size, and that bound covers what a float32 running sum
  /// of the same values (one after another, as TFLite's reference MEAN sums) is off by; a maximum is exact.
  @Test func aMeansNoiseCoversAFloat32RunningSum() throws {
    let runtime = Interpreter(graph: try Self.mean([96, 96, 3]))
    let plain = runtime.run([Self.input])[0].values
    let noisy = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 3)).outputs[0].values
    let n: Float = 96 * 96
    let rms = (plain.map { $0 * $0 }.reduce(0, +) / Float(plain.count)).squareRoot()
    let bound = RoundoffNoise.unit * n * rms
    var running = [Float](repeating: 0, count: 3)
    for pixel in 0..<(96 * 96) {
      for c in 0..<3 { running[c] += Self.input.values[pixel * 3 + c] }
    }
    for c in 0..<3 {
      #expect(abs(noisy[c] - plain[c]) <= bound * 1.0001)
      #expect(abs(running[c] / n - plain[c]) <= bound)
    }
    #expect(RoundoffNoise.size(.globalPooling2D(kind: .average, keepDims: false), inputShapes: [[96, 96, 3]]) == n)
    let maximum = Interpreter(graph: try Self.mean([96, 96, 3], kind: .max))
    #expect(
      maximum.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 3)).outputs[0].values
        == maximum.run([Self.input])[0].values)
  }

  /// A product of n terms of either sign moves by sqrt(n) roundings; an elementwise step by one.
  @Test func productsMoveByTheSquareRootOfTheirTerms() {
    let conv = Convolution2D(
      kernel: Constant(shape: [3, 3, 16, 8], values: [Float](repeating: 0, count: 3 * 3 * 16 * 8)), bias: nil,
      strides: [1, 1], dilations: [1, 1], padding: .same, groups: 1)
    #expect(RoundoffNoise.size(.convolution2D(conv), inputShapes: [[8, 8, 16]]) == 12)
    #expect(RoundoffNoise.size(.matMul, inputShapes: [[4, 64], [64, 2]]) == 8)
    #expect(RoundoffNoise.size(.elementwise(.add), inputShapes: [[4], [4]]) == 1)
    #expect(RoundoffNoise.size(.reduce(Reduction(kind: .max, axes: [0], keepDims: false)), inputShapes: [[9]]) == 0)
  }
}
