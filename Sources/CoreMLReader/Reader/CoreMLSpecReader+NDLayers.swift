import CProtobufC
import CoreMLCommon
import CoreMLSpec

extension CoreMLSpecReader {
  /// Decodes one weight blob: the field's name (for errors), its message, and the number of values the layer needs when known.
  typealias WeightDecoder = (String, UnsafeMutablePointer<CoreML__Specification__WeightParams>?, Int?) throws ->
    [Float]?

  /// The parameters of the layers added with Core ML 3 (spec 4+) that the reader decodes; nil for other layers.
  static func ndParameters(_ l: CoreML__Specification__NeuralNetworkLayer, decode: WeightDecoder) throws
    -> CoreMLLayerParameters?
  {
    func flags(_ pointer: UnsafeMutablePointer<protobuf_c_boolean>?, _ count: Int) -> [Bool] {
      buffer(pointer, count).map { $0 != 0 }
    }
    func signed(_ pointer: UnsafeMutablePointer<Int64>?, _ count: Int) -> [Int] {
      buffer(pointer, count).map { Int($0) }
    }

    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CLIP:
      return .clip(ClipParameters(minVal: l.clip?.pointee.minval ?? 0, maxVal: l.clip?.pointee.maxval ?? 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SIN: return .elementwiseMath(.sin)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_COS: return .elementwiseMath(.cos)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLOOR: return .elementwiseMath(.floor)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CEIL: return .elementwiseMath(.ceil)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CLAMPED_RE_LU:
      return .clampedReLU(
        ClampedReLUParameters(alpha: l.clampedrelu?.pointee.alpha ?? 0, beta: l.clampedrelu?.pointee.beta ?? 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EQUAL:
      return .comparison(.equal, alpha: l.equal?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_NOT_EQUAL:
      return .comparison(.notEqual, alpha: l.notequal?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LESS_THAN:
      return .comparison(.lessThan, alpha: l.lessthan?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LESS_EQUAL:
      return .comparison(.lessEqual, alpha: l.lessequal?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GREATER_THAN:
      return .comparison(.greaterThan, alpha: l.greaterthan?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GREATER_EQUAL:
      return .comparison(.greaterEqual, alpha: l.greaterequal?.pointee.alpha ?? 0)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD_BROADCASTABLE: return .broadcastable(.add)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SUBTRACT_BROADCASTABLE: return .broadcastable(.subtract)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY_BROADCASTABLE: return .broadcastable(.multiply)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_DIVIDE_BROADCASTABLE: return .broadcastable(.divide)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MAX_BROADCASTABLE: return .broadcastable(.max)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MIN_BROADCASTABLE: return .broadcastable(.min)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POW_BROADCASTABLE: return .broadcastable(.pow)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_WHERE_BROADCASTABLE: return .broadcastable(.where)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_TILE:
      return .tile(TileParameters(reps: l.tile.map { ints($0.pointee.reps, $0.pointee.n_reps) } ?? []))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX_ND:
      return .softmaxND(SoftmaxNDParameters(axis: Int(l.softmaxnd?.pointee.axis ?? 0)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT_ND:
      return .concatND(
        ConcatNDParameters(
          axis: Int(l.concatnd?.pointee.axis ?? 0), interleave: (l.concatnd?.pointee.interleave ?? 0) != 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_TRANSPOSE:
      return .transpose(TransposeParameters(axes: l.transpose.map { ints($0.pointee.axes, $0.pointee.n_axes) } ?? []))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE_STATIC:
      return .reshapeStatic(
        ReshapeStaticParameters(
          targetShape: l.reshapestatic.map { signed($0.pointee.targetshape, $0.pointee.n_targetshape) } ?? []))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN_TO2_D:
      return .flattenTo2D(FlattenTo2DParameters(axis: Int(l.flattento2d?.pointee.axis ?? 0)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SQUEEZE:
      guard let q = l.squeeze?.pointee else { return .squeeze(SqueezeParameters()) }
      return .squeeze(SqueezeParameters(axes: signed(q.axes, q.n_axes), squeezeAll: q.squeezeall != 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EXPAND_DIMS:
      return .expandDims(
        ExpandDimsParameters(axes: l.expanddims.map { signed($0.pointee.axes, $0.pointee.n_axes) } ?? []))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LAYER_NORMALIZATION:
      var p = LayerNormalizationParameters()
      guard let n = l.layernormalization?.pointee else { return .layerNormalization(p) }
      let shape = buffer(n.normalizedshape, n.n_normalizedshape)
      p.normalizedShape = shape.map { Int(clamping: $0) }
      p.epsilon = n.eps
      let count = shape.allSatisfy({ $0 > 0 }) ? product(shape.map { UInt64($0) }) : nil
      p.gamma = try decode("gamma", n.gamma, count)
      p.beta = try decode("beta", n.beta, count)
      return .layerNormalization(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHED_MATMUL:
      var p = BatchedMatMulParameters()
      guard let b = l.batchedmatmul?.pointee else { return .batchedMatmul(p) }
      (p.transposeA, p.transposeB, p.hasBias, p.int8DynamicQuantize) = (
        b.transposea != 0, b.transposeb != 0, b.hasbias != 0, b.int8dynamicquantize != 0
      )
      (p.weightMatrixFirstDimension, p.weightMatrixSecondDimension) =
        (Int(clamping: b.weightmatrixfirstdimension), Int(clamping: b.weightmatrixseconddimension))
      p.weights = try decode(
        "weights", b.weights, product([b.weightmatrixfirstdimension, b.weightmatrixseconddimension]))
      p.bias = try decode("bias", b.bias, product([b.weightmatrixseconddimension]))
      return .batchedMatmul(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT_ND:
      var p = LoadConstantParameters()
      if let c = l.loadconstantnd?.pointee {
        p.shape = ints(c.shape, c.n_shape)
        p.data = try decode("data", c.data, product(buffer(c.shape, c.n_shape)))
      }
      return .loadConstantND(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE_STATIC:
      var p = SliceStaticParameters()
      guard let c = l.slicestatic?.pointee else { return .sliceStatic(p) }
      (p.beginIds, p.beginMasks) = (signed(c.beginids, c.n_beginids), flags(c.beginmasks, c.n_beginmasks))
      (p.endIds, p.endMasks) = (signed(c.endids, c.n_endids), flags(c.endmasks, c.n_endmasks))
      (p.strides, p.squeezeMasks) = (signed(c.strides, c.n_strides), flags(c.squeezemasks, c.n_squeezemasks))
      return .sliceStatic(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONSTANT_PAD:
      var p = ConstantPadParameters()
      if let c = l.constantpad?.pointee {
        (p.padAmounts, p.padToGivenOutputSizeMode, p.value) = (
          ints(c.padamounts, c.n_padamounts), c.padtogivenoutputsizemode != 0, c.value
        )
      }
      return .constantPad(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MEAN:
      return .reduceND(
        .mean,
        reduction(l.reducemean.map { ($0.pointee.axes, $0.pointee.n_axes, $0.pointee.keepdims, $0.pointee.reduceall) }))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MAX:
      return .reduceND(
        .max,
        reduction(l.reducemax.map { ($0.pointee.axes, $0.pointee.n_axes, $0.pointee.keepdims, $0.pointee.reduceall) }))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MIN:
      return .reduceND(
        .min,
        reduction(l.reducemin.map { ($0.pointee.axes, $0.pointee.n_axes, $0.pointee.keepdims, $0.pointee.reduceall) }))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_SUM:
      return .reduceND(
        .sum,
        reduction(l.reducesum.map { ($0.pointee.axes, $0.pointee.n_axes, $0.pointee.keepdims, $0.pointee.reduceall) }))
    default: return nil
    }
  }

  /// The four ND reduction messages have the same fields: axes, keepDims, reduceAll.
  private static func reduction(
    _ fields: (
      axes: UnsafeMutablePointer<Int64>?, count: Int, keepDims: protobuf_c_boolean, reduceAll: protobuf_c_boolean
    )?
  ) -> ReduceNDParameters {
    var p = ReduceNDParameters()
    guard let fields else { return p }
    p.axes = buffer(fields.axes, fields.count).map { Int($0) }
    (p.keepDims, p.reduceAll) = (fields.keepDims != 0, fields.reduceAll != 0)
    return p
  }
}
