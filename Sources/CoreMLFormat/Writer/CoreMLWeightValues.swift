import ModelIR

/// The values of one weight in Core ML's layout, produced a block of rows at a time.
///
/// Kernels are rearranged from Keras' layout here, the one place where layouts change: whole (for a
/// float16 model, or a caller that needs the array), or in pieces while the model is written
/// (`StreamedSpecification`), so no second copy of a large kernel is ever built.
enum CoreMLWeightValues: Sendable {
  /// Values already in Core ML's layout.
  case values([Float])
  /// A Keras convolution kernel `[kh, kw, in, out]` as Core ML's `[out, in, kh, kw]`.
  case convolutionKernel(Constant)
  /// A row-major `[rows, columns]` matrix as `[columns, rows]` (Keras' dense `[in, out]` as `[out, in]`).
  case transposed([Float], rows: Int, columns: Int)

  var count: Int {
    switch self {
    case .values(let values): return values.count
    case .convolutionKernel(let kernel): return kernel.count
    case .transposed(let values, _, _): return values.count
    }
  }

  /// The values as stored before rearranging (any order: for range checks).
  var source: [Float] {
    switch self {
    case .values(let values), .transposed(let values, _, _): return values
    case .convolutionKernel(let kernel): return kernel.values
    }
  }

  /// Values per row of the result: the unit `fill(rows:into:)` works in.
  var rowLength: Int {
    switch self {
    case .values: return 1
    case .convolutionKernel(let kernel): return kernel.shape[0] * kernel.shape[1] * kernel.shape[2]
    case .transposed(_, let rows, _): return rows
    }
  }

  /// Rows in all (`count / rowLength`).
  var rowCount: Int { rowLength == 0 ? 0 : count / rowLength }

  /// All the values.
  func materialized() -> [Float] {
    Constant.values(count: count) { buffer in
      if let base = buffer.baseAddress { fill(rows: 0..<rowCount, into: base) }
    }
  }

  /// Writes the result's rows `rows` (`rows.count * rowLength` values) to `destination`, on every core
  /// when there are many.
  func fill(rows: Range<Int>, into destination: UnsafeMutablePointer<Float>) {
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
  private static func fillKernel(_ kernel: Constant, outputs: Range<Int>, into destination: UnsafeMutablePointer<Float>) {
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
