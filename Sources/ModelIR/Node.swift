/// An operation applied to graph values, producing one value.
public struct Node: Sendable, Equatable {
  /// A unique name, taken from the source layer (suffixed when one layer becomes several nodes).
  public var name: String
  public var operation: Operation
  public var inputs: [ValueID]
  public var output: ValueID
  /// The source layer this node comes from, when the importer recorded it.
  public var origin: LayerOrigin?

  public init(name: String, operation: Operation, inputs: [ValueID], output: ValueID, origin: LayerOrigin? = nil) {
    self.name = name
    self.operation = operation
    self.inputs = inputs
    self.output = output
    self.origin = origin
  }
}
