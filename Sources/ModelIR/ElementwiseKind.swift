/// How a merge combines two or more same-shaped tensors.
public enum ElementwiseKind: String, Sendable, Equatable {
  case add
  /// The first input minus the second.
  case subtract
  case multiply
  case average
  case maximum
  case minimum
}
