import ModelIR

/// `matMul`: the product of two computed tensors over their last two axes, batch axes broadcast.
enum MatrixProduct {
  /// For each output batch item, the offsets of its `A` and `B` matrices.
  static func batchOffsets(_ a: [Int], _ b: [Int], outputShape: [Int]) -> [(a: Int, b: Int)] {
    let batch = Array(outputShape.dropLast(2))
    let (aMatrix, bMatrix) = (a.suffix(2).reduce(1, *), b.suffix(2).reduce(1, *))
    let aStrides = Kernels.broadcastStrides(Array(a.dropLast(2)), rank: batch.count)
    let bStrides = Kernels.broadcastStrides(Array(b.dropLast(2)), rank: batch.count)
    var offsets: [(a: Int, b: Int)] = []
    offsets.reserveCapacity(batch.reduce(1, *))
    Kernels.forEachIndex(batch) { _, coordinates in
      var (ai, bi) = (0, 0)
      for axis in coordinates.indices {
        ai += coordinates[axis] * aStrides[axis]
        bi += coordinates[axis] * bStrides[axis]
      }
      offsets.append((ai * aMatrix, bi * bMatrix))
    }
    return offsets
  }

  /// The oracle: every sum accumulated in Double.
  static func direct(_ a: Tensor, _ b: Tensor, outputShape: [Int]) -> [Float] {
    let (m, k, n) = (a.shape[a.shape.count - 2], a.shape[a.shape.count - 1], b.shape[b.shape.count - 1])
    var result = [Float](repeating: 0, count: outputShape.reduce(1, *))
    for (item, offset) in batchOffsets(a.shape, b.shape, outputShape: outputShape).enumerated() {
      for i in 0..<m {
        for j in 0..<n {
          var sum = 0.0
          for p in 0..<k { sum += Double(a.values[offset.a + i * k + p]) * Double(b.values[offset.b + p * n + j]) }
          result[item * m * n + i * n + j] = Float(sum)
        }
      }
    }
    return result
  }

  /// oneDNN's sgemm per batch item.
  static func fast(_ a: Tensor, _ b: Tensor, outputShape: [Int]) -> [Float] {
    let (m, k, n) = (a.shape[a.shape.count - 2], a.shape[a.shape.count - 1], b.shape[b.shape.count - 1])
    var result = [Float](repeating: 0, count: outputShape.reduce(1, *))
    guard m > 0, n > 0 else { return result }
    guard k > 0 else { return result }
    let offsets = batchOffsets(a.shape, b.shape, outputShape: outputShape)
    a.values.withUnsafeBufferPointer { pa in
      b.values.withUnsafeBufferPointer { pb in
        result.withUnsafeMutableBufferPointer { pc in
          for (item, offset) in offsets.enumerated() {
            FastKernels.sgemm(
              m, n, k, pa.baseAddress! + offset.a, k, pb.baseAddress! + offset.b, n, beta: 0,
              pc.baseAddress! + item * m * n, n)
          }
        }
      }
    }
    return result
  }
}
