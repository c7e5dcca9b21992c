import Dispatch
import ModelIR

/// The values of one weight in Core ML's layout, produced a block of rows at a time.
///
/// Kernels are rearranged from Keras' layout here, the one place where layouts change: whole (for a
/// float16 model, or a caller that needs the array), or in pieces while the model is written
/// (`StreamedSpecification`), so no second copy of a large kernel is ever built.
package enum CoreMLWeightValues: Sendable {
  /// Values already in Core ML's layout.
  case values([Float])
  /// A Keras convolution kernel `[kh, kw, in, out]` as Core ML's `[out, in, kh, kw]`.
  case convolutionKernel(Constant)
  /// A row-major `[rows, columns]` matrix as `[columns, rows]` (Keras' dense `[in, out]` as `[out, in]`).
  case transposed([Float], rows: Int, columns: Int)

  package var count: Int {
    switch self {
    case .values(let values): return values.count
    case .convolutionKernel(let kernel): return kernel.count
    case .transposed(let values, _, _): return values.count
    }
  }

  /// The values as stored before rearranging (any order: for range checks).
  package var source: [Float] {
    switch self {
    case .values(let values), .transposed(let values, _, _): return values
    case .convolutionKernel(let kernel): return kernel.values
    }
  }

  /// Values per row of the result: the unit `fill(rows:into:)` works in.
  package var rowLength: Int {
    switch self {
    case .values: return 1
    case .convolutionKernel(let kernel): return kernel.shape[0] * kernel.shape[1] * kernel.shape[2]
    case .transposed(_, let rows, _): return rows
    }
  }

  /// Rows in all (`count / rowLength`).
  package var rowCount: Int { rowLength == 0 ? 0 : count / rowLength }

  /// All the values.
  package func materialized() -> [Float] {
    Constant.newValues(count: count) { buffer in
      if let base = buffer.baseAddress { fill(rows: 0..<rowCount, into: base) }
    }
  }

  /// Values of one block of `encodedBlocks` (1 MiB of float32).
  package static let blockValues = 1 << 18

  /// Sends the values in Core ML's layout to `body` as little-endian float32 (or float16) bytes, in
  /// blocks of whole rows of about 1 MiB: the whole rearranged array never exists. While `body` takes
  /// one block (writing it to a file, say), the next is laid out on another thread, in a second buffer.
  /// Float16 values must already be checked against float16's range.
  package func encodedBlocks(float16: Bool, _ body: (UnsafeRawBufferPointer) throws -> Void) rethrows {
    let rowsPerBlock = max(1, Self.blockValues / max(rowLength, 1))
    let capacity = min(rowsPerBlock * rowLength, count)
    guard capacity > 0 else { return }
    let blocks = stride(from: 0, to: rowCount, by: rowsPerBlock).map { $0..<min($0 + rowsPerBlock, rowCount) }
    let buffers = (0..<min(blocks.count, 2)).map { _ in
      (
        values: UnsafeMutablePointer<Float>.allocate(capacity: capacity),
        halves: float16 ? UnsafeMutablePointer<UInt16>.allocate(capacity: capacity) : nil
      )
    }
    let laidOut = DispatchGroup()
    defer {
      laidOut.wait()  // the block being laid out, when `body` threw
      for buffer in buffers {
        buffer.values.deallocate()
        buffer.halves?.deallocate()
      }
    }
    /// Lays block `index` out in buffer `index % 2` and returns its bytes.
    func layOut(_ index: Int) -> UnsafeRawBufferPointer {
      let (rows, buffer) = (blocks[index], buffers[index % 2])
      let values = rows.count * rowLength
      fill(rows: rows, into: buffer.values)
      if let halves = buffer.halves {
        for index in 0..<values { halves[index] = Float16(buffer.values[index]).bitPattern.littleEndian }
        return UnsafeRawBufferPointer(start: halves, count: values * 2)
      }
      #if _endian(big)
        for index in 0..<values {
          buffer.values[index] = Float(bitPattern: buffer.values[index].bitPattern.littleEndian)
        }
      #endif
      return UnsafeRawBufferPointer(start: buffer.values, count: values * MemoryLayout<Float>.stride)
    }
    var current = layOut(0)
    for index in blocks.indices {
      nonisolated(unsafe) var next: UnsafeRawBufferPointer?
      if index + 1 < blocks.count {
        nonisolated(unsafe) let layOutNext = layOut  // touches only the other buffer
        DispatchQueue.global().async(group: laidOut) { next = layOutNext(index + 1) }
      }
      try body(current)
      laidOut.wait()
      if let next { current = next }
    }
  }

  /// Whether every value is finite and within float16's range (±65504), so it can be stored as float16.
  package var fitsFloat16: Bool { !source.contains { !$0.isFinite || abs($0) > 65504 } }

  /// The first value, in Core ML's order, that float16 cannot hold.
  package var firstOutsideFloat16: Float? {
    fitsFloat16 ? nil : materialized().first { !$0.isFinite || abs($0) > 65504 }
  }

  /// Writes the result's rows `rows` (`rows.count * rowLength` values) to `destination`, on every core
  /// when there are many.
  package func fill(rows: Range<Int>, into destination: UnsafeMutablePointer<Float>) {
    switch self {
    case .values(let values):
      values.withUnsafeBufferPointer { source in
        guard let base = source.baseAddress, !rows.isEmpty else { return }
        destination.update(from: base + rows.lowerBound, count: rows.count)
      }
    case .transposed(let values, let sourceRows, let columns):
      values.withUnsafeBufferPointer { source in
        guard let base = source.baseAddress else { return }
        Matrix.transpose(base, rows: sourceRows, columns: columns, resultRows: rows, into: destination)
      }
    case .convolutionKernel(let kernel):
      Self.fillKernel(kernel, outputs: rows, into: destination)
    }
  }

  /// result[o][i][t] = kernel[t][i][o] for each tap t = y * kw + x and output channel o in `outputs`. A
  /// 1 x 1 kernel is a plain [ci][co] matrix transpose; otherwise in 16 x 16 (o, i) tiles, each result
  /// run [o][i][0..<taps] written whole, so both sides stay in cache however large ci and co are.
  private static func fillKernel(_ kernel: Constant, outputs: Range<Int>, into destination: UnsafeMutablePointer<Float>)
  {
    let (kh, kw, ci, co) = (kernel.shape[0], kernel.shape[1], kernel.shape[2], kernel.shape[3])
    let taps = kh * kw
    kernel.values.withUnsafeBufferPointer { source in
      guard let src = source.baseAddress else { return }
      if taps == 1 {
        Matrix.transpose(src, rows: ci, columns: co, resultRows: outputs, into: destination)
        return
      }
      // Indices stay below `kernel.count`, an Int: wrapping arithmetic only drops overflow checks.
      // Each core takes its own output channels.
      let tile = 16
      let tapStride = ci &* co
      Matrix.forEachPart(count: outputs.count, elements: outputs.count * ci * taps) { part in
        let first = outputs.lowerBound + part.lowerBound
        let end = outputs.lowerBound + part.upperBound
        for o0 in stride(from: first, to: end, by: tile) {
          for i0 in stride(from: 0, to: ci, by: tile) {
            for o in o0..<min(o0 &+ tile, end) {
              for i in i0..<min(i0 &+ tile, ci) {
                let from = src + (i &* co &+ o)
                let to = destination + (((o &- outputs.lowerBound) &* ci &+ i) &* taps)
                for t in 0..<taps { to[t] = from[t &* tapStride] }
              }
            }
          }
        }
      }
    }
  }
}
