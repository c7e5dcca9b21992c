import ModelIR

extension FastKernels {
  /// Same-shape elementwise add, subtract, multiply, maximum and minimum in one pass over flat
  /// buffers (broadcasting and the other kinds take the general loops); nil when not applicable.
  static func elementwise(_ kind: ElementwiseKind, _ inputs: [Tensor], outputShape: [Int]) -> [Float]? {
    guard inputs.count >= 2, inputs.allSatisfy({ $0.shape == outputShape }) else { return nil }
    let combine: (SIMD8<Float>, SIMD8<Float>) -> SIMD8<Float>
    let scalar: (Float, Float) -> Float
    switch kind {
    case .add: (combine, scalar) = ({ $0 + $1 }, { $0 + $1 })
    case .subtract: (combine, scalar) = ({ $0 - $1 }, { $0 - $1 })
    case .multiply: (combine, scalar) = ({ $0 * $1 }, { $0 * $1 })
    case .maximum: (combine, scalar) = ({ $0.replacing(with: $1, where: $1 .> $0) }, { Swift.max($0, $1) })
    case .minimum: (combine, scalar) = ({ $0.replacing(with: $1, where: $1 .< $0) }, { Swift.min($0, $1) })
    default: return nil
    }
    var result = inputs[0].values
    let count = result.count
    result.withUnsafeMutableBufferPointer { out in
      let outRaw = UnsafeMutableRawPointer(out.baseAddress!)
      for next in inputs.dropFirst() {
        next.values.withUnsafeBufferPointer { other in
          let otherRaw = UnsafeRawPointer(other.baseAddress!)
          var k = 0
          while k + 8 <= count {
            let offset = k * MemoryLayout<Float>.stride
            let value = combine(
              outRaw.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self),
              otherRaw.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self))
            outRaw.storeBytes(of: value, toByteOffset: offset, as: SIMD8<Float>.self)
            k += 8
          }
          while k < count {
            out[k] = scalar(out[k], other[k])
            k += 1
          }
        }
      }
    }
    return result
  }

  /// Global average or max pooling of one `[H, W, C]` image to `[C]` (or `[1, 1, C]`), channels innermost.
  static func globalPooling(_ x: Tensor, kind: PoolingKind) -> [Float] {
    let c = x.shape[2]
    let pixels = x.shape[0] * x.shape[1]
    if kind != .max {
      // Each channel's sum in Double, as the direct reduction: a float32 running sum over a large plane
      // (9 216 pixels of a segmentation model's squeeze-excitation) drifts by 1e-5 of the mean, which the
      // gating after it amplifies.
      var sums = [Double](repeating: 0, count: c)
      x.values.withUnsafeBufferPointer { input in
        sums.withUnsafeMutableBufferPointer { sums in
          for pixel in 0..<pixels {
            for k in 0..<c { sums[k] += Double(input[pixel * c + k]) }
          }
        }
      }
      return sums.map { Float($0 / Double(pixels)) }
    }
    var result = [Float](repeating: -.infinity, count: c)
    x.values.withUnsafeBufferPointer { input in
      result.withUnsafeMutableBufferPointer { out in
        for pixel in 0..<pixels {
          let row = input.baseAddress! + pixel * c
          accumulate(out.baseAddress!, row, count: c, max: true)
        }
      }
    }
    return result
  }
}

extension FastKernels {
  /// Max or average pooling (average over the taps inside the input, as TensorFlow) of one `[H, W, C]`
  /// image, channels innermost.
  static func pooling(_ x: Tensor, _ pool: Pooling2D, outputShape: [Int]) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow) = (outputShape[0], outputShape[1])
    let top = pool.padding.leadingPad(input: h, kernel: pool.poolHeight, stride: pool.strideHeight)
    let left = pool.padding.leadingPad(input: w, kernel: pool.poolWidth, stride: pool.strideWidth)
    let isMax = pool.kind == .max
    var result = [Float](repeating: isMax ? -.infinity : 0, count: oh * ow * c)
    x.values.withUnsafeBufferPointer { input in
      result.withUnsafeMutableBufferPointer { out in
        for y in 0..<oh {
          for xx in 0..<ow {
            let target = out.baseAddress! + (y * ow + xx) * c
            var taps = 0
            for py in 0..<pool.poolHeight {
              let iy = y * pool.strideHeight + py - top
              guard iy >= 0, iy < h else { continue }
              for px in 0..<pool.poolWidth {
                let ix = xx * pool.strideWidth + px - left
                guard ix >= 0, ix < w else { continue }
                taps += 1
                let source = input.baseAddress! + (iy * w + ix) * c
                accumulate(target, source, count: c, max: isMax)
              }
            }
            if !isMax && taps > 0 {
              let scale = 1 / Float(taps)
              for k in 0..<c { target[k] *= scale }
            }
          }
        }
      }
    }
    return result
  }
}

extension FastKernels {
  /// `target[k] = max(target[k], source[k])` (with `max`) or `target[k] += source[k]`, eight lanes at a
  /// time: the accumulation step of max and average pooling.
  @inline(__always)
  static func accumulate(_ target: UnsafeMutablePointer<Float>, _ source: UnsafePointer<Float>, count: Int, max: Bool) {
    let t = UnsafeMutableRawPointer(target)
    let s = UnsafeRawPointer(source)
    var k = 0
    while k + 8 <= count {
      let offset = k * MemoryLayout<Float>.stride
      var value = t.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
      let other = s.loadUnaligned(fromByteOffset: offset, as: SIMD8<Float>.self)
      if max {
        // A lane mask and a blend (the generic pointwiseMax is not specialized into vector code).
        value.replace(with: other, where: other .> value)
      } else {
        value += other
      }
      t.storeBytes(of: value, toByteOffset: offset, as: SIMD8<Float>.self)
      k += 8
    }
    while k < count {
      target[k] = max ? Swift.max(target[k], source[k]) : target[k] + source[k]
      k += 1
    }
  }
}
