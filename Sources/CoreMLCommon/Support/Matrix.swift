import Foundation
import ModelIR

/// Row-major matrix helpers shared by the writer and the reader (Keras stores `[in, out]`, Core ML `[out, in]`).
package enum Matrix {
  /// A row-major `[rows, columns]` matrix transposed to `[columns, rows]`.
  package static func transposed(_ values: [Float], rows: Int, columns: Int) -> [Float] {
    Constant.newValues(count: values.count) { result in
      values.withUnsafeBufferPointer { source in
        if let from = source.baseAddress, let to = result.baseAddress {
          transpose(from, rows: rows, columns: columns, into: to)
        }
      }
    }
  }

  /// `destination[(c - first) * rows + r] = source[r * columns + c]` for the result rows c in `resultRows`
  /// (all by default), in 32 x 32 tiles so both sides stay in cache for large matrices, and on every core
  /// for a large one (each writes its own result rows).
  package static func transpose(
    _ source: UnsafePointer<Float>, rows: Int, columns: Int, resultRows: Range<Int>? = nil,
    into destination: UnsafeMutablePointer<Float>
  ) {
    let wanted = resultRows ?? 0..<columns
    let tile = 32
    let columnTiles = (wanted.count + tile - 1) / tile
    Self.forEachPart(count: columnTiles, elements: rows * wanted.count) { tiles in
      let end = Swift.min(wanted.lowerBound + tiles.upperBound * tile, wanted.upperBound)
      for c0 in stride(from: wanted.lowerBound + tiles.lowerBound * tile, to: end, by: tile) {
        transposeTiles(
          source, rows: rows, columns: columns, columnRange: c0..<Swift.min(c0 + tile, end),
          into: destination - wanted.lowerBound * rows)
      }
    }
  }

  /// The result rows `columnRange` of `transpose` (`destination` points at result row 0). Indices stay
  /// below `rows * columns` (an array's count): wrapping arithmetic only drops the overflow checks that
  /// keep the loop from vectorizing.
  private static func transposeTiles(
    _ source: UnsafePointer<Float>, rows: Int, columns: Int, columnRange: Range<Int>,
    into destination: UnsafeMutablePointer<Float>
  ) {
    let tile = 32
    var r0 = 0
    while r0 < rows {
      let r1 = Swift.min(r0 &+ tile, rows)
      var c = columnRange.lowerBound
      while c < columnRange.upperBound {
        let to = destination + c &* rows
        var r = r0
        while r < r1 {
          to[r] = source[r &* columns &+ c]
          r &+= 1
        }
        c &+= 1
      }
      r0 = r1
    }
  }

  /// Splits `0..<count` into one contiguous part per core when the work (`elements` values moved) is
  /// large enough to pay for the threads, and runs `body` on each part; else runs it once on the whole.
  package static func forEachPart(count: Int, elements: Int, _ body: (Range<Int>) -> Void) {
    let parts = elements >= 1 << 18 ? Swift.min(ProcessInfo.processInfo.activeProcessorCount, count) : 1
    guard parts > 1 else {
      body(0..<count)
      return
    }
    withoutActuallyEscaping(body) { body in
      nonisolated(unsafe) let run = body  // each part touches only its own destination
      DispatchQueue.concurrentPerform(iterations: parts) { part in
        run((count * part / parts)..<(count * (part + 1) / parts))
      }
    }
  }
}
