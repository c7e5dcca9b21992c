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
      throw CoreMLWriterError.unsupportedOperation(layer: layer, detail: "Reshape to rank \(shape.count + 1) (only (D,) and (H, W, C) targets)")
    }
  }

  /// A Keras permutation of `[H, W, C]` as Core ML's permutation of `[Seq, C, H, W]`.
  static func coreMLPermutation(_ order: [Int]) -> [Int] {
    // Keras axis (without batch) to Core ML axis: H → 2, W → 3, C → 1.
    let position = [2, 3, 1]
    return [0, position[order[2]], position[order[0]], position[order[1]]]
  }
}
