import CoreMLCommon
import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import Testing

@testable import CoreMLNeuralNetworkWriter

/// The rank-N classic network (`RankNLowering`): each IR operation the ML Program writer emits, lowered to
/// specification-4 layers, read back with Apple's rank-N rules and run by the reference runtime, computes
/// what the IR computes (`ParityVerifier` against the graph itself).
@Suite struct RankNNetworkTests {
  static func values(_ count: Int, seed: Int) -> [Float] {
    (0..<count).map { Float(((($0 + 1) * 7919 + seed * 104_729) % 2001) - 1000) / 1000 }
  }

  static func constant(_ shape: [Int], seed: Int) -> Constant {
    Constant(shape: shape, values: values(shape.reduce(1, *), seed: seed))
  }

  /// The graph written as a rank-N network, read back, and the parity report against the graph.
  static func written(_ graph: Graph, options: CoreMLWriterOptions = CoreMLWriterOptions()) throws -> (
    CoreMLModelSpec, ParityReport
  ) {
    let (specification, _, _, _) = try CoreMLWriter.streamed(graph, options: options, rankN: true)
    let spec = try CoreMLSpecReader.read(specification.bytes(), path: "rank_n.mlmodel")
    let model = try CoreMLGraphImporter.importModel(spec, path: "rank_n.mlmodel")
    let report = try ParityVerifier.verify(
      source: graph, converted: model, sourceName: "graph", convertedName: "rank_n.mlmodel",
      options: VerificationOptions(samples: 3))
    return (spec, report)
  }

  /// One operation on an image `[4, 5, 6]` (channels last; the network's blob is `[1, 6, 4, 5]`).
  static let imageOperations: [(String, ModelIR.Operation)] = [
    ("relu", .activation(.relu)), ("sigmoid", .activation(.sigmoid)), ("tanh", .activation(.tanh)),
    ("softplus", .activation(.softplus)), ("softsign", .activation(.softsign)), ("elu", .activation(.elu(alpha: 0.7))),
    ("leaky", .activation(.leakyReLU(alpha: 0.2))), ("linear", .activation(.linear(scale: 1.5, offset: -0.25))),
    ("hard_sigmoid", .activation(.hardSigmoid(slope: 0.2, offset: 0.5))),
    ("gelu", .activation(.gelu(approximate: false))),
    ("gelu_tanh", .activation(.gelu(approximate: true))), ("swish", .activation(.swish)),
    ("exp", .activation(.exponential)),
    ("clip", .activation(.clip(min: -0.3, max: 0.4))),
    ("relu6", .activation(.clippedReLU(maxValue: 0.5, negativeSlope: 0, threshold: 0))),
    ("selu", .activation(.selu)),
    (
      "conv",
      .convolution2D(
        Convolution2D(
          kernel: constant([3, 3, 6, 4], seed: 1), bias: constant([4], seed: 2), strides: [1, 1], dilations: [1, 1],
          padding: .same, groups: 1))
    ),
    (
      "conv_strided",
      .convolution2D(
        Convolution2D(
          kernel: constant([2, 3, 3, 6], seed: 3), bias: nil, strides: [2, 2], dilations: [1, 1], padding: .valid,
          groups: 2))
    ),
    ("max_pool", .pooling2D(Pooling2D(kind: .max, pool: [2, 2], strides: [2, 2], padding: .same))),
    ("avg_pool", .pooling2D(Pooling2D(kind: .average, pool: [3, 3], strides: [1, 1], padding: .same))),
    (
      "batch_norm",
      .batchNormalization(
        BatchNormalization(
          gamma: constant([6], seed: 4), beta: constant([6], seed: 5), mean: constant([6], seed: 6),
          variance: Constant(shape: [6], values: [0.5, 1, 1.5, 2, 0.75, 1.25]), epsilon: 1e-3))
    ),
    (
      "layer_norm",
      .layerNormalization(
        LayerNormalization(gamma: constant([6], seed: 7), beta: constant([6], seed: 8), epsilon: 1e-5))
    ),
    ("dense", .dense(Dense(kernel: constant([6, 3], seed: 9), bias: constant([3], seed: 10)))),
    ("softmax", .softmax(axis: 2)), ("softmax_h", .softmax(axis: 0)),
    ("mean", .reduce(Reduction(kind: .mean, axes: [0, 1], keepDims: true))),
    ("sum", .reduce(Reduction(kind: .sum, axes: [2], keepDims: false))),
    ("max", .reduce(Reduction(kind: .max, axes: [1], keepDims: false))),
    ("min", .reduce(Reduction(kind: .min, axes: [0], keepDims: true))),
    ("reshape", .reshape(targetShape: [20, 6])), ("flatten", .flatten), ("permute", .permute(order: [2, 0, 1])),
    ("slice", .slice(StridedSlice(begin: [1, 0, 2], end: [4, 5, 6], strides: [1, 2, 1]))),
    ("pad", .constantPad(ConstantPadding(before: [1, 0, 0], after: [0, 2, 0], value: -0.5))),
    // A deconvolution whose crop (TensorFlow's same padding: 1 row and column before, 0 after) is its
    // explicit padding amounts, and whose valid output is the whole scatter.
    (
      "conv_transpose_same",
      .convolutionTranspose(
        ConvolutionTranspose(
          kernel: constant([3, 3, 2, 6], seed: 16), bias: constant([2], seed: 17), strides: [2, 2], padding: .same,
          outputSize: [8, 10]))
    ),
    (
      "conv_transpose_valid",
      .convolutionTranspose(
        ConvolutionTranspose(
          kernel: constant([2, 3, 3, 6], seed: 18), bias: nil, strides: [1, 2], padding: .valid, outputSize: [5, 11]))
    ),
    ("upsample_nearest", .upsampling2D(height: 2, width: 3, mode: .nearest)),
    ("upsample_bilinear", .upsampling2D(height: 2, width: 2, mode: .bilinear)),
    ("upsample_align_corners", .upsampling2D(height: 3, width: 2, mode: .bilinearAlignCorners)),
    ("upsample_asymmetric", .upsampling2D(height: 2, width: 2, mode: .bilinearAsymmetric)),
  ]

  @Test(arguments: imageOperations.map(\.0))
  func imageOperationComputesWhatTheGraphDoes(_ name: String) throws {
    let operation = Self.imageOperations.first { $0.0 == name }!.1
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([4, 5, 6]))
    let y = try builder.add(operation, name: name, inputs: [x])
    let (spec, report) = try Self.written(builder.build(outputs: [y]))
    #expect(spec.specificationVersion >= 4 && spec.exactArrayMapping)
    #expect(report.passed, "\(name): \(spec.layers.map(\.kind)) \(report.outputs)")
  }

  /// Element-wise operations of two computed tensors, one broadcast, and a select.
  @Test(arguments: [
    ElementwiseKind.add, .subtract, .multiply, .divide, .maximum, .minimum, .greaterThan, .lessEqual, .equal,
  ])
  func elementwiseOfTwoTensors(_ kind: ElementwiseKind) throws {
    var builder = GraphBuilder()
    let a = try builder.addInput(name: "a", type: TensorType([3, 4]))
    let b = try builder.addInput(name: "b", type: TensorType([1, 4]))
    let y = try builder.add(.elementwise(kind), name: "y", inputs: [a, b])
    let (spec, report) = try Self.written(builder.build(outputs: [y]))
    #expect(report.passed, "\(kind): \(spec.layers.map(\.kind)) \(report.outputs)")
  }

  /// Products of two computed tensors with broadcast batch axes, concatenation and a constant operand.
  @Test func productsConcatenationAndConstants() throws {
    var builder = GraphBuilder()
    let a = try builder.addInput(name: "a", type: TensorType([2, 3, 4]))
    let b = try builder.addInput(name: "b", type: TensorType([1, 4, 5]))
    let product = try builder.add(.matMul, name: "product", inputs: [a, b])
    let bias = try builder.add(.constant(Self.constant([1, 1, 5], seed: 11)), name: "bias", inputs: [])
    let shifted = try builder.add(.elementwise(.add), name: "shifted", inputs: [product, bias])
    let joined = try builder.add(.concatenate(axis: 1), name: "joined", inputs: [shifted, shifted])
    let (spec, report) = try Self.written(builder.build(outputs: [joined]))
    #expect(
      spec.layers.contains { $0.kind == "batchedMatmul" } && spec.layers.contains { $0.kind == "loadConstantND" },
      "\(spec.layers.map(\.kind))")
    #expect(report.passed, "\(report.outputs)")
  }

  /// A batch normalization of a rank-4 IR value (`[T, H, W, C]`, MIL's rank-5 `[1, C, T, H, W]`) goes
  /// through `[1, C, T * H, W]`, where the classic layer normalizes axis -3.
  @Test func batchNormalizationOfARank5Tensor() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([2, 3, 4, 5]))
    let norm = BatchNormalization(
      gamma: Self.constant([5], seed: 12), beta: Self.constant([5], seed: 13), mean: Self.constant([5], seed: 14),
      variance: Constant(shape: [5], values: [0.5, 1, 1.5, 2, 3]), epsilon: 1e-5)
    let y = try builder.add(.batchNormalization(norm), name: "bn", inputs: [x])
    let (spec, report) = try Self.written(builder.build(outputs: [y]))
    #expect(spec.layers.contains { $0.kind == "batchnorm" }, "\(spec.layers.map(\.kind))")
    #expect(report.passed, "\(report.outputs)")
  }

  /// An image classifier: the image mapping is RANK4 (`[1, C, H, W]`), the scaler is the network's
  /// preprocessing, and the probabilities are reshaped to the `[N]` vector the classifier reads.
  @Test func anImageClassifier() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "image", type: TensorType([4, 4, 3]))
    let pooled = try builder.add(.globalPooling2D(kind: .average, keepDims: false), name: "pool", inputs: [x])
    let logits = try builder.add(
      .dense(Dense(kernel: Self.constant([3, 2], seed: 15), bias: nil)), name: "logits", inputs: [pooled])
    let probabilities = try builder.add(.softmax(axis: 0), name: "probabilities", inputs: [logits])
    let graph = builder.build(outputs: [probabilities])
    let options = CoreMLWriterOptions(
      imageInputs: ["image": ImagePreprocessing(scale: 1 / 255, redBias: -0.5, greenBias: -0.25, blueBias: 0)],
      classifier: ClassifierSettings(labels: .strings(["a", "b"])))
    let (specification, _, _, _) = try CoreMLWriter.streamed(graph, options: options, rankN: true)
    let spec = try CoreMLSpecReader.read(specification.bytes(), path: "classifier.mlmodel")
    #expect(
      spec.modelType == "neuralNetworkClassifier" && spec.rank4ImageMapping && spec.stringClassLabels == ["a", "b"])
    #expect(spec.layers.last?.kind == "reshapeStatic" && spec.layers.last?.outputs == [graph[probabilities].name])
    #expect(spec.preprocessing.first?.channelScale == 1 / 255 && spec.preprocessing.first?.redBias == -0.5)
    // The image reaches the network as [1, 3, 4, 4], scaled and biased.
    let model = try CoreMLGraphImporter.importModel(spec, path: "classifier.mlmodel")
    #expect(model.inputs.map(\.shape) == [[1, 3, 4, 4]])
  }
}
