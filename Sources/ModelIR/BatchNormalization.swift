/// Inference-time batch normalization along the last axis:
/// `y = gamma * (x - mean) / sqrt(variance + epsilon) + beta`.
public struct BatchNormalization: Sendable, Equatable {
  public var gamma: Constant
  public var beta: Constant
  public var mean: Constant
  public var variance: Constant
  public var epsilon: Float

  public init(gamma: Constant, beta: Constant, mean: Constant, variance: Constant, epsilon: Float) {
    self.gamma = gamma
    self.beta = beta
    self.mean = mean
    self.variance = variance
    self.epsilon = epsilon
  }

  /// The number of normalized channels.
  public var channels: Int { mean.count }
}
