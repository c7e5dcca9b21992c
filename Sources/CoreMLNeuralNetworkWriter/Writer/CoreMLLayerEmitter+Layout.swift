import CoreMLCommon
import ModelIR

/// Keras-to-Core-ML shape mapping (the values are rearranged in `CoreMLWeightValues`).
extension CoreMLLayerEmitter {
  /// A Keras shape as the shape of a Core ML feature: `[C, H, W]` for images, `[D]` for vectors, and
  /// `[C]` for `[T, C]` sequences (their length is Core ML's sequence axis, not part of the shape).
  static func coreMLShape(_ shape: [Int]) -> [Int]? {
    switch shape.count {
    case 1: return [shape[0]]
    case 2: return [shape[1]]
    case 3: return [shape[2], shape[0], shape[1]]
    // [T, H, W, C]: images along Core ML's sequence axis.
    case 4: return [shape[3], shape[1], shape[2]]
    default: return nil
    }
  }

  /// Swaps Core ML's sequence axis with W: a `[T, C]` sequence `[Seq=T, C, 1, 1]` becomes the row
  /// image `[1, C, 1, W=T]` that Keras calls `[1, T, C]`, and back.
  static let sequenceToRow = [3, 1, 2, 0]

  /// Whether a reshape only moves between a `[T, C]` sequence and its `[1, T, C]` row view.
  static func isRowSequenceSwap(_ from: [Int], _ to: [Int]) -> Bool {
    (from.count == 2 && to == [1] + from) || (to.count == 2 && from == [1] + to)
  }

  /// A reshape target as Core ML's `[Seq, C, H, W]`.
  static func coreMLShape4(_ shape: [Int], layer: String) throws -> [Int] {
    switch shape.count {
    case 1: return [1, shape[0], 1, 1]
    case 2: return [shape[0], shape[1], 1, 1]
    case 3: return [1, shape[2], shape[0], shape[1]]
    default:
      throw CoreMLWriterError.unsupportedOperation(
        layer: layer, detail: "Reshape to rank \(shape.count + 1) (only (D,) and (H, W, C) targets)")
    }
  }

  /// A Keras permutation of `[H, W, C]` as Core ML's permutation of `[Seq, C, H, W]`.
  static func coreMLPermutation(_ order: [Int]) -> [Int] {
    // Keras axis (without batch) to Core ML axis: H → 2, W → 3, C → 1.
    let position = [2, 3, 1]
    return [0, position[order[2]], position[order[0]], position[order[1]]]
  }

  /// A channel shuffle of C, the last axis of a vector `[C]` or an image `[H, W, C]` (the blob
  /// `[1, C, H, W]`): a CHANNEL_FIRST reshape to `[Seq = groups, C / groups, H, W]` (row-major, so
  /// sequence step i holds channels i * n ..< (i + 1) * n), a permute swapping Seq and C, and a CHANNEL_FIRST
  /// reshape back to `[1, C, H, W]`, whose channel j * groups + i is then input channel i * n + j.
  mutating func emitChannelShuffle(axis: Int, groups: Int, shape: [Int], name: String, input: String, output: String)
    throws
  {
    // A `[1, C]` sequence of one step is the blob `[1, C, 1, 1]` too.
    guard shape.count == 1 || shape.count == 3 || (shape.count == 2 && shape[0] == 1), axis == shape.count - 1 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: name,
        detail:
          "a channel shuffle of axis \(axis) of \(shape) (classic layers shuffle the channels of a vector or an image only)"
      )
    }
    let (c, h, w) = shape.count == 3 ? (shape[2], shape[0], shape[1]) : (shape[shape.count - 1], 1, 1)
    let (grouped, swapped) = (name + "__groups___output", name + "__swapped___output")
    builder.reshape(
      name + "__groups__", input: input, output: grouped, targetShape: [groups, c / groups, h, w], channelFirst: true)
    emitPermute([1, 0, 2, 3], name: name + "__swapped__", input: grouped, output: swapped)
    builder.reshape(name, input: swapped, output: output, targetShape: [1, c, h, w], channelFirst: true)
  }
}
