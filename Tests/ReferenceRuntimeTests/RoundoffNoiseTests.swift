import ModelIR
import ReferenceRuntime
import Testing

/// Runs with float32 roundoff made visible (`RoundoffNoise`), which `verify` uses to measure how far a model's own
/// rounding moves its outputs when it compares with another framework's.
@Suite struct RoundoffNoiseTests {
  static func graph(_ shape: [Int], _ operation: Operation) throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType(shape))
    let y = try builder.add(operation, name: "op", inputs: [x])
    return builder.build(outputs: [y])
  }

  static let input = Tensor(
    shape: [96, 96, 3], values: FastKernelTests.values(96 * 96 * 3, seed: 11).map { 1_000 + 10 * $0 })

  static let dense = Operation.dense(
    Dense(kernel: Constant(shape: [3, 4], values: FastKernelTests.values(12, seed: 5)), bias: nil))

  /// The same seed gives the same run, another seed another one; without noise the run is the plain one.
  @Test func theNoiseIsSeeded() throws {
    let runtime = Interpreter(graph: try Self.graph([96, 96, 3], Self.dense))
    let plain = runtime.run([Self.input])[0].values
    let first = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 1)).outputs[0].values
    let again = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 1)).outputs[0].values
    let other = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 2)).outputs[0].values
    #expect(first == again && first != other && first != plain)
    #expect(runtime.runObserving([Self.input]).outputs[0].values == plain)
    // Relative to each value, within u · sqrt(3) of it (a product of 3 terms), plus the rounding of the sum to
    // float32 (u): signs and zeros stay.
    for (a, b) in zip(first, plain) {
      #expect(abs(a - b) <= RoundoffNoise.unit * (Float(3).squareRoot() + 1) * abs(b) * 1.0001)
      #expect((a < 0) == (b < 0))
    }
  }

  /// A mean is computed as a float32 running sum computes it (TFLite's reference kernels: one value after another
  /// per channel, here summed by hand in float32), where the plain run sums in Double; a maximum is exact.
  @Test func aMeanIsAFloat32RunningSum() throws {
    let runtime = Interpreter(graph: try Self.graph([96, 96, 3], .globalPooling2D(kind: .average, keepDims: false)))
    let plain = runtime.run([Self.input])[0].values
    let noisy = runtime.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 3)).outputs[0].values
    var running = [Float](repeating: 0, count: 3)
    for pixel in 0..<(96 * 96) {
      for c in 0..<3 { running[c] += Self.input.values[pixel * 3 + c] }
    }
    #expect(noisy == running.map { $0 / Float(96 * 96) })
    #expect(noisy != plain)
    // A MEAN over the first axis of [4, 5] adds rows in order for each column.
    let rows = Tensor(shape: [4, 5], values: FastKernelTests.values(20, seed: 9))
    let mean = Interpreter(
      graph: try Self.graph([4, 5], .reduce(Reduction(kind: .mean, axes: [0], keepDims: false))))
    let columns = (0..<5).map { c in (0..<4).reduce(Float(0)) { $0 + rows.values[$1 * 5 + c] } / 4 }
    #expect(mean.runObserving([rows], roundoffNoise: RoundoffNoise(seed: 1)).outputs[0].values == columns)
    let maximum = Interpreter(graph: try Self.graph([96, 96, 3], .globalPooling2D(kind: .max, keepDims: false)))
    #expect(
      maximum.runObserving([Self.input], roundoffNoise: RoundoffNoise(seed: 3)).outputs[0].values
        == maximum.run([Self.input])[0].values)
  }

  /// A product of n terms moves by sqrt(n) roundings; an elementwise step by one; a maximum by none.
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
