/// NumPy broadcasting of tensor shapes.
public enum Broadcasting {
  /// The shape that all of `shapes` broadcast to, or nil when they do not fit together.
  public static func shape(_ shapes: [[Int]]) -> [Int]? {
    let rank = shapes.map(\.count).max() ?? 0
    var result = [Int](repeating: 1, count: rank)
    for shape in shapes {
      let offset = rank - shape.count
      for (axis, length) in shape.enumerated() where length != 1 {
        if result[offset + axis] == 1 {
          result[offset + axis] = length
        } else if result[offset + axis] != length {
          return nil
        }
      }
    }
    return result
  }
}
