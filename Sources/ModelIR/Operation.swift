/// One computation in a graph, with its typed attributes and constants.
///
/// Axes are counted without the batch dimension, channels-last (see `ModelIRDocumentation`).
public enum Operation: Sendable, Equatable {
  case convolution2D(Convolution2D)
  case convolutionTranspose(ConvolutionTranspose)
  case dense(Dense)
  case batchNormalization(BatchNormalization)
  case activation(Activation)
  /// Softmax along one axis.
  case softmax(axis: Int)
  case pooling2D(Pooling2D)
  /// Pooling over all of `H` and `W`; the result is `[C]`, or `[1, 1, C]` with `keepDims`.
  case globalPooling2D(kind: PoolingKind, keepDims: Bool)
  /// Row-major flattening of a channels-last tensor into `[H * W * C]`.
  case flatten
  /// Row-major reshape of a channels-last tensor.
  case reshape(targetShape: [Int])
  /// Output axis `i` is input axis `order[i]`.
  case permute(order: [Int])
  /// ShuffleNet's channel shuffle of axis `axis`: its `C = groups * n` entries, read as a `[groups, n]`
  /// matrix, are written transposed, so output entry `j * groups + i` is input entry `i * n + j` (a
  /// reshape to `[..., groups, n, ...]`, a swap of those two axes, a reshape back).
  case channelShuffle(axis: Int, groups: Int)
  case zeroPadding2D(Box2D)
  case cropping2D(Box2D)
  /// Upsampling by integer factors: nearest neighbour, or bilinear sampling as `mode` says.
  case upsampling2D(height: Int, width: Int, mode: UpsamplingMode)
  case elementwise(ElementwiseKind)
  case concatenate(axis: Int)
  /// A constant tensor (no inputs).
  case constant(Constant)
  case reduce(Reduction)
  case constantPad(ConstantPadding)
  case slice(StridedSlice)
  case recurrent(Recurrent)
  /// Row lookup: `[T]` indices into a `[vocabulary, D]` table give `[T, D]`.
  case embedding(table: Constant)
  case layerNormalization(LayerNormalization)
  case localResponseNormalization(LocalResponseNormalization)
  /// `x / sqrt(sum(x^2) + epsilon)` along the last axis (Keras' UnitNormalization, Core ML's l2normalize).
  case l2Normalize(epsilon: Float)
  /// The dot product of two vectors as a `[1]` tensor; with `cosine`, of the vectors scaled to unit length.
  case dot(cosine: Bool)
  /// The matrix product of two computed tensors over their last two axes, `[..., M, K] · [..., K, N]`
  /// to `[..., M, N]`, the leading (batch) axes broadcast as numpy does; both ranks 2 or more.
  case matMul
  /// Runs code the app provides; the reference runtime cannot evaluate it.
  case custom(CustomLayer)
  /// The same values stored as another element type (rounded to float16, or widened back to float32).
  case cast(DataType)

  /// A short name for summaries and errors.
  public var kindName: String {
    switch self {
    case .convolution2D: return "convolution2D"
    case .convolutionTranspose: return "convolutionTranspose"
    case .dense: return "dense"
    case .batchNormalization: return "batchNormalization"
    case .activation: return "activation"
    case .softmax: return "softmax"
    case .pooling2D: return "pooling2D"
    case .globalPooling2D: return "globalPooling2D"
    case .flatten: return "flatten"
    case .reshape: return "reshape"
    case .permute: return "permute"
    case .channelShuffle: return "channelShuffle"
    case .zeroPadding2D: return "zeroPadding2D"
    case .cropping2D: return "cropping2D"
    case .upsampling2D: return "upsampling2D"
    case .elementwise(let kind): return kind.rawValue
    case .concatenate: return "concatenate"
    case .constant: return "constant"
    case .reduce(let r): return "reduce." + r.kind.rawValue
    case .constantPad: return "constantPad"
    case .slice: return "slice"
    case .recurrent: return "recurrent"
    case .embedding: return "embedding"
    case .l2Normalize: return "l2Normalize"
    case .layerNormalization: return "layerNormalization"
    case .localResponseNormalization: return "localResponseNormalization"
    case .dot: return "dot"
    case .matMul: return "matMul"
    case .custom(let layer): return "custom." + layer.className
    case .cast(let type): return "cast." + type.rawValue
    }
  }

  /// The constants the operation holds, for parameter counts and precision checks.
  public var constants: [Constant] {
    switch self {
    case .convolution2D(let c): return [c.kernel] + (c.bias.map { [$0] } ?? [])
    case .dense(let d): return [d.kernel] + (d.bias.map { [$0] } ?? [])
    case .convolutionTranspose(let c): return [c.kernel] + (c.bias.map { [$0] } ?? [])
    case .batchNormalization(let b): return [b.gamma, b.beta, b.mean, b.variance]
    case .activation(.parametricReLU(let alpha)): return [alpha]
    case .constant(let value): return [value]
    case .embedding(let table): return [table]
    case .custom(let layer): return layer.weights
    case .layerNormalization(let norm): return [norm.gamma, norm.beta].compactMap { $0 }
    case .recurrent(let r):
      return [r.forward, r.backward].compactMap { $0 }.flatMap {
        [$0.kernel, $0.recurrentKernel] + ($0.bias.map { [$0] } ?? [])
      }
    default: return []
    }
  }
}
