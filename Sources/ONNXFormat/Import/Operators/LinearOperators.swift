import ModelIR

extension ONNXOperatorRegistry {
  /// `Gemm` with a constant `B` (and `C`) as a dense layer over the last axis; `MatMul` as a dense layer
  /// by a constant matrix or as a matrix product; `Einsum` of one operand (a transpose) or of two (a
  /// batched matrix product between transposes and reshapes).
  static let linearOperators: [String: [ONNXOperatorEntry]] =
    entries(["Gemm": [1, 6, 7, 9, 11, 13]]) { try $0.gemm() }.merging(
      entries(["MatMul": [1, 9, 13]]) { try $0.matMul() }
    ) { $0 + $1 }
    .merging(entries(["Einsum": [12]]) { try $0.einsum() }) { $0 + $1 }
}

extension ONNXNodeContext {
  /// `Y = alpha * A' B' + beta * C`, `B` constant; `C` a bias row, or a constant `[M, N]` matrix added.
  mutating func gemm() throws {
    var a = try tensor(0)
    guard builder.type(of: a).shape.count == 2 else {
      throw invalid("A of shape \(builder.type(of: a).shape) must be a matrix")
    }
    if try int("transA", 0) == 1 { a = try add(.permute(order: [1, 0]), [a], suffix: "__a_t") }
    let aShape = builder.type(of: a).shape
    let b = try requiredConstant(1, "B")
    guard b.shape.count == 2 else { throw invalid("B of shape \(b.shape) must be a matrix") }
    let transB = try int("transB", 0) == 1
    let (k, n) = transB ? (b.shape[1], b.shape[0]) : (b.shape[0], b.shape[1])
    guard k == aShape[1] else { throw invalid("B \(b.shape)\(transB ? " transposed" : "") does not fit A \(aShape)") }
    let alpha = try float("alpha", 1)
    let beta = try float("beta", 1)
    var kernel = [Float](repeating: 0, count: k * n)
    for i in 0..<k {
      for j in 0..<n { kernel[i * n + j] = alpha * (transB ? b.floats[j * k + i] : b.floats[i * n + j]) }
    }
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
    let dense = try add(
      .dense(Dense(kernel: Constant(shape: [k, n], values: kernel), bias: bias)), [a],
      suffix: matrix == nil ? "" : "__product")
    guard let matrix else { return define(dense) }
    let c = try add(.constant(Constant(shape: matrix.shape, values: matrix.floats)), [], suffix: "__c")
    define(try add(.elementwise(.add), [dense, c]))
  }

  /// numpy's `matmul`: a dense layer when `B` is a constant matrix, else a matrix product of the two
  /// tensors (a vector `A` as one row, a vector `B` as one column, removed again afterwards).
  mutating func matMul() throws {
    let (aShape, bShape) = (try shape(0), try shape(1))
    guard !aShape.isEmpty, !bShape.isEmpty else { throw invalid("MatMul of a scalar (\(aShape) by \(bShape))") }
    let k = aShape[aShape.count - 1]
    guard k == (bShape.count == 1 ? bShape[0] : bShape[bShape.count - 2]) else {
      throw invalid("B of shape \(bShape) does not fit A \(aShape)")
    }
    if let b = try constant(1), b.shape.count == 2, try constant(0) == nil {
      let a = try tensor(0)
      let dense = Dense(kernel: Constant(shape: b.shape, values: b.floats), bias: nil)
      if aShape.count == 1 {
        let row = try add(.reshape(targetShape: [1, aShape[0]]), [a], suffix: "__row")
        define(try add(.reshape(targetShape: [b.shape[1]]), [try add(.dense(dense), [row], suffix: "__dense")]))
      } else {
        define(try add(.dense(dense), [a]))
      }
      return
    }
    var (a, b) = (try tensor(0), try tensor(1))
    if aShape.count == 1 { a = try add(.reshape(targetShape: [1, k]), [a], suffix: "__a_row") }
    if bShape.count == 1 { b = try add(.reshape(targetShape: [k, 1]), [b], suffix: "__b_column") }
    let product = try add(.matMul, [a, b], suffix: aShape.count == 1 || bShape.count == 1 ? "__matrix" : "")
    guard aShape.count == 1 || bShape.count == 1 else { return define(product) }
    var shape = builder.type(of: product).shape
    if bShape.count == 1 { shape.removeLast() }
    if aShape.count == 1 { shape.remove(at: shape.count - (bShape.count == 1 ? 1 : 2)) }
    define(try add(.reshape(targetShape: shape.isEmpty ? [1] : shape), [product]))
  }

  /// Einstein summation (`ab,bc->ac`, or implicitly `ab,bc`): one operand whose output reorders its axes, or two
  /// operands where every letter is a batch axis (both operands and the output), a contracted axis (both
  /// operands, not the output) or a free axis (one operand and the output). Ellipses, repeated letters
  /// (diagonals), sums over one operand's axis and broadcast batch axes are refused by name.
  mutating func einsum() throws {
    let equation = try string("equation", "").filter { !$0.isWhitespace }
    let sides = equation.components(separatedBy: "->")
    guard sides.count <= 2, !equation.contains(".") else {
      throw invalid("equation '\(equation)': ellipses are not supported")
    }
    let operands = sides[0].split(separator: ",", omittingEmptySubsequences: false).map { Array($0) }
    // The implicit form's output: the letters used once, in alphabetical order.
    let output =
      sides.count == 2
      ? Array(sides[1])
      : operands.joined().filter { letter in operands.joined().filter { $0 == letter }.count == 1 }.sorted()
    guard operands.count == inputCount, (1...2).contains(operands.count) else {
      throw invalid(
        "equation '\(equation)' has \(operands.count) operands for \(inputCount) inputs (one or two are supported)")
    }
    for letters in operands + [output] where Set(letters).count != letters.count || !letters.allSatisfy(\.isLetter) {
      throw invalid("equation '\(equation)': each letter once per operand (diagonals are not supported)")
    }
    var sizes: [Character: Int] = [:]
    for (n, letters) in operands.enumerated() {
      let shape = try self.shape(n)
      guard shape.count == letters.count else {
        throw invalid("operand \(n) of shape \(shape) does not have the \(letters.count) axes of '\(String(letters))'")
      }
      for (letter, size) in zip(letters, shape) {
        if let known = sizes[letter], known != size {
          throw invalid("axis '\(letter)' is \(known) and \(size) (broadcasting is not supported)")
        }
        sizes[letter] = size
      }
    }
    guard output.allSatisfy({ sizes[$0] != nil }) else {
      throw invalid("output '\(String(output))' names an axis no operand has")
    }
    if operands.count == 1 {
      guard Set(output) == Set(operands[0]) else {
        throw invalid("equation '\(equation)': a sum over an axis of one operand is not supported")
      }
      let order = output.map { operands[0].firstIndex(of: $0)! }
      if let c = try constant(0) { return define(Self.permuted(c, order)) }
      return define(
        order == Array(order.indices)
          ? try add(.reshape(targetShape: try shape(0)), [try tensor(0)])
          : try add(.permute(order: order), [try tensor(0)]))
    }
    let (a, b) = (operands[0], operands[1])
    let batch = a.filter { b.contains($0) && output.contains($0) }
    let contracted = a.filter { b.contains($0) && !output.contains($0) }
    let left = a.filter { !b.contains($0) }
    let right = b.filter { !a.contains($0) }
    guard (left + right).allSatisfy({ output.contains($0) }) else {
      throw invalid("equation '\(equation)': a sum over an axis of one operand is not supported")
    }
    func size(_ letters: [Character]) -> Int { letters.reduce(1) { $0 * sizes[$1]! } }
    // A as [batch..., M, K] and B as [batch..., K, N]; the product's [batch..., left..., right...] reordered.
    func arranged(_ index: Int, _ letters: [Character], _ order: [Character], _ shape: [Int], _ suffix: String) throws
      -> ValueID
    {
      let permutation = order.map { letters.firstIndex(of: $0)! }
      var value = try tensor(index)
      if permutation != Array(permutation.indices) {
        value = try add(.permute(order: permutation), [value], suffix: suffix + "_t")
      }
      return try add(.reshape(targetShape: shape), [value], suffix: suffix)
    }
    let batchShape = batch.map { sizes[$0]! }
    let x = try arranged(0, a, batch + left + contracted, batchShape + [size(left), size(contracted)], "__a")
    let y = try arranged(1, b, batch + contracted + right, batchShape + [size(contracted), size(right)], "__b")
    let product = try add(.matMul, [x, y], suffix: "__product")
    let natural = batch + left + right
    let unfolded = try add(
      .reshape(targetShape: natural.isEmpty ? [1] : natural.map { sizes[$0]! }), [product],
      suffix: natural == output ? "" : "__unfolded")
    guard natural != output else { return define(unfolded) }
    define(try add(.permute(order: output.map { natural.firstIndex(of: $0)! }), [unfolded]))
  }
}
