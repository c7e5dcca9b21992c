/// A dense float32 tensor in row-major, channels-last order, without the batch dimension.
public struct Tensor: Sendable, Equatable {
  public var shape: [Int]
  public var values: [Float]

  public init(shape: [Int], values: [Float]) {
    precondition(shape.reduce(1, *) == values.count, "tensor shape \(shape) does not match \(values.count) values")
    self.shape = shape
    self.values = values
  }

  public init(zeros shape: [Int]) { self.init(shape: shape, values: [Float](repeating: 0, count: shape.reduce(1, *))) }
}
