/// How a sliding window treats the border, with TensorFlow's semantics.
public enum Padding: String, Sendable, Equatable {
  /// Output size `ceil(in / stride)`; the extra padding pixel goes bottom/right.
  case same
  /// No padding; output size `floor((in - effectiveKernel) / stride) + 1`.
  case valid

  /// The output length of a window sweep along one axis.
  ///
  /// Returns 0 (no output) for a stride, kernel or dilation below 1 or a window too large to compute,
  /// so callers refuse such windows instead of dividing by zero or overflowing.
  public func outputLength(input: Int, kernel: Int, stride: Int, dilation: Int = 1) -> Int {
    guard input >= 0, kernel >= 1, stride >= 1, dilation >= 1,
      let effectiveKernel = Self.effectiveKernel(kernel, dilation)
    else { return 0 }
    switch self {
    case .same: return input / stride + (input % stride == 0 ? 0 : 1)
    case .valid: return input >= effectiveKernel ? (input - effectiveKernel) / stride + 1 : 0
    }
  }

  /// The extent a window sweep covers along one axis, the input and the padding together: the input for
  /// `valid` (or the dilated kernel, when larger), `(output - 1) * stride + effectiveKernel` for `same`.
  /// Nil on overflow or invalid parameters.
  public func paddedExtent(input: Int, kernel: Int, stride: Int, dilation: Int = 1) -> Int? {
    guard input >= 0, kernel >= 1, stride >= 1, dilation >= 1,
      let effectiveKernel = Self.effectiveKernel(kernel, dilation)
    else { return nil }
    switch self {
    case .valid: return max(input, effectiveKernel)
    case .same:
      let output = outputLength(input: input, kernel: kernel, stride: stride, dilation: dilation)
      let (steps, overflow) = max(output - 1, 0).multipliedReportingOverflow(by: stride)
      guard !overflow else { return nil }
      let (extent, overflow2) = steps.addingReportingOverflow(effectiveKernel)
      return overflow2 ? nil : max(input, extent)
    }
  }

  /// `(kernel - 1) * dilation + 1`, or nil on overflow.
  static func effectiveKernel(_ kernel: Int, _ dilation: Int) -> Int? {
    let (span, overflow) = (kernel - 1).multipliedReportingOverflow(by: dilation)
    guard !overflow, span < Int.max else { return nil }
    return span + 1
  }

  /// The padding added before the first element along one axis (TensorFlow puts the odd pixel after).
  public func leadingPad(input: Int, kernel: Int, stride: Int, dilation: Int = 1) -> Int {
    guard self == .same, let effectiveKernel = Self.effectiveKernel(kernel, dilation) else { return 0 }
    let output = outputLength(input: input, kernel: kernel, stride: stride, dilation: dilation)
    guard output >= 1 else { return 0 }
    let (span, overflow) = (output - 1).multipliedReportingOverflow(by: stride)
    guard !overflow, span <= Int.max - effectiveKernel else { return 0 }
    return max(span + effectiveKernel - input, 0) / 2
  }
}
