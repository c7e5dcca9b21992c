/// A constant tensor held by an operation: weights, biases, normalization statistics.
public struct Constant: Sendable, Equatable {
  /// The shape, in the layout documented by the operation that holds it.
  public var shape: [Int]
  /// Row-major values; `values.count` equals the product of `shape`.
  public var values: [Float]

  public init(shape: [Int], values: [Float]) {
    precondition(shape.reduce(1, *) == values.count, "constant shape \(shape) does not match \(values.count) values")
    self.shape = shape
    self.values = values
  }

  /// A constant filled with one value.
  public static func filled(_ value: Float, shape: [Int]) -> Constant {
    Constant(shape: shape, values: [Float](repeating: value, count: shape.reduce(1, *)))
  }

  /// The number of elements.
  public var count: Int { values.count }
}
