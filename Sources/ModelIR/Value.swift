/// The index of a value in `Graph.values`.
public typealias ValueID = Int

/// A named tensor flowing through a graph: a graph input or a node's output.
public struct Value: Sendable, Equatable {
  public var name: String
  public var type: TensorType

  public init(name: String, type: TensorType) {
    self.name = name
    self.type = type
  }
}
