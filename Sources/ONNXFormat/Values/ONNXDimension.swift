/// One dimension of a value's declared shape.
public enum ONNXDimension: Equatable, Hashable, Sendable {
  /// A fixed size (never negative).
  case value(Int)
  /// A named size ("batch", "N"), equal wherever the same name appears.
  case symbol(String)
  /// Neither size nor name given.
  case unknown
}

extension ONNXDimension: CustomStringConvertible {
  /// The size, the name, or `?`.
  public var description: String {
    switch self {
    case .value(let size): return String(size)
    case .symbol(let name): return name
    case .unknown: return "?"
    }
  }
}
