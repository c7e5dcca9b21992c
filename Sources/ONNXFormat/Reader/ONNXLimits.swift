import ModelIR

/// The bounds the ONNX reader holds every file to, so that hostile or corrupt files fail with an error
/// instead of trapping or exhausting memory or stack.
public enum ONNXLimits {
  /// The largest file read: 2 GiB, protobuf's own limit on one message (bigger models keep their
  /// weights in external data files).
  public static let maxFileSize = 1 << 31
  /// The most messages nested inside one another (subgraphs in attributes, types inside types).
  /// Real models nest a handful deep; protobuf-c decodes recursively, so depth costs C stack.
  public static let maxNestingDepth = 64
  /// The most elements one tensor may hold: the IR's limit (`GraphLimits.maxElementCount`).
  public static let maxElementCount = GraphLimits.maxElementCount
  /// The IR versions read: 3 (ONNX 1.0, the first with operator set imports) to 10 (ONNX 1.16, 1.17).
  public static let irVersions = 3...10
}
