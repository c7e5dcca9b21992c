import ModelIR

/// Row-major matrix helpers shared by the writer and the reader (Keras stores `[in, out]`, Core ML `[out, in]`).
enum Matrix {
  /// A row-major `[rows, columns]` matrix transposed to `[columns, rows]`.
  static func transposed(_ values: [Float], rows: Int, columns: Int) -> [Float] {
    Constant.values(count: values.count) { result in
      values.withUnsafeBufferPointer { source in
        if let from = source.baseAddress, let to = result.baseAddress { transpose(from, rows: rows, columns: columns, into: to) }
      }
    }
  }

  /// `destination[c * rows + r] = source[r * columns + c]`, in 32 x 32 tiles so both sides stay in cache
  /// for large matrices. Indices stay below `rows * columns` (an array's count): wrapping arithmetic
  /// only drops the overflow checks that keep the loop from vectorizing.
  static func transpose(_ source: UnsafePointer<Float>, rows: Int, columns: Int, into destination: UnsafeMutablePointer<Float>) {
    let tile = 32
    var r0 = 0
    while r0 < rows {
      let r1 = Swift.min(r0 &+ tile, rows)
      var c0 = 0
      while c0 < columns {
        let c1 = Swift.min(c0 &+ tile, columns)
        var c = c0
        while c < c1 {
          let to = destination + c &* rows
          var r = r0
          while r < r1 {
            to[r] = source[r &* columns &+ c]
            r &+= 1
          }
          c &+= 1
        }
        c0 = c1
      }
      r0 = r1
    }
  }
}
