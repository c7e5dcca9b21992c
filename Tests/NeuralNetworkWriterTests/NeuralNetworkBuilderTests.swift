import CProtobufC
import CoreMLCommon
import CoreMLReader
import CoreMLSpec
import CoreMLTestSupport
import Foundation
import Testing

@testable import CoreMLNeuralNetworkWriter

/// The neural-network writer's typed builder: layers built through it, packed as the writer streams them
/// and decoded by the reader, carry the fields Apple's `NeuralNetwork.proto` defines.
@Suite struct NeuralNetworkBuilderTests {
  /// A `NeuralNetwork` model holding the builder's layers, packed layer by layer with its deferred weights
  /// (as `CoreMLWriter` does), then decoded.
  static func decoded(_ builder: NeuralNetworkBuilder) throws -> CoreMLModelSpec {
    let arena = builder.arena
    let model = arena.message(core_ml__specification__model__init)
    model.pointee.specificationversion = builder.specificationVersion
    model.pointee.description = arena.message(core_ml__specification__model_description__init)
    let network = arena.message(core_ml__specification__neural_network__init)
    model.pointee.type_case = CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK
    model.pointee.neuralnetwork = network
    let specification = StreamedSpecification(
      arena: arena, model: model, groups: [.init(layers: builder.layers, weights: builder.deferredWeights)],
      packNetwork: {
        let size = core_ml__specification__neural_network__get_packed_size(network)
        return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
          initialized = size > 0 ? core_ml__specification__neural_network__pack(network, buffer.baseAddress!) : 0
        }
      },
      setLayers: { list in
        network.pointee.n_layers = list.count
        network.pointee.layers = arena.pointerArray(list)
      })
    return try CoreMLSpecReader.read(specification.bytes())
  }

  static func ramp(_ count: Int) -> [Float] { (0..<count).map { Float($0) / 8 } }

  @Test func convolutionAndInnerProductFields() throws {
    var builder = NeuralNetworkBuilder(arena: MessageArena(), precision: .float32)
    try builder.convolution(
      "conv", input: "image", output: "features", outputChannels: 4, kernelChannels: 3, groups: 1, kernelSize: [3, 5],
      stride: [2, 1],
      dilation: [1, 2], padding: .same, weights: .values(Self.ramp(4 * 3 * 3 * 5)), bias: .values([1, 2, 3, 4]))
    try builder.convolution(
      "valid", input: "features", output: "valid_out", outputChannels: 4, kernelChannels: 1, groups: 4,
      kernelSize: [1, 1], stride: [1, 1],
      dilation: [1, 1], padding: .valid, weights: .values([1, 2, 3, 4]), bias: nil)
    try builder.innerProduct(
      "dense", input: "flat", output: "scores", inputChannels: 3, outputChannels: 2, weights: .values(Self.ramp(6)),
      bias: nil)
    #expect(builder.specificationVersion == 1)
    #expect(builder.deferredWeights.count == 4)

    let spec = try Self.decoded(builder)
    #expect(spec.specificationVersion == 1)
    #expect(spec.layers.map(\.name) == ["conv", "valid", "dense"])
    let conv = try #require(spec.layer(named: "conv"))
    #expect(conv.kind == "convolution")
    #expect(conv.inputs == ["image"] && conv.outputs == ["features"])
    let c = try #require(conv.convolution)
    #expect(c.outputChannels == 4 && c.kernelChannels == 3 && c.nGroups == 1)
    #expect(c.kernelSize == [3, 5] && c.stride == [2, 1] && c.dilationFactor == [1, 2])
    #expect(c.padding == .same(asymmetryMode: .known(.bottomRightHeavy)) && c.hasBias && !c.isDeconvolution)
    #expect(c.weights == Self.ramp(180) && c.bias == [1, 2, 3, 4])
    #expect(!conv.usesFloat16)

    let valid = try #require(spec.layer(named: "valid"))
    let v = try #require(valid.convolution)
    #expect(v.padding == .valid(paddingAmounts: [0, 0, 0, 0]))
    #expect(v.nGroups == 4 && !v.hasBias && v.bias == nil)

    let dense = try #require(spec.layer(named: "dense"))
    #expect(dense.kind == "innerProduct")
    let d = try #require(dense.innerProduct)
    #expect(d.inputChannels == 3 && d.outputChannels == 2 && !d.hasBias)
    #expect(d.weights == Self.ramp(6))
  }

  @Test func deconvolutionPoolingAndBatchnorm() throws {
    var builder = NeuralNetworkBuilder(arena: MessageArena(), precision: .float32)
    try builder.convolution(
      "deconv", input: "x", output: "up", outputChannels: 2, kernelChannels: 3, groups: 1, kernelSize: [2, 2],
      stride: [2, 2],
      dilation: [1, 1], padding: .valid, weights: .values(Self.ramp(24)), bias: .values([5, 6]),
      deconvolutionOutputShape: [8, 10])
    builder.pooling(
      .average, "pool", input: "up", output: "pooled", kernelSize: [2, 2], stride: [2, 2], padding: .same,
      global: false, averageExcludesPadding: true)
    try builder.batchnorm(
      "norm", input: "pooled", output: "normed", channels: 2, epsilon: 1e-3, gamma: .values([1, 2]),
      beta: .values([3, 4]), mean: .values([5, 6]),
      variance: .values([7, 8]))

    let spec = try Self.decoded(builder)
    let deconv = try #require(spec.layer(named: "deconv"))
    let t = try #require(deconv.convolution)
    #expect(t.isDeconvolution && t.outputShape == [8, 10])
    #expect(t.weights == Self.ramp(24) && t.bias == [5, 6])
    let pool = try #require(spec.layer(named: "pool"))
    #expect(pool.kind == "pooling")
    let p = try #require(pool.pooling)
    #expect(p.type.rawValue == Int(CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_TYPE__AVERAGE.rawValue))
    #expect(p.kernelSize == [2, 2] && p.padding == .same)
    #expect(p.avgPoolExcludePadding && !p.globalPooling)
    let norm = try #require(spec.layer(named: "norm"))
    let n = try #require(norm.batchnorm)
    #expect(n.channels == 2 && n.epsilon == 1e-3)
    // Weights are registered (and so checked and streamed) in the proto's order.
    #expect(norm.namedWeights == ["gamma": [1, 2], "beta": [3, 4], "mean": [5, 6], "variance": [7, 8]])
  }

  @Test func activationsElementwiseAndLayout() throws {
    var builder = NeuralNetworkBuilder(arena: MessageArena(), precision: .float32)
    try builder.activation(.leakyReLU(alpha: 0.3), "leaky", input: "x", output: "a")
    try builder.activation(.sigmoidHard(alpha: 0.2, beta: 0.5), "hard", input: "a", output: "b")
    try builder.activation(.preLU(alpha: .values([0.1, 0.2])), "prelu", input: "b", output: "c")
    builder.elementwise(.max, "max", inputs: ["a", "c"], output: "d")
    builder.concat("join", inputs: ["c", "d"], output: "e", sequence: true)
    builder.reshape("reshape", input: "e", output: "f", targetShape: [1, 4, 2, 3])
    builder.slice("slice", input: "f", output: "g", axis: .width, range: 1..<3)
    builder.unary(.rsqrt, "rsqrt", input: "g", output: "h", epsilon: 1e-4)
    #expect(builder.specificationVersion == 1)

    let spec = try Self.decoded(builder)
    #expect(
      spec.layers.map(\.kind) == [
        "activation.leakyReLU", "activation.sigmoidHard", "activation.PReLU", "max", "concat", "reshape", "slice",
        "unary",
      ])
    #expect(spec.layer(named: "leaky")?.activation == .leakyReLU(alpha: 0.3))
    #expect(spec.layer(named: "hard")?.activation == .sigmoidHard(alpha: 0.2, beta: 0.5))
    #expect(spec.layer(named: "prelu")?.activation == .preLU(alpha: [0.1, 0.2]))
    #expect(spec.layer(named: "max")?.inputs == ["a", "c"])
    #expect(
      spec.layer(named: "reshape").flatMap { layer -> [Int]? in
        guard case .reshape(let r) = layer.parameters else { return nil }
        return r.targetShape
      } == [1, 4, 2, 3])
    let unary = try #require(spec.layer(named: "rsqrt"))
    let u = try #require(unary.unary)
    #expect(u.type.rawValue == Int(CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__RSQRT.rawValue))
    #expect(u.scale == 1 && u.epsilon == 1e-4)
  }

  @Test func recurrentLayers() throws {
    var builder = NeuralNetworkBuilder(arena: MessageArena(), precision: .float32)
    let (inputs, units) = (3, 2)
    func matrix(_ offset: Float, _ columns: Int) -> CoreMLWeightValues {
      .values((0..<units * columns).map { offset + Float($0) })
    }
    let gru = NeuralNetworkGRUWeights(
      update: matrix(0, inputs), reset: matrix(10, inputs), output: matrix(20, inputs),
      updateRecursion: matrix(30, units), resetRecursion: matrix(40, units), outputRecursion: matrix(50, units),
      bias: (.values([1, 1]), .values([2, 2]), .values([3, 3])))
    try builder.gru(
      "gru", input: "x", outputs: ["y", "gru__h_out"], inputSize: inputs, outputSize: units,
      activations: [.sigmoid, .tanh],
      sequenceOutput: true, reverseInput: false, weights: gru)
    try builder.simpleRecurrent(
      "rnn", input: "y", outputs: ["z", "rnn__h_out"], inputSize: units, outputSize: units, activation: .relu,
      sequenceOutput: false,
      reverseInput: true, weights: matrix(60, units), recursion: matrix(70, units), bias: nil)

    let spec = try Self.decoded(builder)
    let g = try #require(spec.layer(named: "gru"))
    #expect(g.kind == "gru" && g.outputs == ["y", "gru__h_out"])
    let gruParameters = try #require(g.gru)
    #expect(gruParameters.inputVectorSize == 3 && gruParameters.outputVectorSize == 2)
    #expect(gruParameters.sequenceOutput && gruParameters.hasBiasVectors && !gruParameters.reverseInput)
    #expect(
      gruParameters.resetGate.weightMatrix == (0..<6).map { 10 + Float($0) }
        && gruParameters.outputGate.recursionMatrix == (0..<4).map { 50 + Float($0) })
    #expect(gruParameters.outputGate.biasVector == [3, 3])
    let r = try #require(spec.layer(named: "rnn"))
    guard case .simpleRecurrent(let rnn) = r.parameters else {
      Issue.record("not a simple recurrent layer")
      return
    }
    #expect(!rnn.hasBiasVector && rnn.reverseInput && !rnn.sequenceOutput)
    #expect(rnn.gate.recursionMatrix == (0..<4).map { 70 + Float($0) } && rnn.gate.biasVector == nil)
  }

  /// Each method raises the specification version its layer needs.
  @Test func specificationVersions() throws {
    var builder = NeuralNetworkBuilder(arena: MessageArena(), precision: .float32)
    builder.upsample("nearest", input: "x", output: "a", scalingFactor: [2, 2], mode: .nearestNeighbor)
    #expect(builder.specificationVersion == 1)
    try builder.custom(
      "custom", inputs: ["a"], output: "b", className: "MyLayer", description: "", weights: [],
      parameters: [("k", .int(3))])
    #expect(builder.specificationVersion == 2)
    builder.upsample("bilinear", input: "b", output: "c", scalingFactor: [2, 3], mode: .bilinearAlignCornersFalse)
    #expect(builder.specificationVersion == 5)

    let spec = try Self.decoded(builder)
    #expect(spec.specificationVersion == 5)
    #expect(spec.layer(named: "custom")?.custom?.className == "MyLayer")
    let bilinear = try #require(spec.layer(named: "bilinear"))
    let up = try #require(bilinear.upsample)
    #expect(up.scalingFactor == [2, 3])
    #expect(
      up.mode.rawValue == Int(CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__INTERPOLATION_MODE__BILINEAR.rawValue))
    #expect(
      up.linearUpsampleMode.rawValue
        == Int(CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__LINEAR_UPSAMPLE_MODE__ALIGN_CORNERS_FALSE.rawValue))
  }

  /// float16 weights need specification 2, are stored as half floats, and a value beyond float16's range
  /// is an error naming the layer.
  @Test func float16Weights() throws {
    var builder = NeuralNetworkBuilder(arena: MessageArena(), precision: .float16)
    #expect(builder.specificationVersion == 2)
    try builder.innerProduct(
      "dense", input: "x", output: "y", inputChannels: 2, outputChannels: 1, weights: .values([0.5, -2]),
      bias: .values([1]))
    let spec = try Self.decoded(builder)
    let dense = try #require(spec.layer(named: "dense"))
    #expect(dense.usesFloat16 && dense.innerProduct?.weights == [0.5, -2] && dense.innerProduct?.bias == [1])

    #expect(throws: CoreMLWriterError.self) {
      try builder.innerProduct(
        "huge", input: "y", output: "z", inputChannels: 1, outputChannels: 1, weights: .values([70000]), bias: nil)
    }
    #expect(builder.layers.count == 1)
  }
}
