import Foundation
import ModelIR
import Testing

@testable import ModelConverter

/// The last pass of a conversion on its own (issue 36: every pass tested alone): a check that leaves the
/// graph as it is, or stops the conversion naming the layer, the weight and the element.
@Suite struct WeightValueCheckPassTests {
  static func denseGraph(kernel: [Float], bias: [Float]) throws -> Graph {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2]))
    builder.origin = LayerOrigin(name: "fc", type: "Dense")
    let y = try builder.add(
      .dense(Dense(kernel: Constant(shape: [2, 2], values: kernel), bias: Constant(shape: [2], values: bias))),
      name: "fc", inputs: [x])
    return builder.build(outputs: [y])
  }

  @Test func usableWeightsPassUnchanged() throws {
    let graph = try Self.denseGraph(kernel: [1, -2, 3e30, -4], bias: [0, 0.5])
    var checked = graph
    let pass = WeightValueCheckPass()
    #expect(pass.isCheck && pass.name == "check-weight-values")
    try pass.run(&checked)
    #expect(checked == graph)
  }

  /// NaN, infinity, a magnitude of 2^112 or more (the hostile corpus' 9e37), and a negative variance.
  @Test(arguments: [(Float.nan, "NaN"), (-Float.infinity, "-infinity"), (Float(9e37), "2^112")])
  func unusableWeightsStopTheConversion(_ value: Float, _ said: String) throws {
    var graph = try Self.denseGraph(kernel: [1, 2, 3, 4], bias: [0, value])
    #expect {
      try WeightValueCheckPass().run(&graph)
    } throws: { error in
      guard case ConversionError.invalidWeightValue(let layer, let weight, let detail) = error else { return false }
      return layer == "fc" && weight.hasSuffix("bias") && detail.contains("element 1") && detail.contains(said)
    }
  }

  @Test func negativeVarianceStopsTheConversion() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 2, 2]))
    builder.origin = LayerOrigin(name: "bn", type: "BatchNormalization")
    let norm = BatchNormalization(
      gamma: Constant(shape: [2], values: [1, 1]), beta: Constant(shape: [2], values: [0, 0]),
      mean: Constant(shape: [2], values: [0, 0]),
      variance: Constant(shape: [2], values: [1, -0.5]), epsilon: 1e-3)
    let y = try builder.add(.batchNormalization(norm), name: "bn", inputs: [x])
    var graph = builder.build(outputs: [y])
    #expect {
      try WeightValueCheckPass().run(&graph)
    } throws: { error in
      guard case ConversionError.invalidWeightValue(let layer, let weight, let detail) = error else { return false }
      return layer == "bn" && weight == "moving_variance" && detail.contains("element 1")
    }
  }
}
