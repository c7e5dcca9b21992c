import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import Testing

/// Operations on the channels of an image that the classic format has no layer of their own for, written
/// as the classic layers that compute them (as Apple's NeuralNetwork.proto documents those), read back by
/// the reader and verified against the IR graph.
@Suite struct ClassicChannelLayerTests {
  static func written(_ graph: Graph) throws -> (spec: CoreMLModelSpec, report: ParityReport) {
    let bytes = try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions())
    let spec = try CoreMLSpecReader.read(bytes, path: "model.mlmodel")
    let model = try CoreMLGraphImporter.importModel(spec, path: "model.mlmodel")
    let report = try ParityVerifier.verify(
      source: graph, converted: model, sourceName: "graph", convertedName: "model.mlmodel",
      options: VerificationOptions(samples: 4))
    return (spec, report)
  }

  /// A channel shuffle of `[H, W, C]` (the blob `[1, C, H, W]`): a CHANNEL_FIRST reshape to `[Seq = 3, C / 3,
  /// H, W]`, a permute swapping Seq and C, a CHANNEL_FIRST reshape back to `[1, C, H, W]`.
  @Test func imageChannelShuffleIsReshapePermuteReshape() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 4, 6]))
    let mixed = try builder.add(.channelShuffle(axis: 2, groups: 3), name: "shuffle", inputs: [x])
    let out = try builder.add(.activation(.relu), name: "out", inputs: [mixed])
    let (spec, report) = try Self.written(builder.build(outputs: [out]))
    #expect(spec.layers.map(\.kind) == ["reshape", "permute", "reshape", "activation.ReLU"])
    func reshape(_ layer: CoreMLModelSpec.Layer) -> ReshapeParameters? {
      if case .reshape(let p) = layer.parameters { return p } else { return nil }
    }
    let split = try #require(reshape(spec.layers[0]))
    let merge = try #require(reshape(spec.layers[2]))
    #expect(split.targetShape == [3, 2, 3, 4] && split.mode == .known(.channelFirst))
    #expect(spec.layers[1].permute?.axis == [1, 0, 2, 3])
    #expect(merge.targetShape == [1, 6, 3, 4] && merge.mode == .known(.channelFirst))
    #expect(report.passed, "\(report.outputs)")
  }

  /// A vector's shuffle is the same layers on the blob `[1, C, 1, 1]`.
  @Test func vectorChannelShuffle() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([8]))
    let mixed = try builder.add(.channelShuffle(axis: 0, groups: 2), name: "shuffle", inputs: [x])
    let (spec, report) = try Self.written(builder.build(outputs: [mixed]))
    #expect(spec.layers.map(\.kind) == ["reshape", "permute", "reshape"])
    #expect(report.passed, "\(report.outputs)")
  }

  /// A shuffle of H or W has no rank-5 spelling: a rank-N network (reshapes and a transpose, verified),
  /// or for an iOS 12 target the refusal by name.
  @Test func spatialShuffleIsRankNOrRefused() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6, 4, 3]))
    let mixed = try builder.add(.channelShuffle(axis: 0, groups: 2), name: "shuffle", inputs: [x])
    let graph = builder.build(outputs: [mixed])
    let (spec, report) = try Self.written(graph)
    #expect(spec.exactArrayMapping && spec.layers.contains { $0.kind == "transpose" }, "\(spec.layers.map(\.kind))")
    #expect(report.passed, "\(report.outputs)")
    #expect(
      throws: CoreMLWriterError.unsupportedOperation(
        layer: "shuffle",
        detail:
          "a channel shuffle of axis 0 of [6, 4, 3] (classic layers shuffle the channels of a vector or an image only)")
    ) {
      _ = try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions(target: DeploymentTarget.parse("iOS12")))
    }
  }

  /// A dense layer over the channels of an image (ConvNeXt's Linear on NHWC) is a 1x1 convolution: Core ML's
  /// `[out, in, 1, 1]` weights are the dense kernel `[in, out]` transposed.
  @Test func denseOnImageIsOneByOneConvolution() throws {
    let (inputs, units) = (5, 2)
    let kernel = (0..<(inputs * units)).map { Float($0) / 4 - 1 }
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([3, 4, inputs]))
    let dense = Dense(
      kernel: Constant(shape: [inputs, units], values: kernel), bias: Constant(shape: [units], values: [0.5, -0.25]))
    let out = try builder.add(.dense(dense), name: "dense", inputs: [x])
    let (spec, report) = try Self.written(builder.build(outputs: [out]))
    #expect(spec.layers.map(\.kind) == ["convolution"])
    let conv = try #require(spec.layers[0].convolution)
    #expect(
      conv.kernelSize == [1, 1] && conv.outputChannels == units && conv.kernelChannels == inputs && conv.nGroups == 1)
    #expect(conv.weights == (0..<units).flatMap { o in (0..<inputs).map { i in kernel[i * units + o] } })
    #expect(conv.bias == [0.5, -0.25])
    #expect(report.passed, "\(report.outputs)")
  }

  /// A layer normalization of epsilon 0 (a fused chain without its `+ epsilon`): Core ML reads a unary
  /// epsilon of 0 as 1e-6, so the RSQRT layer holds the smallest normal float instead.
  @Test func layerNormalizationWithoutEpsilon() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4]))
    let out = try builder.add(
      .layerNormalization(LayerNormalization(gamma: nil, beta: nil, epsilon: 0)), name: "norm", inputs: [x])
    let (spec, report) = try Self.written(builder.build(outputs: [out]))
    let rsqrt = try #require(spec.layers.first { $0.unary != nil }?.unary)
    #expect(rsqrt.epsilon == Float.leastNormalMagnitude)
    #expect(report.passed, "\(report.outputs)")
  }
}
