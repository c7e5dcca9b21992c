import CProtobufC
import CoreMLCommon
import CoreMLSpec

/// `SliceLayerParams.SliceAxis` (the axes the emitters slice).
enum NeuralNetworkSliceAxis {
  case channel, height, width
}

/// `UpsampleLayerParams` interpolation.
enum NeuralNetworkUpsampleMode {
  case nearestNeighbor
  /// Bilinear with half-pixel centres (`ALIGN_CORNERS_FALSE`).
  case bilinearAlignCornersFalse
  /// Bilinear with the corners aligned (`ALIGN_CORNERS_TRUE`).
  case bilinearAlignCornersTrue
  /// Bilinear sampling at `i / f` (`DEFAULT`).
  case bilinearDefault
}

/// Layers that move, join, split, pad or resize blobs.
extension NeuralNetworkBuilder {
  /// CHANNEL_LAST flattening of each `[C, H, W]` blob (H-W-C element order). Specification 1.
  mutating func flatten(_ name: String, input: String, output: String) {
    let params = arena.message(core_ml__specification__flatten_layer_params__init)
    params.pointee.mode = CORE_ML__SPECIFICATION__FLATTEN_LAYER_PARAMS__FLATTEN_ORDER__CHANNEL_LAST
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN, \.flatten,
      params)
  }

  /// Reshape to `[Seq, C, H, W]`: CHANNEL_LAST (the H, W, C element order), or with `channelFirst` the
  /// row-major order of `[Seq, C, H, W]` itself. Specification 1.
  mutating func reshape(_ name: String, input: String, output: String, targetShape: [Int], channelFirst: Bool = false) {
    let params = arena.message(core_ml__specification__reshape_layer_params__init)
    params.pointee.n_targetshape = targetShape.count
    params.pointee.targetshape = arena.array(targetShape.map { Int64($0) })
    params.pointee.mode =
      channelFirst
      ? CORE_ML__SPECIFICATION__RESHAPE_LAYER_PARAMS__RESHAPE_ORDER__CHANNEL_FIRST
      : CORE_ML__SPECIFICATION__RESHAPE_LAYER_PARAMS__RESHAPE_ORDER__CHANNEL_LAST
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE, \.reshape,
      params)
  }

  /// A permutation of `[Seq, C, H, W]`. Specification 1.
  mutating func permute(_ name: String, input: String, output: String, axes: [Int]) {
    let params = arena.message(core_ml__specification__permute_layer_params__init)
    params.pointee.n_axis = axes.count
    params.pointee.axis = uint64s(axes)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PERMUTE, \.permute,
      params)
  }

  /// Concatenation along C, or along the sequence axis when `sequence`. Specification 1.
  mutating func concat(_ name: String, inputs: [String], output: String, sequence: Bool = false) {
    let params = arena.message(core_ml__specification__concat_layer_params__init)
    params.pointee.sequenceconcat = sequence ? 1 : 0
    append(
      name, inputs: inputs, outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT, \.concat,
      params)
  }

  /// Splits C into equal parts, one per output. Specification 1.
  mutating func split(_ name: String, input: String, outputs: [String]) {
    let params = arena.message(core_ml__specification__split_layer_params__init)
    params.pointee.noutputs = UInt64(outputs.count)
    append(
      name, inputs: [input], outputs: outputs, CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SPLIT, \.split,
      params)
  }

  /// The `range` of one axis, stride 1. Specification 1.
  mutating func slice(
    _ name: String, input: String, output: String, axis: NeuralNetworkSliceAxis, range: Range<Int>, stride: Int = 1
  ) {
    let params = arena.message(core_ml__specification__slice_layer_params__init)
    params.pointee.startindex = Int64(range.lowerBound)
    params.pointee.endindex = Int64(range.upperBound)
    params.pointee.stride = UInt64(stride)
    switch axis {
    case .channel: params.pointee.axis = CORE_ML__SPECIFICATION__SLICE_LAYER_PARAMS__SLICE_AXIS__CHANNEL_AXIS
    case .height: params.pointee.axis = CORE_ML__SPECIFICATION__SLICE_LAYER_PARAMS__SLICE_AXIS__HEIGHT_AXIS
    case .width: params.pointee.axis = CORE_ML__SPECIFICATION__SLICE_LAYER_PARAMS__SLICE_AXIS__WIDTH_AXIS
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE, \.slice,
      params)
  }

  /// Constant padding (zero by default) of H and W by `amounts` (`[(top, bottom), (left, right)]`). Specification 1.
  mutating func zeroPadding(
    _ name: String, input: String, output: String, amounts: [(start: Int, end: Int)], value: Float = 0
  ) {
    let params = arena.message(core_ml__specification__padding_layer_params__init)
    params.pointee.padding_type_case = CORE_ML__SPECIFICATION__PADDING_LAYER_PARAMS__PADDING_TYPE_CONSTANT
    params.pointee.constant = arena.message(core_ml__specification__padding_layer_params__padding_constant__init)
    params.pointee.constant.pointee.value = value
    params.pointee.paddingamounts = border(amounts)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PADDING, \.padding,
      params)
  }

  /// Crops H and W by `amounts` (`[(top, bottom), (left, right)]`). Specification 1.
  mutating func crop(_ name: String, input: String, output: String, amounts: [(start: Int, end: Int)]) {
    let params = arena.message(core_ml__specification__crop_layer_params__init)
    params.pointee.cropamounts = border(amounts)
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CROP, \.crop, params
    )
  }

  /// Upsampling of H and W by integer `scalingFactor`s. Specification 1 for nearest neighbour; a
  /// `linearUpsampleMode` other than DEFAULT is an iOS 14 feature, specification 5 ([rule UPSAMPLE-VERSION]).
  mutating func upsample(
    _ name: String, input: String, output: String, scalingFactor: [Int], mode: NeuralNetworkUpsampleMode
  ) {
    let params = arena.message(core_ml__specification__upsample_layer_params__init)
    params.pointee.n_scalingfactor = scalingFactor.count
    params.pointee.scalingfactor = uint64s(scalingFactor)
    switch mode {
    case .nearestNeighbor: break
    case .bilinearDefault:
      params.pointee.mode = CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__INTERPOLATION_MODE__BILINEAR
    case .bilinearAlignCornersFalse, .bilinearAlignCornersTrue:
      params.pointee.mode = CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__INTERPOLATION_MODE__BILINEAR
      params.pointee.linearupsamplemode =
        mode == .bilinearAlignCornersTrue
        ? CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__LINEAR_UPSAMPLE_MODE__ALIGN_CORNERS_TRUE
        : CORE_ML__SPECIFICATION__UPSAMPLE_LAYER_PARAMS__LINEAR_UPSAMPLE_MODE__ALIGN_CORNERS_FALSE
      requireSpecificationVersion(5)
    }
    append(
      name, inputs: [input], outputs: [output], CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UPSAMPLE,
      \.upsample, params)
  }
}
