/// How a reduction combines the elements along its axes.
public enum ReductionKind: String, Sendable, Equatable {
  case mean
  case max
  case min
  case sum
}
