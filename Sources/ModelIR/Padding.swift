/// How a sliding window treats the border, with TensorFlow's semantics.
public enum Padding: String, Sendable, Equatable {
  /// Output size `ceil(in / stride)`; the extra padding pixel goes bottom/right.
  case same
  /// No padding; output size `floor((in - effectiveKernel) / stride) + 1`.
  case valid

  /// The output length of a window sweep along one axis.
  public func outputLength(input: Int, kernel: Int, stride: Int, dilation: Int = 1) -> Int {
    let effectiveKernel = (kernel - 1) * dilation + 1
    switch self {
    case .same: return (input + stride - 1) / stride
    case .valid: return input >= effectiveKernel ? (input - effectiveKernel) / stride + 1 : 0
    }
  }

  /// The padding added before the first element along one axis (TensorFlow puts the odd pixel after).
  public func leadingPad(input: Int, kernel: Int, stride: Int, dilation: Int = 1) -> Int {
    guard self == .same else { return 0 }
    let effectiveKernel = (kernel - 1) * dilation + 1
    let output = outputLength(input: input, kernel: kernel, stride: stride, dilation: dilation)
    return max((output - 1) * stride + effectiveKernel - input, 0) / 2
  }
}
