import CoreMLCommon

// Typed parameters of the classic layers that move, pad, crop or reduce blobs, and of their ND (Core ML 3) variants.

/// `FlattenLayerParams.FlattenOrder` and `ReshapeLayerParams.ReshapeOrder`.
public enum ChannelOrder: Int, Sendable, Equatable {
  case channelFirst = 0
  case channelLast = 1
}

public struct PaddingParameters: Sendable, Equatable {
  public enum PaddingType: Sendable, Equatable {
    case constant(value: Float)
    case reflection, replication
    /// The oneof is not set.
    case unset
  }
  public var type = PaddingType.unset
  /// `[startH, endH, startW, endW]`.
  public var paddingAmounts: [Int] = []
  public init() {}
}

public struct CropParameters: Sendable, Equatable {
  /// `[startH, endH, startW, endW]`.
  public var cropAmounts: [Int] = []
  public var offset: [Int] = []
  public init() {}
}

public struct UpsampleParameters: Sendable, Equatable {
  public enum InterpolationMode: Int, Sendable, Equatable {
    case nearestNeighbor = 0
    case bilinear = 1
  }
  public enum LinearUpsampleMode: Int, Sendable, Equatable {
    case standard = 0
    case alignCornersTrue = 1
    case alignCornersFalse = 2
  }
  public var scalingFactor: [Int] = []
  public var fractionalScalingFactor: [Float] = []
  public var mode = CoreMLEnumField<InterpolationMode>.known(.nearestNeighbor)
  public var linearUpsampleMode = CoreMLEnumField<LinearUpsampleMode>.known(.standard)
  public init() {}
}

public struct ReshapeParameters: Sendable, Equatable {
  public var targetShape: [Int] = []
  public var mode = CoreMLEnumField<ChannelOrder>.known(.channelFirst)
  public init() {}
}

public struct FlattenParameters: Sendable, Equatable {
  public var mode = CoreMLEnumField<ChannelOrder>.known(.channelFirst)
  public init(mode: CoreMLEnumField<ChannelOrder> = .known(.channelFirst)) { self.mode = mode }
}

public struct PermuteParameters: Sendable, Equatable {
  public var axis: [Int] = []
  public init(axis: [Int] = []) { self.axis = axis }
}

public struct ConcatParameters: Sendable, Equatable {
  public var sequenceConcat = false
  public init(sequenceConcat: Bool = false) { self.sequenceConcat = sequenceConcat }
}

public struct SplitParameters: Sendable, Equatable {
  public var nOutputs = 0
  public init(nOutputs: Int = 0) { self.nOutputs = nOutputs }
}

public struct SequenceRepeatParameters: Sendable, Equatable {
  /// 0 in the file means 1.
  public var nRepetitions = 0
  public init(nRepetitions: Int = 0) { self.nRepetitions = nRepetitions }
}

public struct ReorganizeDataParameters: Sendable, Equatable {
  public enum ReorganizationType: Int, Sendable, Equatable {
    case spaceToDepth = 0
    case depthToSpace = 1
    case pixelShuffle = 2
  }
  public var mode = CoreMLEnumField<ReorganizationType>.known(.spaceToDepth)
  public var blockSize = 0
  public init() {}
}

public struct SliceParameters: Sendable, Equatable {
  public enum SliceAxis: Int, Sendable, Equatable {
    case channel = 0
    case height = 1
    case width = 2
  }
  public var startIndex = 0
  /// Negative counts from the end (-1 keeps the last element).
  public var endIndex = 0
  /// 0 in the file means 1.
  public var stride = 0
  public var axis = CoreMLEnumField<SliceAxis>.known(.channel)
  public init() {}
}

public struct ReduceParameters: Sendable, Equatable {
  public enum ReduceOperation: Int, Sendable, Equatable {
    case sum = 0
    case avg, prod, logSum, sumSquare, l1, l2, max, min, argMax
  }
  public enum ReduceAxis: Int, Sendable, Equatable {
    case chw = 0
    case hw, c, h, w
  }
  public var mode = CoreMLEnumField<ReduceOperation>.known(.sum)
  public var epsilon: Float = 0
  public var axis = CoreMLEnumField<ReduceAxis>.known(.chw)
  public init() {}
}

// MARK: ND layers

public struct TileParameters: Sendable, Equatable {
  public var reps: [Int] = []
  public init(reps: [Int] = []) { self.reps = reps }
}

public struct SoftmaxNDParameters: Sendable, Equatable {
  public var axis = 0
  public init(axis: Int = 0) { self.axis = axis }
}

public struct ConcatNDParameters: Sendable, Equatable {
  public var axis = 0
  public var interleave = false
  public init(axis: Int = 0, interleave: Bool = false) { (self.axis, self.interleave) = (axis, interleave) }
}

public struct TransposeParameters: Sendable, Equatable {
  public var axes: [Int] = []
  public init(axes: [Int] = []) { self.axes = axes }
}

public struct ReshapeStaticParameters: Sendable, Equatable {
  public var targetShape: [Int] = []
  public init(targetShape: [Int] = []) { self.targetShape = targetShape }
}

public struct FlattenTo2DParameters: Sendable, Equatable {
  public var axis = 0
  public init(axis: Int = 0) { self.axis = axis }
}

public struct SqueezeParameters: Sendable, Equatable {
  public var axes: [Int] = []
  public var squeezeAll = false
  public init(axes: [Int] = [], squeezeAll: Bool = false) { (self.axes, self.squeezeAll) = (axes, squeezeAll) }
}

public struct ExpandDimsParameters: Sendable, Equatable {
  public var axes: [Int] = []
  public init(axes: [Int] = []) { self.axes = axes }
}

public struct SliceStaticParameters: Sendable, Equatable {
  public var beginIds: [Int] = []
  public var beginMasks: [Bool] = []
  public var endIds: [Int] = []
  public var endMasks: [Bool] = []
  public var strides: [Int] = []
  public var squeezeMasks: [Bool] = []
  public init() {}
}

public struct ConstantPadParameters: Sendable, Equatable {
  public var value: Float = 0
  /// One (before, after) pair per padded trailing axis.
  public var padAmounts: [Int] = []
  public var padToGivenOutputSizeMode = false
  public init() {}
}

public enum ReduceNDKind: Sendable, Equatable { case mean, max, min, sum }

public struct ReduceNDParameters: Sendable, Equatable {
  public var axes: [Int] = []
  public var keepDims = false
  public var reduceAll = false
  public init() {}
}

public struct LayerNormalizationParameters: Sendable, Equatable {
  /// The trailing axes normalized together.
  public var normalizedShape: [Int] = []
  public var epsilon: Float = 0
  public var gamma: [Float]?
  public var beta: [Float]?
  public init() {}
}

public struct BatchedMatMulParameters: Sendable, Equatable {
  public var transposeA = false
  public var transposeB = false
  public var weightMatrixFirstDimension = 0
  public var weightMatrixSecondDimension = 0
  public var hasBias = false
  public var weights: [Float]?
  public var bias: [Float]?
  public var int8DynamicQuantize = false
  public init() {}
}
