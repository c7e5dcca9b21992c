import ModelIR

/// Where a convolution's kernel taps land in its `[H, W, C]` input, with TensorFlow's padding.
struct ConvolutionWindow {
  let conv: Convolution2D
  let height: Int
  let width: Int
  /// Padding rows above and columns left of the input.
  let top: Int
  let left: Int

  init(_ conv: Convolution2D, input shape: [Int]) {
    self.conv = conv
    height = shape[0]
    width = shape[1]
    top = conv.padding.leadingPad(
      input: height, kernel: conv.kernelHeight, stride: conv.strideHeight, dilation: conv.dilationHeight)
    left = conv.padding.leadingPad(
      input: width, kernel: conv.kernelWidth, stride: conv.strideWidth, dilation: conv.dilationWidth)
  }

  /// The input row that tap `ky` of output row `y` reads, or nil in the padding.
  @inline(__always) func row(_ y: Int, tap ky: Int) -> Int? {
    let iy = y * conv.strideHeight + ky * conv.dilationHeight - top
    return iy >= 0 && iy < height ? iy : nil
  }

  /// The input column that tap `kx` of output column `x` reads, or nil in the padding.
  @inline(__always) func column(_ x: Int, tap kx: Int) -> Int? {
    let ix = x * conv.strideWidth + kx * conv.dilationWidth - left
    return ix >= 0 && ix < width ? ix : nil
  }

  /// Calls `body(tap, pixel)` for every kernel tap of output pixel `(y, x)` that lands inside the input:
  /// `tap` is `ky * kernelWidth + kx`, `pixel` is `iy * width + ix`.
  @inline(__always) func forEachTap(_ y: Int, _ x: Int, _ body: (_ tap: Int, _ pixel: Int) -> Void) {
    for ky in 0..<conv.kernelHeight {
      guard let iy = row(y, tap: ky) else { continue }
      for kx in 0..<conv.kernelWidth {
        guard let ix = column(x, tap: kx) else { continue }
        body(ky * conv.kernelWidth + kx, iy * width + ix)
      }
    }
  }
}
