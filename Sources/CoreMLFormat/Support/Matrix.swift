/// Row-major matrix helpers shared by the writer and the reader (Keras stores `[in, out]`, Core ML `[out, in]`).
enum Matrix {
  /// A row-major `[rows, columns]` matrix transposed to `[columns, rows]`.
  static func transposed(_ values: [Float], rows: Int, columns: Int) -> [Float] {
    // In 16 x 16 tiles, so both sides stay in cache for large matrices.
    [Float](unsafeUninitializedCapacity: values.count) { result, initialized in
      values.withUnsafeBufferPointer { source in
        let tile = 16
        for r0 in stride(from: 0, to: rows, by: tile) {
          for c0 in stride(from: 0, to: columns, by: tile) {
            for row in r0..<min(r0 + tile, rows) {
              for column in c0..<min(c0 + tile, columns) { result[column * rows + row] = source[row * columns + column] }
            }
          }
        }
      }
      initialized = values.count
    }
  }
}
