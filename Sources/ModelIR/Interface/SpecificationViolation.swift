/// One place where a written model breaks a rule of its format (for Core ML, Apple's NeuralNetwork.proto): something Core ML would
/// refuse, or compute differently from what the fields seem to say.
public struct SpecificationViolation: Sendable, Equatable, Codable, CustomStringConvertible {
  /// The layer's name, or empty for a model-level rule.
  public var layer: String
  /// The layer's kind as its format names it (`gru`, `convolution`, ...), or `model`.
  public var layerType: String
  /// The rule's ID (for Core ML as tagged `[rule ID]` in Schemas/NeuralNetwork.proto).
  public var rule: String
  /// What is wrong, with the offending values.
  public var detail: String

  public init(layer: String, layerType: String, rule: String, detail: String) {
    self.layer = layer
    self.layerType = layerType
    self.rule = rule
    self.detail = detail
  }

  public var description: String {
    layer.isEmpty ? "[\(rule)] \(detail)" : "layer '\(layer)' (\(layerType)) [\(rule)]: \(detail)"
  }
}
