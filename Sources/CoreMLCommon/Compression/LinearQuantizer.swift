import Dispatch

/// Linear quantization per contiguous run of a tensor's values (a channel of axis 0, a convolution's or
/// inner product's output channels in Core ML's layout, or a block of one), as
/// `constexpr_affine_dequantize` and `constexpr_blockwise_shift_scale` decode it:
/// `w[c, ...] = scale[c] * (q[c, ...] - zero[c])`, with 8-bit or 4-bit codes.
public enum LinearQuantizer {
  public struct Result: Sendable, Equatable {
    /// The codes, one per byte: signed bit patterns (symmetric, within +-(2^(bits-1) - 1)) or unsigned
    /// (affine, 0 to 2^bits - 1).
    public var data: [UInt8]
    public var scales: [Float]
    /// Zero points as bytes of the data's type.
    public var zeroPoints: [UInt8]
    public var mode: WeightCompression.QuantizationMode

    /// The signed (symmetric) or unsigned (affine) code of element `i`.
    public func code(at i: Int) -> Float { mode == .symmetric ? Float(Int8(bitPattern: data[i])) : Float(data[i]) }

    /// Element `i` as decoded: `scale * (q - zero)` of its run.
    public func value(at i: Int) -> Float {
      let run = i / (data.count / scales.count)
      return scales[run] * (code(at: i) - (mode == .symmetric ? 0 : Float(zeroPoints[run])))
    }
  }

  /// `channels` runs of `values.count / channels` values each, `bits` (8 or 4) per code. `float16`: the
  /// scales are stored as float16, so the codes are computed with the rounded scales.
  public static func quantize(
    _ values: [Float], channels: Int, mode: WeightCompression.QuantizationMode, bits: Int = 8, float16: Bool = false
  ) -> Result {
    precondition(channels >= 1 && values.count % channels == 0 && (bits == 8 || bits == 4))
    let limit = Float((1 << (bits - 1)) - 1)
    let levels = Float((1 << bits) - 1)
    let inner = values.count / channels
    var data = [UInt8](repeating: 0, count: values.count)
    var scales = [Float](repeating: 1, count: channels)
    var zeros = [UInt8](repeating: 0, count: channels)
    func stored(_ scale: Float) -> Float { float16 ? Float(Float16(scale)) : scale }
    for c in 0..<channels {
      var low: Float = 0
      var high: Float = 0  // 0 stays exact
      for v in values[(c * inner)..<((c + 1) * inner)] {
        low = min(low, v)
        high = max(high, v)
      }
      switch mode {
      case .symmetric:
        let range = max(abs(low), abs(high))
        scales[c] = range > 0 ? stored(range / limit) : 1
      case .affine:
        let scale = high > low ? stored((high - low) / levels) : 1
        scales[c] = scale
        zeros[c] = UInt8(max(0, min(levels, (-low / scale).rounded())))
      }
    }
    data.withUnsafeMutableBufferPointer { out in
      let base = out.baseAddress!
      values.withUnsafeBufferPointer { input in
        DispatchQueue.concurrentPerform(iterations: channels) { c in
          let scale = scales[c]
          for i in (c * inner)..<((c + 1) * inner) {
            let q = (input[i] / scale).rounded()
            switch mode {
            case .symmetric: base[i] = UInt8(bitPattern: Int8(max(-limit, min(limit, q))))
            case .affine: base[i] = UInt8(max(0, min(levels, q + Float(zeros[c]))))
            }
          }
        }
      }
    }
    return Result(data: data, scales: scales, zeroPoints: zeros, mode: mode)
  }
}
