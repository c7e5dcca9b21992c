/// A transposed 2-D convolution (Keras' Conv2DTranspose) over a `[H, W, C]` tensor.
///
/// Each input pixel scatters `kernel` into the output at `stride` steps; with `same` padding the
/// output is shifted up and left by TensorFlow's leading pad for the forward convolution.
public struct ConvolutionTranspose: Sendable, Equatable {
  /// Keras layout `[kh, kw, outputChannels, inputChannels]`.
  public var kernel: Constant
  /// `[outputChannels]`, or nil without bias.
  public var bias: Constant?
  public var strides: [Int]
  public var padding: Padding
  /// The output's `[H, W]`, resolved from the input size, padding and output padding.
  public var outputSize: [Int]

  public init(kernel: Constant, bias: Constant?, strides: [Int], padding: Padding, outputSize: [Int]) {
    self.kernel = kernel
    self.bias = bias
    self.strides = strides
    self.padding = padding
    self.outputSize = outputSize
  }

  public var outputChannels: Int { kernel.shape[2] }
  public var inputChannels: Int { kernel.shape[3] }

  /// Rows (or columns) the scatter is shifted by: TensorFlow's leading pad of the forward convolution.
  public func leadingPad(input: Int, axis: Int) -> Int {
    guard padding == .same else { return 0 }
    return max((input - 1) * strides[axis] + kernel.shape[axis] - outputSize[axis], 0) / 2
  }

  /// Keras' output length for one axis (`deconv_output_length`, dilation 1).
  /// Returns 0 (refused by shape inference) when the length overflows or its inputs are out of range.
  public static func outputLength(input: Int, kernel: Int, stride: Int, padding: Padding, outputPadding: Int?) -> Int {
    guard input >= 1, kernel >= 1, stride >= 1, (outputPadding ?? 0) >= 0 else { return 0 }
    func checked(_ parts: [Int], times: (Int, Int)) -> Int {
      let (product, overflow) = times.0.multipliedReportingOverflow(by: times.1)
      guard !overflow else { return 0 }
      var total = product
      for part in parts {
        let (sum, overflow) = total.addingReportingOverflow(part)
        guard !overflow else { return 0 }
        total = sum
      }
      return max(total, 0)
    }
    guard let outputPadding else {
      return checked(padding == .same ? [] : [max(kernel - stride, 0)], times: (input, stride))
    }
    let pad = padding == .same ? kernel / 2 : 0
    return checked([kernel, -2 * pad, outputPadding], times: (input - 1, stride))
  }
}
