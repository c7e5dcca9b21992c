import Foundation
import ModelIR

/// Direct (unoptimized) implementations of the IR's spatial and elementwise operations.
enum Kernels {
  static func strides(_ shape: [Int]) -> [Int] {
    var result = [Int](repeating: 1, count: shape.count)
    for axis in stride(from: shape.count - 2, through: 0, by: -1) { result[axis] = result[axis + 1] * shape[axis + 1] }
    return result
  }

  static func convolution(_ x: Tensor, _ conv: Convolution2D, outputShape: [Int]) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow, oc) = (outputShape[0], outputShape[1], outputShape[2])
    let top = conv.padding.leadingPad(input: h, kernel: conv.kernelHeight, stride: conv.strideHeight, dilation: conv.dilationHeight)
    let left = conv.padding.leadingPad(input: w, kernel: conv.kernelWidth, stride: conv.strideWidth, dilation: conv.dilationWidth)
    let perGroupIn = conv.inputChannelsPerGroup, perGroupOut = oc / conv.groups
    var result = [Float](repeating: 0, count: oh * ow * oc)
    for y in 0..<oh {
      for xx in 0..<ow {
        for o in 0..<oc {
          let group = o / perGroupOut
          var sum = Double(conv.bias?.values[o] ?? 0)
          for ky in 0..<conv.kernelHeight {
            let iy = y * conv.strideHeight + ky * conv.dilationHeight - top
            guard iy >= 0, iy < h else { continue }
            for kx in 0..<conv.kernelWidth {
              let ix = xx * conv.strideWidth + kx * conv.dilationWidth - left
              guard ix >= 0, ix < w else { continue }
              for i in 0..<perGroupIn {
                let input = x.values[(iy * w + ix) * c + group * perGroupIn + i]
                let weight = conv.kernel.values[((ky * conv.kernelWidth + kx) * perGroupIn + i) * oc + o]
                sum += Double(input) * Double(weight)
              }
            }
          }
          result[(y * ow + xx) * oc + o] = Float(sum)
        }
      }
    }
    return result
  }

  static func pooling(_ x: Tensor, _ pool: Pooling2D, outputShape: [Int]) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow) = (outputShape[0], outputShape[1])
    let top = pool.padding.leadingPad(input: h, kernel: pool.poolHeight, stride: pool.strideHeight)
    let left = pool.padding.leadingPad(input: w, kernel: pool.poolWidth, stride: pool.strideWidth)
    var result = [Float](repeating: 0, count: oh * ow * c)
    for y in 0..<oh {
      for xx in 0..<ow {
        for k in 0..<c {
          var items: [Float] = []
          for py in 0..<pool.poolHeight {
            for px in 0..<pool.poolWidth {
              let iy = y * pool.strideHeight + py - top, ix = xx * pool.strideWidth + px - left
              if iy >= 0, iy < h, ix >= 0, ix < w { items.append(x.values[(iy * w + ix) * c + k]) }
            }
          }
          // Average excludes the padding, as TensorFlow does.
          result[(y * ow + xx) * c + k] = pool.kind == .max ? items.max()! : Float(items.reduce(0.0) { $0 + Double($1) } / Double(items.count))
        }
      }
    }
    return result
  }

  /// Output pixel (y, x) copies input pixel `source(y, x)`, or 0 outside the input.
  static func window(_ x: Tensor, outputShape: [Int], source: (Int, Int) -> (Int, Int)) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow) = (outputShape[0], outputShape[1])
    var result = [Float](repeating: 0, count: oh * ow * c)
    for y in 0..<oh {
      for xx in 0..<ow {
        let (iy, ix) = source(y, xx)
        guard iy >= 0, iy < h, ix >= 0, ix < w else { continue }
        for k in 0..<c { result[(y * ow + xx) * c + k] = x.values[(iy * w + ix) * c + k] }
      }
    }
    return result
  }

  /// Bilinear resize with half-pixel centres (TensorFlow's `resize(..., "bilinear")`).
  static func bilinear(_ x: Tensor, outputShape: [Int]) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow) = (outputShape[0], outputShape[1])
    func sample(_ out: Int, _ outSize: Int, _ inSize: Int) -> (Int, Int, Float) {
      let position = max((Float(out) + 0.5) * Float(inSize) / Float(outSize) - 0.5, 0)
      let low = min(Int(position), inSize - 1)
      return (low, min(low + 1, inSize - 1), position - Float(low))
    }
    var result = [Float](repeating: 0, count: oh * ow * c)
    for y in 0..<oh {
      let (y0, y1, fy) = sample(y, oh, h)
      for xx in 0..<ow {
        let (x0, x1, fx) = sample(xx, ow, w)
        for k in 0..<c {
          func at(_ iy: Int, _ ix: Int) -> Float { x.values[(iy * w + ix) * c + k] }
          let topRow = at(y0, x0) * (1 - fx) + at(y0, x1) * fx
          let bottomRow = at(y1, x0) * (1 - fx) + at(y1, x1) * fx
          result[(y * ow + xx) * c + k] = topRow * (1 - fy) + bottomRow * fy
        }
      }
    }
    return result
  }

  static func activation(_ activation: Activation, _ x: Tensor) -> [Float] {
    let c = x.shape.last ?? 1
    return x.values.enumerated().map { index, v in
      switch activation {
      case .linear(let scale, let offset): return scale * v + offset
      case .relu: return max(v, 0)
      case .clippedReLU(let maxValue, let slope, let threshold):
        let y = v >= threshold ? v : slope * (v - threshold)
        return maxValue.map { min(y, $0) } ?? y
      case .leakyReLU(let alpha): return v >= 0 ? v : alpha * v
      case .parametricReLU(let alpha):
        let a = alpha.values.count == x.values.count ? alpha.values[index] : alpha.values[index % c]
        return v >= 0 ? v : a * v
      case .elu(let alpha): return v > 0 ? v : alpha * (exp(v) - 1)
      case .selu: return Activation.seluScale * (v > 0 ? v : Activation.seluAlpha * (exp(v) - 1))
      case .thresholdedReLU(let theta): return v > theta ? v : 0
      case .sigmoid: return 1 / (1 + exp(-v))
      case .hardSigmoid(let slope, let offset): return min(max(slope * v + offset, 0), 1)
      case .tanh: return Foundation.tanh(v)
      case .softplus: return Float(log1p(exp(Double(v))))
      case .softsign: return v / (1 + abs(v))
      case .swish: return v / (1 + exp(-v))
      case .gelu(let approximate):
        if approximate {
          let inner = Float(0.7978845608028654) * (v + 0.044715 * v * v * v)
          return 0.5 * v * (1 + Foundation.tanh(inner))
        }
        return Float(0.5 * Double(v) * (1 + erf(Double(v) / 2.0.squareRoot())))
      case .exponential: return exp(v)
      }
    }
  }
}
