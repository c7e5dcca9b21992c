import CoreMLCommon
import CProtobufC
import CoreMLSpec

extension CoreMLSpecReader {
  typealias WeightDecoder = (String, UnsafeMutablePointer<CoreML__Specification__WeightParams>?, Int?) throws -> DecodedWeights?

  /// Decodes the parameters of the layers added with Core ML 3 (spec 4+) and the few classic ones
  /// `layer(_:path:)` leaves out. Layers with no parameters of interest keep empty dictionaries.
  static func decodeNDLayer(_ l: CoreML__Specification__NeuralNetworkLayer, into result: inout CoreMLModelSpec.Layer, decode: WeightDecoder) throws {
    func weight(_ name: String, _ params: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, _ count: Int?) throws {
      guard let decoded = try decode(name, params, count) else { return }
      result.weights[name] = decoded.values
      result.usesFloat16 = result.usesFloat16 || decoded.half
      result.quantizationBits = max(result.quantizationBits, decoded.bits)
    }
    func flags(_ pointer: UnsafeMutablePointer<protobuf_c_boolean>?, _ count: Int) -> [Int] { buffer(pointer, count).map { Int($0) } }
    func signed(_ pointer: UnsafeMutablePointer<Int64>?, _ count: Int) -> [Int] { buffer(pointer, count).map { Int($0) } }

    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ADD: result.floats["alpha"] = l.add.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MULTIPLY: result.floats["alpha"] = l.multiply.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT:
      let c = l.loadconstant.pointee
      result.integers["shape"] = ints(c.shape, c.n_shape)
      try weight("data", c.data, nil)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CLIP:
      result.floats = ["minVal": l.clip.pointee.minval, "maxVal": l.clip.pointee.maxval]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CLAMPED_RE_LU:
      result.floats = ["alpha": l.clampedrelu.pointee.alpha, "beta": l.clampedrelu.pointee.beta]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EQUAL: result.floats["alpha"] = l.equal.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_NOT_EQUAL: result.floats["alpha"] = l.notequal.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LESS_THAN: result.floats["alpha"] = l.lessthan.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LESS_EQUAL: result.floats["alpha"] = l.lessequal.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GREATER_THAN: result.floats["alpha"] = l.greaterthan.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GREATER_EQUAL: result.floats["alpha"] = l.greaterequal.pointee.alpha
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_TILE: result.integers["reps"] = ints(l.tile.pointee.reps, l.tile.pointee.n_reps)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX_ND: result.integers["axis"] = [Int(l.softmaxnd.pointee.axis)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT_ND:
      result.integers = ["axis": [Int(l.concatnd.pointee.axis)], "interleave": [Int(l.concatnd.pointee.interleave)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_TRANSPOSE:
      result.integers["axes"] = ints(l.transpose.pointee.axes, l.transpose.pointee.n_axes)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE_STATIC:
      result.integers["targetShape"] = signed(l.reshapestatic.pointee.targetshape, l.reshapestatic.pointee.n_targetshape)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN_TO2_D: result.integers["axis"] = [Int(l.flattento2d.pointee.axis)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SQUEEZE:
      let q = l.squeeze.pointee
      result.integers = ["axes": signed(q.axes, q.n_axes), "squeezeAll": [Int(q.squeezeall)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EXPAND_DIMS:
      result.integers["axes"] = signed(l.expanddims.pointee.axes, l.expanddims.pointee.n_axes)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHED_MATMUL:
      let b = l.batchedmatmul.pointee
      let (rows, columns) = (Int(clamping: b.weightmatrixfirstdimension), Int(clamping: b.weightmatrixseconddimension))
      result.integers = [
        "transposeA": [Int(b.transposea)], "transposeB": [Int(b.transposeb)], "weightMatrixFirstDimension": [rows],
        "weightMatrixSecondDimension": [columns], "hasBias": [Int(b.hasbias)], "int8DynamicQuantize": [Int(b.int8dynamicquantize)],
      ]
      try weight("weights", b.weights, product([b.weightmatrixfirstdimension, b.weightmatrixseconddimension]))
      try weight("bias", b.bias, product([b.weightmatrixseconddimension]))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LOAD_CONSTANT_ND:
      let c = l.loadconstantnd.pointee
      result.integers["shape"] = ints(c.shape, c.n_shape)
      try weight("data", c.data, product(buffer(c.shape, c.n_shape)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE_STATIC:
      let c = l.slicestatic.pointee
      result.integers = [
        "beginIds": signed(c.beginids, c.n_beginids), "beginMasks": flags(c.beginmasks, c.n_beginmasks),
        "endIds": signed(c.endids, c.n_endids), "endMasks": flags(c.endmasks, c.n_endmasks),
        "strides": signed(c.strides, c.n_strides), "squeezeMasks": flags(c.squeezemasks, c.n_squeezemasks),
      ]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONSTANT_PAD:
      let c = l.constantpad.pointee
      result.integers = ["padAmounts": ints(c.padamounts, c.n_padamounts), "padToGivenOutputSizeMode": [Int(c.padtogivenoutputsizemode)]]
      result.floats["value"] = c.value
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MEAN, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MAX,
      CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MIN, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_SUM:
      // Four messages with the same fields: axes, keepDims, reduceAll.
      let r: (axes: UnsafeMutablePointer<Int64>?, count: Int, keepDims: protobuf_c_boolean, reduceAll: protobuf_c_boolean)
      switch l.layer_case {
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MEAN: r = (l.reducemean.pointee.axes, l.reducemean.pointee.n_axes, l.reducemean.pointee.keepdims, l.reducemean.pointee.reduceall)
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MAX: r = (l.reducemax.pointee.axes, l.reducemax.pointee.n_axes, l.reducemax.pointee.keepdims, l.reducemax.pointee.reduceall)
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE_MIN: r = (l.reducemin.pointee.axes, l.reducemin.pointee.n_axes, l.reducemin.pointee.keepdims, l.reducemin.pointee.reduceall)
      default: r = (l.reducesum.pointee.axes, l.reducesum.pointee.n_axes, l.reducesum.pointee.keepdims, l.reducesum.pointee.reduceall)
      }
      result.integers = ["axes": signed(r.axes, r.count), "keepDims": [Int(r.keepDims)], "reduceAll": [Int(r.reduceAll)]]
    default: break
    }
  }
}
