/// One handler per ONNX operator (or family), keyed by domain and op type, with the operator-set
/// version each handler's semantics start at (`since`). The supported table (README, `inspect`) is
/// derived from here; there is no other list.
public struct ONNXOperatorEntry: Sendable {
  /// The first opset of the default domain whose semantics this handler implements.
  public var since: Int
  /// What the operator says of its tensors' layout.
  public var layout: ONNXOperatorLayout = .own
  let handler: @Sendable (inout ONNXNodeContext) throws -> Void
}

/// What an operator says of the layout of the tensor it reads, for finding a channels-last interface
/// in a channels-first format (a TensorFlow export's `[1, H, W, C]` inputs).
public enum ONNXOperatorLayout: Sendable, Equatable {
  /// Nothing: elementwise, or its axes are explicit (`Pad`, `Slice`); a path through it keeps its layout.
  case neutral
  /// It computes on `[N, C, ...]`, channels first (convolutions, pooling, normalizations, `Resize`).
  case channelsFirst
  /// Its own: a reshape, transpose, reduction, ... (the layout does not pass through unchanged).
  case own
}

public enum ONNXOperatorRegistry {
  /// The newest default-domain opset whose operator changes the handlers were checked against (ONNX
  /// 1.17). A newer model is refused: an operator it changes would be read with older semantics.
  public static let newestOpset = 22

  /// Default-domain (`ai.onnx`) operators, by op type, their entries sorted by `since`.
  static let operators: [String: [ONNXOperatorEntry]] = {
    var all: [String: [ONNXOperatorEntry]] = [:]
    for family in [
      convolutionOperators, poolingOperators, normalizationOperators, elementwiseOperators, activationOperators,
      linearOperators, shapeOperators, reductionOperators, recurrentOperators, constantOperators, controlFlowOperators,
    ] {
      all.merge(family) { $0 + $1 }
    }
    return all.mapValues { $0.sorted { $0.since < $1.since } }
  }()

  /// Every supported op type with the opsets its handlers start at, sorted by name.
  public static var supported: [(opType: String, since: [Int])] {
    operators.keys.sorted().map { ($0, operators[$0]!.map(\.since)) }
  }

  /// The handler for `opType` at `opset`: the entry with the highest `since` not above it.
  public static func entry(domain: String, opType: String, opset: Int) -> ONNXOperatorEntry? {
    guard domain == "" || domain == "ai.onnx" else { return nil }
    return operators[opType]?.last { $0.since <= opset }
  }

  /// What `opType` says of its tensors' layout (`.own` for an operator the importer does not know).
  public static func layout(of opType: String) -> ONNXOperatorLayout {
    operators[opType]?.last?.layout ?? .own
  }

  /// Entries for op types that share one handler (`since` per op type) and layout.
  static func entries(
    _ versions: [String: [Int]], layout: ONNXOperatorLayout = .own,
    _ handler: @escaping @Sendable (inout ONNXNodeContext) throws -> Void
  ) -> [String: [ONNXOperatorEntry]] {
    versions.mapValues { $0.map { ONNXOperatorEntry(since: $0, layout: layout, handler: handler) } }
  }
}
