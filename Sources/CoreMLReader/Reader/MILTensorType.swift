import CoreMLCommon

/// A MIL tensor type. Unknown dimensions are -1; a scalar has rank 0.
public struct MILTensorType: Sendable, Equatable {
  public var dataType: MILDataType
  public var shape: [Int]
  /// False for list, tuple and dictionary types (which the reader records but the importer does not run).
  public var isTensor: Bool = true

  public init(dataType: MILDataType, shape: [Int], isTensor: Bool = true) {
    self.dataType = dataType
    self.shape = shape
    self.isTensor = isTensor
  }
}
