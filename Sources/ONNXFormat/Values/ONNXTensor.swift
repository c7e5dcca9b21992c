/// A dense ONNX tensor (`TensorProto`) with its values decoded and checked: `storage` holds exactly
/// the product of `dims` values, of the Swift type `dataType` names.
public struct ONNXTensor: Equatable, Sendable {
  /// Empty for an unnamed tensor (an attribute's value may have no name).
  public var name: String
  public var dataType: ONNXDataType
  /// Sizes, each at least 0; empty for a scalar.
  public var dims: [Int]
  public var storage: ONNXTensorStorage

  public init(name: String, dataType: ONNXDataType, dims: [Int], storage: ONNXTensorStorage) {
    self.name = name
    self.dataType = dataType
    self.dims = dims
    self.storage = storage
  }

  /// The number of values: the product of `dims` (1 for a scalar).
  public var elementCount: Int { storage.count }
}
