import CComputeKernels
import Foundation
import ModelIR

/// The fast path's kernels besides oneDNN convolutions (`PreparedConvolution`): dense layers and the
/// im2col fallback through oneDNN's sgemm, and plain vector loops for elementwise and pooling steps.
///
/// `Kernels` holds the direct loops these are tested against; results agree within float32 error bounds.
enum FastKernels {
  /// `Kernels.roundToFloat16` with the CPU's F16C conversions where it has them (eight values per
  /// instruction; the same round-to-nearest-even), else the compiler's conversion.
  static func roundToFloat16(_ values: inout [Float], hardware: Bool = true) {
    values.withUnsafeMutableBufferPointer { mc_round_to_float16($0.baseAddress, $0.count, hardware ? 1 : 0) }
  }

  /// Whether `roundToFloat16` runs on F16C instructions here.
  static var hasFloat16Conversions: Bool { mc_has_f16c() != 0 }
  /// oneDNN's sgemm on the calling thread alone (row-major, `C = A B + beta C`).
  static func sgemm(
    _ m: Int, _ n: Int, _ k: Int, _ a: UnsafePointer<Float>, _ lda: Int, _ b: UnsafePointer<Float>, _ ldb: Int,
    beta: Float,
    _ c: UnsafeMutablePointer<Float>, _ ldc: Int
  ) {
    let status = mc_sgemm(Int32(m), Int32(n), Int32(k), a, Int32(lda), b, Int32(ldb), beta, c, Int32(ldc), 1)
    precondition(status == 0, "oneDNN sgemm refused \(m)x\(k) by \(k)x\(n)")
  }

  static func dense(_ x: Tensor, _ dense: Dense) -> [Float] {
    let (n, m) = (dense.inputUnits, dense.outputUnits)
    let rows = x.values.count / n
    var result = [Float](repeating: 0, count: rows * m)
    if let bias = dense.bias {
      for row in 0..<rows { result.replaceSubrange(row * m..<(row + 1) * m, with: bias.values) }
    }
    x.values.withUnsafeBufferPointer { a in
      dense.kernel.values.withUnsafeBufferPointer { b in
        result.withUnsafeMutableBufferPointer { c in
          sgemm(rows, m, n, a.baseAddress!, n, b.baseAddress!, m, beta: 1, c.baseAddress!, m)
        }
      }
    }
    return result
  }

  static func convolution(_ x: Tensor, _ conv: Convolution2D, outputShape: [Int]) -> [Float] {
    let (oh, ow, oc) = (outputShape[0], outputShape[1], outputShape[2])
    var result = [Float](repeating: 0, count: oh * ow * oc)
    if let bias = conv.bias {
      for pixel in 0..<oh * ow { result.replaceSubrange(pixel * oc..<(pixel + 1) * oc, with: bias.values) }
    }
    if conv.inputChannelsPerGroup == 1 && conv.groups > 1 {
      depthwise(x, conv, outputShape: outputShape, into: &result)
      return result
    }
    let perGroupIn = conv.inputChannelsPerGroup
    let perGroupOut = oc / conv.groups
    let depth = conv.kernelHeight * conv.kernelWidth * perGroupIn
    for group in 0..<conv.groups {
      let patches = im2col(x, conv, outputShape: outputShape, channelOffset: group * perGroupIn)
      patches.withUnsafeBufferPointer { a in
        conv.kernel.values.withUnsafeBufferPointer { b in
          result.withUnsafeMutableBufferPointer { c in
            sgemm(
              oh * ow, perGroupOut, depth, a.baseAddress!, depth, b.baseAddress! + group * perGroupOut, oc, beta: 1,
              c.baseAddress! + group * perGroupOut, oc)
          }
        }
      }
    }
    return result
  }

  /// The float32 values `convolution` gathers into im2col rows for one group (0 when it reads the
  /// input as it is: pointwise, or depthwise loops); saturating.
  static func patchCount(_ conv: Convolution2D, outputShape: [Int]) -> Int {
    if readsInputAsIs(conv) || (conv.inputChannelsPerGroup == 1 && conv.groups > 1) { return 0 }
    var count = 1
    for factor in [outputShape[0], outputShape[1], conv.kernelHeight, conv.kernelWidth, conv.inputChannelsPerGroup] {
      let (product, overflow) = count.multipliedReportingOverflow(by: factor)
      count = overflow ? .max : product
    }
    return count
  }

  /// A pointwise convolution of one group: its im2col rows are the input itself.
  static func readsInputAsIs(_ conv: Convolution2D) -> Bool {
    conv.kernelHeight == 1 && conv.kernelWidth == 1 && conv.strideHeight == 1 && conv.strideWidth == 1
      && conv.groups == 1
  }

  /// Rows of `[kh * kw * channelsPerGroup]` input values, one per output pixel, zeros for padding.
  private static func im2col(_ x: Tensor, _ conv: Convolution2D, outputShape: [Int], channelOffset: Int) -> [Float] {
    let c = x.shape[2]
    let (oh, ow) = (outputShape[0], outputShape[1])
    let perGroupIn = conv.inputChannelsPerGroup
    if readsInputAsIs(conv) { return x.values }
    let window = ConvolutionWindow(conv, input: x.shape)
    let depth = conv.kernelHeight * conv.kernelWidth * perGroupIn
    var patches = [Float](repeating: 0, count: patchCount(conv, outputShape: outputShape))
    x.values.withUnsafeBufferPointer { input in
      patches.withUnsafeMutableBufferPointer { out in
        for y in 0..<oh {
          for xx in 0..<ow {
            let row = (y * ow + xx) * depth
            window.forEachTap(y, xx) { tap, pixel in
              let source = pixel * c + channelOffset
              let target = row + tap * perGroupIn
              for i in 0..<perGroupIn { out[target + i] = input[source + i] }
            }
          }
        }
      }
    }
    return patches
  }

  /// One input channel per group (depthwise, with a channel multiplier): loops with channels innermost.
  private static func depthwise(_ x: Tensor, _ conv: Convolution2D, outputShape: [Int], into result: inout [Float]) {
    let c = x.shape[2]
    let (oh, ow, oc) = (outputShape[0], outputShape[1], outputShape[2])
    let multiplier = oc / c
    let window = ConvolutionWindow(conv, input: x.shape)
    x.values.withUnsafeBufferPointer { input in
      conv.kernel.values.withUnsafeBufferPointer { kernel in
        result.withUnsafeMutableBufferPointer { out in
          for y in 0..<oh {
            for xx in 0..<ow {
              let target = (y * ow + xx) * oc
              window.forEachTap(y, xx) { tap, pixel in
                let source = pixel * c
                let weights = tap * oc
                if multiplier == 1 {
                  multiplyAdd(
                    out.baseAddress! + target, input.baseAddress! + source, kernel.baseAddress! + weights, count: c)
                } else {
                  for k in 0..<c {
                    let value = input[source + k]
                    for j in 0..<multiplier {
                      out[target + k * multiplier + j] += value * kernel[weights + k * multiplier + j]
                    }
                  }
                }
              }
            }
          }
        }
      }
    }
  }

  /// `out[i] += a[i] * b[i]` for `count` elements, eight lanes at a time.
  @inline(__always)
  private static func multiplyAdd(
    _ out: UnsafeMutablePointer<Float>, _ a: UnsafePointer<Float>, _ b: UnsafePointer<Float>, count: Int
  ) {
    var k = 0
    let outRaw = UnsafeMutableRawPointer(out)
    let aRaw = UnsafeRawPointer(a)
    let bRaw = UnsafeRawPointer(b)
    while k + 8 <= count {
      let offset = k * MemoryLayout<Float>.stride
      let sum =
        outRaw.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
        + aRaw.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
        * bRaw.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
      outRaw.storeBytes(of: sum, toByteOffset: offset, as: SIMD8<Float>.self)
      k += 8
    }
    while k < count {
      out[k] += a[k] * b[k]
      k += 1
    }
  }
}

extension Interpreter {
  /// The kernels the fast path runs on this machine (for benchmarks and `modelconv --version --verbose`):
  /// oneDNN's version and the instruction set its kernels use here, which oneDNN reads from the CPU's
  /// feature flags (cpuid), capped by `ONEDNN_MAX_CPU_ISA` when set.
  public static var backendDescription: String {
    "oneDNN \(String(cString: mc_dnnl_version())) with \(String(cString: mc_cpu_isa())) kernels"
  }
}

extension FastKernels {
  /// Calls `body` for each row along the last axis of `shape`, in order: the row's index and its
  /// coordinates on the other axes.
  static func forEachRow(_ shape: [Int], _ body: (Int, [Int]) -> Void) {
    let outer = Array(shape.dropLast())
    var coordinates = [Int](repeating: 0, count: outer.count)
    for row in 0..<outer.reduce(1, *) {
      body(row, coordinates)
      var axis = outer.count - 1
      while axis >= 0 {
        coordinates[axis] += 1
        if coordinates[axis] < outer[axis] { break }
        coordinates[axis] = 0
        axis -= 1
      }
    }
  }

  /// `Kernels.constantPad` a row at a time: each output row along the last axis filled, then the part
  /// that holds input copied whole.
  static func constantPad(_ x: Tensor, _ padding: ConstantPadding, outputShape: [Int]) -> [Float] {
    let rank = outputShape.count
    guard rank >= 1, x.shape.count == rank, padding.before.count == rank else {
      return Kernels.constantPad(x, padding, outputShape: outputShape)
    }
    var result = [Float](repeating: padding.value, count: outputShape.reduce(1, *))
    let last = rank - 1
    let (inner, width, before) = (x.shape[last], outputShape[last], padding.before[last])
    let start = max(0, before)
    let end = min(width, before + inner)
    guard start < end else { return result }
    let strides = Kernels.strides(x.shape)
    x.values.withUnsafeBufferPointer { source in
      result.withUnsafeMutableBufferPointer { destination in
        forEachRow(outputShape) { row, coordinates in
          var offset = 0
          for axis in 0..<last {
            let c = coordinates[axis] - padding.before[axis]
            guard c >= 0, c < x.shape[axis] else { return }
            offset += c * strides[axis]
          }
          let from = offset + start - before
          for i in 0..<(end - start) { destination[row * width + start + i] = source[from + i] }
        }
      }
    }
    return result
  }

  /// `Kernels.slice` a row at a time when the last axis is read with stride 1 (else the direct loop).
  static func slice(_ x: Tensor, _ slice: StridedSlice, outputShape: [Int]) -> [Float] {
    let rank = outputShape.count
    guard rank >= 1, x.shape.count == rank, slice.strides.count == rank, slice.strides[rank - 1] == 1 else {
      return Kernels.slice(x, slice, outputShape: outputShape)
    }
    var result = [Float](repeating: 0, count: outputShape.reduce(1, *))
    let last = rank - 1
    let width = outputShape[last]
    let strides = Kernels.strides(x.shape)
    guard width > 0 else { return result }
    x.values.withUnsafeBufferPointer { source in
      result.withUnsafeMutableBufferPointer { destination in
        forEachRow(outputShape) { row, coordinates in
          var offset = slice.begin[last]
          for axis in 0..<last {
            offset += (slice.begin[axis] + coordinates[axis] * slice.strides[axis]) * strides[axis]
          }
          for i in 0..<width { destination[row * width + i] = source[offset + i] }
        }
      }
    }
    return result
  }
}
