/// The element type of a tensor.
public enum DataType: String, Sendable, Equatable {
  /// 32-bit IEEE float: every activation and weight of a Keras graph.
  case float32
  /// 16-bit IEEE float, as an ML Program computing in float16 holds its values. The reference runtime
  /// computes in float32 and rounds each such value to the nearest float16 (ties to even, overflow to
  /// infinity) as it is produced, so it sees what float16 storage keeps.
  case float16
}
