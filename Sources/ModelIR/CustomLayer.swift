/// A layer the converter does not implement, written as a Core ML custom layer that the app provides
/// (an `MLCustomLayer` class named `className`).
public struct CustomLayer: Sendable, Equatable {
  /// One value of the layer's parameter dictionary.
  public enum Parameter: Sendable, Equatable {
    case double(Double)
    case string(String)
    case int(Int64)
    case bool(Bool)
  }

  public var className: String
  public var description: String
  public var parameters: [String: Parameter]
  /// The layer's weights, in the order the app's implementation reads them.
  public var weights: [Constant]
  /// The output shape (the IR cannot infer what unknown code computes).
  public var outputShape: [Int]

  public init(
    className: String, description: String = "", parameters: [String: Parameter] = [:], weights: [Constant] = [],
    outputShape: [Int]
  ) {
    self.className = className
    self.description = description
    self.parameters = parameters
    self.weights = weights
    self.outputShape = outputShape
  }
}
