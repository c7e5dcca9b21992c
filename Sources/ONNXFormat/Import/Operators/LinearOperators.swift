import ModelIR

extension ONNXOperatorRegistry {
  /// `Gemm` with a constant `B` (and `C`), and `MatMul` by a constant matrix, as dense layers over the
  /// last axis.
  static let linearOperators: [String: [ONNXOperatorEntry]] =
    entries(["Gemm": [1, 6, 7, 9, 11, 13]]) { try $0.gemm() }.merging(entries(["MatMul": [1, 9, 13]]) { try $0.matMul() }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// `Y = alpha * A' B' + beta * C`, `B` constant; `C` a bias row, or a constant `[M, N]` matrix added.
  mutating func gemm() throws {
    var a = try tensor(0)
    guard builder.type(of: a).shape.count == 2 else { throw invalid("A of shape \(builder.type(of: a).shape) must be a matrix") }
    if try int("transA", 0) == 1 { a = try add(.permute(order: [1, 0]), [a], suffix: "__a_t") }
    let aShape = builder.type(of: a).shape
    let b = try requiredConstant(1, "B")
    guard b.shape.count == 2 else { throw invalid("B of shape \(b.shape) must be a matrix") }
    let transB = try int("transB", 0) == 1
    let (k, n) = transB ? (b.shape[1], b.shape[0]) : (b.shape[0], b.shape[1])
    guard k == aShape[1] else { throw invalid("B \(b.shape)\(transB ? " transposed" : "") does not fit A \(aShape)") }
    let alpha = try float("alpha", 1), beta = try float("beta", 1)
    var kernel = [Float](repeating: 0, count: k * n)
    for i in 0..<k { for j in 0..<n { kernel[i * n + j] = alpha * (transB ? b.floats[j * k + i] : b.floats[i * n + j]) } }
    var bias: Constant?
    var matrix: ONNXConstant?
    if hasInput(2) {
      let c = try requiredConstant(2, "C")
      // C broadcasts to [M, N]: one row is the dense layer's bias, a matrix is added after it.
      guard let broadcast = Broadcasting.shape([c.shape, [aShape[0], n]]), broadcast == [aShape[0], n] else {
        throw invalid("C of shape \(c.shape) does not broadcast to [\(aShape[0]), \(n)]")
      }
      if c.shape.count == 2 && c.shape[0] != 1 {
        matrix = ONNXConstant(shape: c.shape, floats: c.floats.map { beta * $0 })
      } else {
        let row = c.count == 1 ? [Float](repeating: c.floats[0], count: n) : Array(c.floats.suffix(n))
        bias = Constant(shape: [n], values: row.map { beta * $0 })
      }
    }
    let dense = try add(.dense(Dense(kernel: Constant(shape: [k, n], values: kernel), bias: bias)), [a], suffix: matrix == nil ? "" : "__product")
    guard let matrix else { return define(dense) }
    let c = try add(.constant(Constant(shape: matrix.shape, values: matrix.floats)), [], suffix: "__c")
    define(try add(.elementwise(.add), [dense, c]))
  }

  /// `A · B` with `B` a constant `[K, N]` matrix (a batch of `A` rows).
  mutating func matMul() throws {
    let a = try tensor(0)
    let aShape = builder.type(of: a).shape
    guard let b = try constant(1) else { throw invalid("B must be a constant matrix (products of two computed tensors are not supported)") }
    guard b.shape.count == 2, aShape.count >= 1, aShape.last == b.shape[0] else { throw invalid("B of shape \(b.shape) does not fit A \(aShape)") }
    let dense = Dense(kernel: Constant(shape: b.shape, values: b.floats), bias: nil)
    if aShape.count == 1 {
      let row = try add(.reshape(targetShape: [1, aShape[0]]), [a], suffix: "__row")
      define(try add(.reshape(targetShape: [b.shape[1]]), [try add(.dense(dense), [row], suffix: "__dense")]))
    } else {
      define(try add(.dense(dense), [a]))
    }
  }
}
