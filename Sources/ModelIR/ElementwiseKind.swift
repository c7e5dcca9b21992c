/// How an elementwise operation combines its inputs, with NumPy-style broadcasting.
public enum ElementwiseKind: String, Sendable, Equatable {
  case add
  /// The first input minus the second.
  case subtract
  case multiply
  /// The first input divided by the second.
  case divide
  case average
  case maximum
  case minimum
  /// The first input raised to the second.
  case power
  /// 1 where the first input is greater than the second, else 0 (and so on for the other comparisons).
  case greaterThan
  case greaterEqual
  case lessThan
  case lessEqual
  case equal
  case notEqual
  /// `condition != 0 ? a : b` for inputs `(condition, a, b)`.
  case select

  /// The number of inputs the kind takes, or nil for two or more.
  public var arity: Int? {
    switch self {
    case .add, .multiply, .average, .maximum, .minimum: return nil
    case .select: return 3
    default: return 2
    }
  }
}
