import CoreMLCommon

/// A named, typed value: a function input or an operation output.
public struct MILNamedType: Sendable, Equatable {
  public var name: String
  public var type: MILTensorType

  public init(name: String, type: MILTensorType) {
    self.name = name
    self.type = type
  }
}
