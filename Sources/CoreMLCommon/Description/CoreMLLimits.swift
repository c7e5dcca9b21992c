/// Limits of the Core ML format that the writers and readers share.
public enum CoreMLLimits {
  /// The largest serialized `Model` message: 2^31 - 1 bytes. Protobuf lengths are signed 32-bit
  /// integers, and Apple's runtime parses `model.mlmodel` as one message, so a classic network whose
  /// weights make it larger cannot be loaded (an ML Program keeps its weights in `weight.bin`).
  public static let maximumSpecificationBytes = Int(Int32.max)
}
