import ModelIR

/// Keras-to-Core-ML data rearrangements, the one place where layouts change.
extension CoreMLLayerEmitter {
  /// A Keras kernel `[kh, kw, in, out]` as Core ML's `[out, in, kh, kw]`.
  static func coreMLKernel(_ kernel: Constant) -> [Float] {
    let (kh, kw, ci, co) = (kernel.shape[0], kernel.shape[1], kernel.shape[2], kernel.shape[3])
    let taps = kh * kw
    // result[o][i][t] = kernel[t][i][o] for each tap t = y * kw + x. A 1 x 1 kernel is a plain [ci][co]
    // matrix transpose (`Matrix.transpose`); otherwise in 16 x 16 (o, i) tiles, each result run
    // [o][i][0..<taps] written whole, so both sides stay in cache however large ci and co are.
    return Constant.values(count: kernel.count) { result in
      kernel.values.withUnsafeBufferPointer { source in
        guard let src = source.baseAddress, let dst = result.baseAddress else { return }
        if taps == 1 {
          Matrix.transpose(src, rows: ci, columns: co, into: dst)
        } else {
          // Indices stay below `kernel.count`, an Int: wrapping arithmetic only drops overflow checks.
          // Each core takes its own output channels.
          let tile = 16
          let tapStride = ci &* co
          Matrix.forEachPart(count: (co + tile - 1) / tile, elements: kernel.count) { tiles in
            for o0 in stride(from: tiles.lowerBound * tile, to: min(tiles.upperBound * tile, co), by: tile) {
              for i0 in stride(from: 0, to: ci, by: tile) {
                for o in o0..<min(o0 &+ tile, co) {
                  for i in i0..<min(i0 &+ tile, ci) {
                    let from = src + (i &* co &+ o)
                    let to = dst + ((o &* ci &+ i) &* taps)
                    for t in 0..<taps { to[t] = from[t &* tapStride] }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

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
