/// The element type of a tensor.
public enum DataType: String, Sendable, Equatable {
  /// 32-bit IEEE float: every activation and weight in the IR.
  case float32
}
