import CComputeKernels
import ModelIR

/// A convolution handed to oneDNN once (its kernel chosen for this CPU, its weights reordered for it),
/// then run on every image. The activations at the front of the step's epilogue that oneDNN can apply
/// while storing (ReLU, leaky ReLU, clip, linear) run inside it; the rest stay in `remainingEpilogue`.
final class PreparedConvolution: @unchecked Sendable {
  private let handle: OpaquePointer
  let inputShape: [Int]
  let outputShape: [Int]
  let remainingEpilogue: [Activation]
  let zeroPadding: Box2D?
  /// Whether the result is added to what the destination holds (a residual `Add` fused in).
  let accumulates: Bool

  /// Nil when oneDNN refuses the convolution (the im2col path runs it instead).
  /// - Parameter zeroPadding: a ZeroPadding2D before a `valid` convolution, folded into it: `inputShape`
  ///   is then the unpadded input.
  /// - Parameter afterSum: for a convolution whose result is added to another tensor (`run(_:threads:adding:)`):
  ///   the activations after that addition. All of `epilogue` must then be post-ops.
  init?(
    _ conv: Convolution2D, inputShape: [Int], outputShape: [Int], epilogue: [Activation], zeroPadding: Box2D? = nil,
    afterSum: [Activation]? = nil
  ) {
    // oneDNN's brgconv kernels keep state for every output column (about 480 bytes each, measured with
    // oneDNN 2.6 on AVX-512: 48 MB per convolution of a 100 000-step Conv1D, whose steps are the width),
    // held as long as the primitive; wider outputs run on the im2col path, whose buffer lives one step.
    guard inputShape.count == 3, outputShape.count == 3, conv.groups >= 1, outputShape[1] <= Self.maxOutputWidth else {
      return nil
    }
    if let zeroPadding,
      conv.padding != .valid
        || [zeroPadding.top, zeroPadding.left, zeroPadding.bottom, zeroPadding.right].contains(where: { $0 < 0 })
    {
      return nil
    }
    let window = ConvolutionWindow(conv, input: inputShape)
    let (top, left) = zeroPadding.map { ($0.top, $0.left) } ?? (window.top, window.left)
    let (kh, kw) = (conv.kernelHeight, conv.kernelWidth)
    // TensorFlow's padding: what is left after the leading pad, none when the window fits without it.
    let bottom = max(
      (outputShape[0] - 1) * conv.strideHeight + (kh - 1) * conv.dilationHeight + 1 - inputShape[0] - top, 0)
    let right = max(
      (outputShape[1] - 1) * conv.strideWidth + (kw - 1) * conv.dilationWidth + 1 - inputShape[1] - left, 0)
    var shape = mc_conv_shape(
      in_h: Int32(inputShape[0]), in_w: Int32(inputShape[1]), in_c: Int32(inputShape[2]), out_h: Int32(outputShape[0]),
      out_w: Int32(outputShape[1]), out_c: Int32(outputShape[2]), kernel_h: Int32(kh), kernel_w: Int32(kw),
      stride_h: Int32(conv.strideHeight), stride_w: Int32(conv.strideWidth), dilation_h: Int32(conv.dilationHeight),
      dilation_w: Int32(conv.dilationWidth), pad_top: Int32(top), pad_left: Int32(left), pad_bottom: Int32(bottom),
      pad_right: Int32(right), groups: Int32(conv.groups))
    var kinds: [Int32] = []
    var alphas: [Float] = []
    var betas: [Float] = []
    var rest = epilogue[...]
    while let first = rest.first, let (kind, alpha, beta) = Self.postOp(first) {
      kinds.append(kind)
      alphas.append(alpha)
      betas.append(beta)
      rest = rest.dropFirst()
    }
    if let afterSum {
      guard rest.isEmpty else { return nil }
      kinds.append(Int32(MC_POST_SUM))
      alphas.append(1)
      betas.append(0)
      rest = afterSum[...]
      while let first = rest.first, let (kind, alpha, beta) = Self.postOp(first) {
        kinds.append(kind)
        alphas.append(alpha)
        betas.append(beta)
        rest = rest.dropFirst()
      }
    }
    var error = [CChar](repeating: 0, count: 256)
    let created = conv.kernel.values.withUnsafeBufferPointer { weights in
      (conv.bias?.values ?? []).withUnsafeBufferPointer { bias in
        mc_conv_create(
          &shape, weights.baseAddress, conv.bias == nil ? nil : bias.baseAddress, Int32(kinds.count), kinds, alphas,
          betas, &error, error.count)
      }
    }
    guard let created else { return nil }
    handle = created
    self.inputShape = inputShape
    self.outputShape = outputShape
    remainingEpilogue = Array(rest)
    self.zeroPadding = zeroPadding
    accumulates = afterSum != nil
  }

  deinit { mc_conv_destroy(handle) }

  /// The widest output handed to oneDNN (2^16: wider than any image or audio window in common use).
  static let maxOutputWidth = 1 << 16

  /// Bytes oneDNN keeps for each thread that runs this convolution (its scratchpad).
  var bytesPerThread: Int { Int(clamping: mc_conv_scratchpad_bytes(handle)) }

  /// The oneDNN post-op for an activation, when there is one with the same formula.
  static func postOp(_ activation: Activation) -> (Int32, Float, Float)? {
    switch activation {
    case .relu: return (Int32(MC_POST_RELU), 0, 0)
    case .leakyReLU(let alpha) where alpha.isFinite: return (Int32(MC_POST_RELU), alpha, 0)
    case .clippedReLU(nil, 0, 0): return (Int32(MC_POST_RELU), 0, 0)
    case .clippedReLU(let maxValue?, 0, 0) where maxValue.isFinite && maxValue >= 0:
      return (Int32(MC_POST_CLIP), 0, maxValue)
    case .clip(let low, let high) where low.isFinite && high.isFinite && low <= high:
      return (Int32(MC_POST_CLIP), low, high)
    case .linear(let scale, let offset) where scale.isFinite && offset.isFinite:
      return (Int32(MC_POST_LINEAR), scale, offset)
    default: return nil
    }
  }

  /// The convolution added to `addend` (same shape as the output), into `addend`'s own buffer: pass
  /// it uniquely referenced and no copy is made.
  func run(_ values: [Float], threads: Int, adding addend: inout [Float]) {
    let images = values.count / inputShape.reduce(1, *)
    precondition(accumulates && addend.count == images * outputShape.reduce(1, *))
    addend.withUnsafeMutableBufferPointer { convolve(values, into: $0.baseAddress!, threads: threads) }
  }

  /// The convolution of one `[H, W, C]` image (`values` holds one or more, one after another).
  func run(_ values: [Float], threads: Int) -> [Float] {
    let inSize = inputShape.reduce(1, *)
    let outSize = outputShape.reduce(1, *)
    let images = values.count / inSize
    // Every element is written by the convolution: no zero fill first.
    return [Float](unsafeUninitializedCapacity: images * outSize) { target, initialized in
      convolve(values, into: target.baseAddress!, threads: threads)
      initialized = images * outSize
    }
  }

  /// Runs the convolution on each image of `values`, writing (or, when `accumulates`, adding) into `target`.
  private func convolve(_ values: [Float], into target: UnsafeMutablePointer<Float>, threads: Int) {
    let inSize = inputShape.reduce(1, *)
    let outSize = outputShape.reduce(1, *)
    values.withUnsafeBufferPointer { source in
      for image in 0..<(values.count / inSize) {
        let status = mc_conv_run(
          handle, source.baseAddress! + image * inSize, target + image * outSize, Int32(threads), nil, 0)
        precondition(status == 0, "oneDNN could not run a convolution it accepted")
      }
    }
  }
}

/// A pooling step handed to oneDNN once (max, or average over the taps inside the input as TensorFlow
/// does), then run on every image.
final class PreparedPooling: @unchecked Sendable {
  private let handle: OpaquePointer
  let inputShape: [Int]
  let outputShape: [Int]

  init?(_ pool: Pooling2D, inputShape: [Int], outputShape: [Int]) {
    guard inputShape.count == 3, outputShape.count == 3, outputShape[0] > 0, outputShape[1] > 0 else { return nil }
    let top = pool.padding.leadingPad(input: inputShape[0], kernel: pool.poolHeight, stride: pool.strideHeight)
    let left = pool.padding.leadingPad(input: inputShape[1], kernel: pool.poolWidth, stride: pool.strideWidth)
    let bottom = max((outputShape[0] - 1) * pool.strideHeight + pool.poolHeight - inputShape[0] - top, 0)
    let right = max((outputShape[1] - 1) * pool.strideWidth + pool.poolWidth - inputShape[1] - left, 0)
    var shape = mc_pool_shape(
      in_h: Int32(inputShape[0]), in_w: Int32(inputShape[1]), channels: Int32(inputShape[2]),
      out_h: Int32(outputShape[0]),
      out_w: Int32(outputShape[1]), kernel_h: Int32(pool.poolHeight), kernel_w: Int32(pool.poolWidth),
      stride_h: Int32(pool.strideHeight),
      stride_w: Int32(pool.strideWidth), pad_top: Int32(top), pad_left: Int32(left), pad_bottom: Int32(bottom),
      pad_right: Int32(right),
      is_max: pool.kind == .max ? 1 : 0)
    guard let created = mc_pool_create(&shape, nil, 0) else { return nil }
    handle = created
    self.inputShape = inputShape
    self.outputShape = outputShape
  }

  deinit { mc_pool_destroy(handle) }

  /// Bytes oneDNN keeps for each thread that runs this pooling (its scratchpad).
  var bytesPerThread: Int { Int(clamping: mc_pool_scratchpad_bytes(handle)) }

  /// The pooling of one or more `[H, W, C]` images stored one after another.
  func run(_ values: [Float]) -> [Float] {
    let inSize = inputShape.reduce(1, *)
    let outSize = outputShape.reduce(1, *)
    let images = values.count / inSize
    return [Float](unsafeUninitializedCapacity: images * outSize) { target, initialized in
      values.withUnsafeBufferPointer { source in
        for image in 0..<images {
          let status = mc_pool_run(
            handle, source.baseAddress! + image * inSize, target.baseAddress! + image * outSize, nil, 0)
          precondition(status == 0, "oneDNN could not run a pooling it accepted")
        }
      }
      initialized = images * outSize
    }
  }
}
