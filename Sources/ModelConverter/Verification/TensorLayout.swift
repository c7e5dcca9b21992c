import ReferenceRuntime

/// How a source tensor (the IR's channels-last layout, no batch) corresponds to a Core ML feature's tensor.
enum TensorLayout: Equatable {
  /// Same element order; only the shape differs (size-1 batch axes, `[C]` versus `[C, 1, 1]`).
  case sameOrder
  /// The IR's `[H, W, C]` is Core ML's `[..., C, H, W]`.
  case channelsFirst

  /// The layout that maps `source` onto `converted`; when both fit, `preferChannelsFirst` decides (true for
  /// the classic rank-5 mapping, whose blobs are always `[C, H, W]`).
  /// Whether both layouts fit these shapes (a `[1, C, H, W]` blob whose C, H and W are alike).
  static func isAmbiguous(source: [Int], converted: [Int]) -> Bool {
    match(source: source, converted: converted, preferChannelsFirst: true) == .channelsFirst
      && match(source: source, converted: converted, preferChannelsFirst: false) == .sameOrder
  }

  static func match(source: [Int], converted: [Int], preferChannelsFirst: Bool) -> TensorLayout? {
    guard source.reduce(1, *) == converted.reduce(1, *) else { return nil }
    // Size-1 axes do not change the row-major element order.
    let sameFits = source.filter { $0 != 1 } == converted.filter { $0 != 1 }
    let image = Array(source.suffix(3))
    let leading = Array(source.dropLast(3))
    let channelsFirstFits =
      source.count >= 3 && Array(converted.suffix(3)) == [image[2], image[0], image[1]]
      && Array(converted.dropLast(3).drop { $0 == 1 }) == Array(leading.drop { $0 == 1 })
    switch (sameFits, channelsFirstFits) {
    case (true, true): return preferChannelsFirst ? .channelsFirst : .sameOrder
    case (false, true): return .channelsFirst
    case (true, false): return .sameOrder
    default: return nil
    }
  }

  /// A tensor in the source graph's layout as the converted tensor of `shape`.
  func toConverted(_ tensor: Tensor, shape: [Int]) -> Tensor {
    switch self {
    case .sameOrder: return Tensor(shape: shape, values: tensor.values)
    case .channelsFirst:
      return Tensor(
        shape: shape, values: Self.eachImage(tensor.values, shape: Array(tensor.shape.suffix(3)), order: [2, 0, 1]))
    }
  }

  /// A converted tensor back in the source graph's layout of `shape`.
  func toSource(_ tensor: Tensor, shape: [Int]) -> Tensor {
    switch self {
    case .sameOrder: return Tensor(shape: shape, values: tensor.values)
    case .channelsFirst:
      return Tensor(
        shape: shape, values: Self.eachImage(tensor.values, shape: Array(tensor.shape.suffix(3)), order: [1, 2, 0]))
    }
  }

  /// Permutes every rank-3 image of `shape` in a run of images.
  static func eachImage(_ values: [Float], shape: [Int], order: [Int]) -> [Float] {
    let size = shape.reduce(1, *)
    return stride(from: 0, to: values.count, by: size).flatMap { start in
      permute(Tensor(shape: shape, values: Array(values[start..<start + size])), order: order).values
    }
  }

  /// Output axis `i` is input axis `order[i]` (rank 3).
  static func permute(_ x: Tensor, order: [Int]) -> Tensor {
    let shape = order.map { x.shape[$0] }
    let inStrides = [x.shape[1] * x.shape[2], x.shape[2], 1]
    var values = [Float](repeating: 0, count: x.values.count)
    var index = 0
    for a in 0..<shape[0] {
      for b in 0..<shape[1] {
        for c in 0..<shape[2] {
          values[index] = x.values[a * inStrides[order[0]] + b * inStrides[order[1]] + c * inStrides[order[2]]]
          index += 1
        }
      }
    }
    return Tensor(shape: shape, values: values)
  }
}
