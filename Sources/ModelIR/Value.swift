/// The index of a value in `Graph.values`.
public typealias ValueID = Int

/// A named tensor flowing through a graph: a graph input or a node's output.
public struct Value: Sendable, Equatable {
  public var name: String
  public var type: TensorType
  /// A graph input the caller may leave out, zeros then (Core ML's optional inputs: a recurrent layer's
  /// initial state). Only graph inputs are optional.
  public var isOptional: Bool

  public init(name: String, type: TensorType, isOptional: Bool = false) {
    self.name = name
    self.type = type
    self.isOptional = isOptional
  }
}
