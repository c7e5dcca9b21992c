/// Row-major matrix helpers shared by the writer and the reader (Keras stores `[in, out]`, Core ML `[out, in]`).
enum Matrix {
  /// A row-major `[rows, columns]` matrix transposed to `[columns, rows]`.
  static func transposed(_ values: [Float], rows: Int, columns: Int) -> [Float] {
    var result = [Float](repeating: 0, count: values.count)
    for row in 0..<rows {
      for column in 0..<columns { result[column * rows + row] = values[row * columns + column] }
    }
    return result
  }
}
