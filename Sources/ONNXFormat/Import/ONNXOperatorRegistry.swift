/// One handler per ONNX operator (or family), keyed by domain and op type, with the operator-set
/// version each handler's semantics start at (`since`). The supported table (README, `inspect`) is
/// derived from here; there is no other list.
public struct ONNXOperatorEntry: Sendable {
  /// The first opset of the default domain whose semantics this handler implements.
  public var since: Int
  let handler: @Sendable (inout ONNXNodeContext) throws -> Void
}

public enum ONNXOperatorRegistry {
  /// The newest default-domain opset whose operator changes the handlers were checked against (ONNX
  /// 1.17). A newer model is refused: an operator it changes would be read with older semantics.
  public static let newestOpset = 22

  /// Default-domain (`ai.onnx`) operators, by op type, their entries sorted by `since`.
  static let operators: [String: [ONNXOperatorEntry]] = {
    var all: [String: [ONNXOperatorEntry]] = [:]
    for family in [convolutionOperators, poolingOperators, normalizationOperators, elementwiseOperators, activationOperators,
                   linearOperators, shapeOperators, reductionOperators, recurrentOperators, constantOperators, controlFlowOperators] {
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

  /// Entries for op types that share one handler (`since` per op type).
  static func entries(_ versions: [String: [Int]], _ handler: @escaping @Sendable (inout ONNXNodeContext) throws -> Void) -> [String: [ONNXOperatorEntry]] {
    versions.mapValues { $0.map { ONNXOperatorEntry(since: $0, handler: handler) } }
  }
}
