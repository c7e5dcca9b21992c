/// A fully connected layer on the last axis: `y = x · kernel + bias` for every vector along it.
public struct Dense: Sendable, Equatable {
  /// Keras layout `[inputUnits, outputUnits]`.
  public var kernel: Constant
  /// `[outputUnits]`, or nil without bias.
  public var bias: Constant?

  public init(kernel: Constant, bias: Constant?) {
    self.kernel = kernel
    self.bias = bias
  }

  public var inputUnits: Int { kernel.shape[0] }
  public var outputUnits: Int { kernel.shape[1] }
}
