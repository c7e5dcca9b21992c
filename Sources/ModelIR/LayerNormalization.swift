/// Layer normalization over the last axis: `(x - mean) / sqrt(variance + epsilon) * gamma + beta`.
public struct LayerNormalization: Sendable, Equatable {
  /// `[C]`, or nil for no scale.
  public var gamma: Constant?
  /// `[C]`, or nil for no offset.
  public var beta: Constant?
  public var epsilon: Float

  public init(gamma: Constant?, beta: Constant?, epsilon: Float) {
    self.gamma = gamma
    self.beta = beta
    self.epsilon = epsilon
  }
}
