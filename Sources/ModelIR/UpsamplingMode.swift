/// How an upsampling by an integer factor `f` from `n` to `f * n` positions reads its input: output
/// position `i` samples input position `x(i)`, between the two nearest input positions (the last one
/// repeated at the edge).
public enum UpsamplingMode: Sendable, Equatable {
  /// The input position `floor(i / f)`.
  case nearest
  /// `x(i) = max(0, (i + 0.5) / f - 0.5)`: half-pixel centres (Keras, TensorFlow 2, ONNX `half_pixel`,
  /// Core ML's `ALIGN_CORNERS_FALSE` and MIL `align_corners=False`).
  case bilinear
  /// `x(i) = i * (n - 1) / (f * n - 1)`: the corner pixels of input and output aligned (ONNX
  /// `align_corners`, Core ML's `ALIGN_CORNERS_TRUE`, MIL `align_corners=True`).
  case bilinearAlignCorners
  /// `x(i) = i / f`: TensorFlow 1's resize (ONNX `asymmetric`, Core ML's `DEFAULT` linear mode,
  /// MIL `resize_bilinear` sampling mode `DEFAULT`).
  case bilinearAsymmetric

  public var isBilinear: Bool { self != .nearest }

  /// The input position output position `i` of `outputSize` reads, for an input of `inputSize`.
  public func position(_ i: Int, outputSize: Int, inputSize: Int) -> Double {
    switch self {
    case .nearest: return Double(i * inputSize / outputSize)
    case .bilinear: return max((Double(i) + 0.5) * Double(inputSize) / Double(outputSize) - 0.5, 0)
    case .bilinearAlignCorners: return outputSize > 1 ? Double(i) * Double(inputSize - 1) / Double(outputSize - 1) : 0
    case .bilinearAsymmetric: return Double(i) * Double(inputSize) / Double(outputSize)
    }
  }
}
