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
    let c = x.shape[2]
    let (oh, ow, oc) = (outputShape[0], outputShape[1], outputShape[2])
    let window = ConvolutionWindow(conv, input: x.shape)
    let perGroupIn = conv.inputChannelsPerGroup
    let perGroupOut = oc / conv.groups
    var result = [Float](repeating: 0, count: oh * ow * oc)
    // Each output sums in Double, from its bias, over the taps in order and each tap's input channels in
    // order: one sum per output channel is carried at once (the innermost loop runs along the kernel's
    // contiguous output channels), which changes no sum's order.
    var sums = [Double](repeating: 0, count: oc)
    let bias = conv.bias?.values
    x.values.withUnsafeBufferPointer { input in
      conv.kernel.values.withUnsafeBufferPointer { kernel in
        sums.withUnsafeMutableBufferPointer { sums in
          for y in 0..<oh {
            for xx in 0..<ow {
              for o in 0..<oc { sums[o] = Double(bias?[o] ?? 0) }
              window.forEachTap(y, xx) { tap, pixel in
                for group in 0..<conv.groups {
                  let outputs = group * perGroupOut..<(group + 1) * perGroupOut
                  for i in 0..<perGroupIn {
                    let value = Double(input[pixel * c + group * perGroupIn + i])
                    let row = (tap * perGroupIn + i) * oc
                    for o in outputs { sums[o] += value * Double(kernel[row + o]) }
                  }
                }
              }
              for o in 0..<oc { result[(y * ow + xx) * oc + o] = Float(sums[o]) }
            }
          }
        }
      }
    }
    return result
  }

  /// Scatters every input pixel through the kernel into the output (Conv2DTranspose).
  static func convolutionTranspose(_ x: Tensor, _ conv: ConvolutionTranspose, outputShape: [Int]) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow, oc) = (outputShape[0], outputShape[1], outputShape[2])
    let (kh, kw) = (conv.kernel.shape[0], conv.kernel.shape[1])
    let top = conv.leadingPad(input: h, axis: 0)
    let left = conv.leadingPad(input: w, axis: 1)
    var sums = [Double](repeating: 0, count: oh * ow * oc)
    for pixel in 0..<oh * ow { for o in 0..<oc { sums[pixel * oc + o] = Double(conv.bias?.values[o] ?? 0) } }
    for iy in 0..<h {
      for ix in 0..<w {
        for ky in 0..<kh {
          let y = iy * conv.strides[0] + ky - top
          guard y >= 0, y < oh else { continue }
          for kx in 0..<kw {
            let xx = ix * conv.strides[1] + kx - left
            guard xx >= 0, xx < ow else { continue }
            for o in 0..<oc {
              var sum = 0.0
              for i in 0..<c {
                sum +=
                  Double(x.values[(iy * w + ix) * c + i])
                  * Double(conv.kernel.values[((ky * kw + kx) * oc + o) * c + i])
              }
              sums[(y * ow + xx) * oc + o] += sum
            }
          }
        }
      }
    }
    return sums.map { Float($0) }
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
              let iy = y * pool.strideHeight + py - top
              let ix = xx * pool.strideWidth + px - left
              if iy >= 0, iy < h, ix >= 0, ix < w { items.append(x.values[(iy * w + ix) * c + k]) }
            }
          }
          // Average excludes the padding, as TensorFlow does.
          result[(y * ow + xx) * c + k] =
            pool.kind == .max ? items.max()! : Float(items.reduce(0.0) { $0 + Double($1) } / Double(items.count))
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
  static func bilinear(_ x: Tensor, outputShape: [Int], mode: UpsamplingMode) -> [Float] {
    let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
    let (oh, ow) = (outputShape[0], outputShape[1])
    func sample(_ out: Int, _ outSize: Int, _ inSize: Int) -> (Int, Int, Float) {
      let position = min(mode.position(out, outputSize: outSize, inputSize: inSize), Double(inSize - 1))
      let low = min(Int(position), inSize - 1)
      return (low, min(low + 1, inSize - 1), Float(position - Double(low)))
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
    let v = x.values
    // One loop per case, so the per-element work is a closure the optimizer can inline.
    switch activation {
    case .linear(let scale, let offset): return v.map { scale * $0 + offset }
    case .relu: return v.map { max($0, 0) }
    case .clippedReLU(let maxValue, let slope, let threshold):
      let ceiling = maxValue ?? .infinity
      return v.map { min($0 >= threshold ? $0 : slope * ($0 - threshold), ceiling) }
    case .leakyReLU(let alpha): return v.map { $0 >= 0 ? $0 : alpha * $0 }
    case .parametricReLU(let alpha):
      let c = x.shape.last ?? 1
      let full = alpha.values.count == v.count
      return v.indices.map { i in
        let a = full ? alpha.values[i] : alpha.values[i % c]
        return v[i] >= 0 ? v[i] : a * v[i]
      }
    case .elu(let alpha): return v.map { $0 > 0 ? $0 : alpha * (exp($0) - 1) }
    case .selu: return v.map { Activation.seluScale * ($0 > 0 ? $0 : Activation.seluAlpha * (exp($0) - 1)) }
    case .thresholdedReLU(let theta): return v.map { $0 > theta ? $0 : 0 }
    case .sigmoid: return v.map { 1 / (1 + exp(-$0)) }
    case .hardSigmoid(let slope, let offset): return v.map { min(max(slope * $0 + offset, 0), 1) }
    case .tanh: return v.map { Foundation.tanh($0) }
    case .softplus: return v.map { Float(log1p(exp(Double($0)))) }
    case .softsign: return v.map { $0 / (1 + abs($0)) }
    case .swish: return v.map { $0 / (1 + exp(-$0)) }
    case .hardSwish: return v.map { $0 * Swift.min(Swift.max($0 + 3, 0), 6) / 6 }
    case .gelu(let approximate):
      if approximate {
        return v.map { x in 0.5 * x * (1 + Foundation.tanh(Float(0.7978845608028654) * (x + 0.044715 * x * x * x))) }
      }
      return v.map { Float(0.5 * Double($0) * (1 + erf(Double($0) / 2.0.squareRoot()))) }
    case .exponential: return v.map { exp($0) }
    case .erf: return v.map { Float(Foundation.erf(Double($0))) }
    case .clip(let low, let high): return v.map { min(max($0, low), high) }
    case .sin: return v.map { Float(Foundation.sin(Double($0))) }
    case .cos: return v.map { Float(Foundation.cos(Double($0))) }
    case .floor: return v.map { $0.rounded(.down) }
    case .ceil: return v.map { $0.rounded(.up) }
    case .unary(let function): return v.map { unary(function, $0) }
    }
  }

  /// Applies an activation to `values` in place.
  static func apply(_ activation: Activation, to values: inout [Float]) {
    values.withUnsafeMutableBufferPointer { v in
      switch activation {
      case .relu: for i in v.indices { v[i] = max(v[i], 0) }
      case .clip(let low, let high): for i in v.indices { v[i] = min(max(v[i], low), high) }
      case .linear(let scale, let offset): for i in v.indices { v[i] = scale * v[i] + offset }
      case .clippedReLU(let maxValue, 0, 0):
        let ceiling = maxValue ?? .infinity
        for i in v.indices { v[i] = min(max(v[i], 0), ceiling) }
      default: break
      }
    }
    switch activation {
    case .relu, .clip, .linear, .clippedReLU(_, 0, 0): return
    default: values = Kernels.activation(activation, Tensor(shape: [values.count], values: values))
    }
  }

  static func unary(_ function: UnaryFunction, _ x: Float) -> Float {
    let v = function.scale * x + function.shift
    switch function.kind {
    case .sqrt: return v.squareRoot()
    case .rsqrt: return 1 / (v + function.epsilon).squareRoot()
    case .inverse: return 1 / (v + function.epsilon)
    case .power: return pow(v, function.alpha)
    case .exp: return exp(v)
    case .log: return Foundation.log(v + function.epsilon)
    case .abs: return Swift.abs(v)
    case .threshold: return max(v, function.alpha)
    }
  }

  /// `y = x · kernel + bias` for every vector along the last axis, accumulated in Double.
  static func dense(_ x: Tensor, _ dense: Dense) -> [Float] {
    let (n, m) = (dense.inputUnits, dense.outputUnits)
    var result: [Float] = []
    result.reserveCapacity(x.values.count / n * m)
    // Each output sums in Double from its bias over the inputs in order; all of a row's sums at once.
    var sums = [Double](repeating: 0, count: m)
    let bias = dense.bias?.values
    x.values.withUnsafeBufferPointer { input in
      dense.kernel.values.withUnsafeBufferPointer { kernel in
        for row in 0..<x.values.count / n {
          for o in 0..<m { sums[o] = Double(bias?[o] ?? 0) }
          sums.withUnsafeMutableBufferPointer { sums in
            for i in 0..<n {
              let value = Double(input[row * n + i])
              for o in 0..<m { sums[o] += value * Double(kernel[i * m + o]) }
            }
          }
          for o in 0..<m { result.append(Float(sums[o])) }
        }
      }
    }
    return result
  }

  /// ONNX's LRN across the last axis, sums in Double.
  static func localResponseNormalization(_ x: Tensor, _ lrn: LocalResponseNormalization) -> [Float] {
    let c = x.shape.last ?? 1
    var result = x.values
    guard c > 0 else { return result }
    for start in stride(from: 0, to: x.values.count, by: c) {
      for k in 0..<c {
        var sum = 0.0
        for i in max(0, k - lrn.before)...min(c - 1, k + lrn.after) {
          sum += Double(x.values[start + i]) * Double(x.values[start + i])
        }
        let scale = Foundation.pow(Double(lrn.bias) + Double(lrn.alpha) / Double(lrn.size) * sum, Double(lrn.beta))
        result[start + k] = Float(Double(x.values[start + k]) / scale)
      }
    }
    return result
  }

  static func softmax(_ x: Tensor, axis: Int) -> [Float] {
    let n = x.shape[axis]
    let inner = x.shape.suffix(from: axis + 1).reduce(1, *)
    let outer = x.values.count / (n * inner)
    var result = x.values
    for o in 0..<outer {
      for i in 0..<inner {
        let indices = (0..<n).map { (o * n + $0) * inner + i }
        let maximum = indices.map { x.values[$0] }.max()!
        let exps = indices.map { exp(Double(x.values[$0] - maximum)) }
        let total = exps.reduce(0, +)
        for (k, index) in indices.enumerated() { result[index] = Float(exps[k] / total) }
      }
    }
    return result
  }

  /// Calls `body(outputIndex, coordinates)` for every element of a tensor of this shape, in row-major order.
  static func forEachIndex(_ shape: [Int], _ body: (Int, [Int]) -> Void) {
    let count = shape.reduce(1, *)
    var coordinates = [Int](repeating: 0, count: shape.count)
    for index in 0..<count {
      body(index, coordinates)
      var axis = shape.count - 1
      while axis >= 0 {
        coordinates[axis] += 1
        if coordinates[axis] < shape[axis] { break }
        coordinates[axis] = 0
        axis -= 1
      }
    }
  }

  /// Strides that read `shape` as if broadcast to rank `rank` (0 along broadcast axes).
  static func broadcastStrides(_ shape: [Int], rank: Int) -> [Int] {
    let own = strides(shape)
    let offset = rank - shape.count
    return (0..<rank).map { axis in axis < offset || shape[axis - offset] == 1 ? 0 : own[axis - offset] }
  }

  /// `combine(a[i], b[i])` under NumPy broadcasting to `outputShape`.
  static func broadcast(_ a: Tensor, _ b: Tensor, outputShape: [Int], _ combine: (Float, Float) -> Float) -> [Float] {
    let count = outputShape.reduce(1, *)
    if a.shape == outputShape && b.shape == outputShape { return zip(a.values, b.values).map(combine) }
    let rank = outputShape.count
    let aStrides = broadcastStrides(a.shape, rank: rank)
    let bStrides = broadcastStrides(b.shape, rank: rank)
    var result = [Float](repeating: 0, count: count)
    var coordinates = [Int](repeating: 0, count: rank)
    var (ai, bi) = (0, 0)
    a.values.withUnsafeBufferPointer { av in
      b.values.withUnsafeBufferPointer { bv in
        for index in 0..<count {
          result[index] = combine(av[ai], bv[bi])
          var axis = rank - 1
          while axis >= 0 {
            coordinates[axis] += 1
            ai += aStrides[axis]
            bi += bStrides[axis]
            if coordinates[axis] < outputShape[axis] { break }
            ai -= aStrides[axis] * outputShape[axis]
            bi -= bStrides[axis] * outputShape[axis]
            coordinates[axis] = 0
            axis -= 1
          }
        }
      }
    }
    return result
  }

  static func elementwise(_ kind: ElementwiseKind, _ inputs: [Tensor], outputShape: [Int]) -> [Float] {
    func flag(_ condition: Bool) -> Float { condition ? 1 : 0 }
    func fold(_ combine: (Float, Float) -> Float) -> [Float] {
      var result = Tensor(shape: inputs[0].shape, values: inputs[0].values)
      for next in inputs.dropFirst() {
        let shape = Broadcasting.shape([result.shape, next.shape]) ?? outputShape
        result = Tensor(shape: shape, values: broadcast(result, next, outputShape: shape, combine))
      }
      return result.shape == outputShape
        ? result.values : broadcast(result, Tensor(zeros: outputShape), outputShape: outputShape, +)
    }
    switch kind {
    case .add: return fold(+)
    case .subtract: return fold(-)
    case .multiply: return fold(*)
    case .divide: return fold(/)
    case .average:
      let scale = 1 / Float(inputs.count)
      return fold(+).map { $0 * scale }
    case .maximum: return fold { max($0, $1) }
    case .minimum: return fold { min($0, $1) }
    case .power: return fold { pow($0, $1) }
    case .greaterThan: return fold { flag($0 > $1) }
    case .greaterEqual: return fold { flag($0 >= $1) }
    case .lessThan: return fold { flag($0 < $1) }
    case .lessEqual: return fold { flag($0 <= $1) }
    case .equal: return fold { flag($0 == $1) }
    case .notEqual: return fold { flag($0 != $1) }
    case .select:
      var result = [Float](repeating: 0, count: outputShape.reduce(1, *))
      let rank = outputShape.count
      let allStrides = inputs.map { broadcastStrides($0.shape, rank: rank) }
      forEachIndex(outputShape) { index, coordinates in
        let source = allStrides.map { strides in zip(coordinates, strides).reduce(0) { $0 + $1.0 * $1.1 } }
        result[index] = inputs[0].values[source[0]] != 0 ? inputs[1].values[source[1]] : inputs[2].values[source[2]]
      }
      return result
    }
  }

  static func reduce(_ x: Tensor, _ reduction: Reduction) -> [Float] {
    let keptShape = x.shape.enumerated().map { reduction.axes.contains($0.offset) ? 1 : $0.element }
    let keptStrides = strides(keptShape)
    let count = keptShape.reduce(1, *)
    let initial: Double = reduction.kind == .max ? -.infinity : reduction.kind == .min ? .infinity : 0
    var accumulators = [Double](repeating: initial, count: count)
    forEachIndex(x.shape) { index, coordinates in
      var target = 0
      for axis in coordinates.indices where !reduction.axes.contains(axis) {
        target += coordinates[axis] * keptStrides[axis]
      }
      let value = Double(x.values[index])
      switch reduction.kind {
      case .max: accumulators[target] = max(accumulators[target], value)
      case .min: accumulators[target] = min(accumulators[target], value)
      case .mean, .sum: accumulators[target] += value
      }
    }
    let reducedCount = Double(x.values.count / count)
    return accumulators.map { Float(reduction.kind == .mean ? $0 / reducedCount : $0) }
  }

  static func constantPad(_ x: Tensor, _ padding: ConstantPadding, outputShape: [Int]) -> [Float] {
    let inputStrides = strides(x.shape)
    var result = [Float](repeating: padding.value, count: outputShape.reduce(1, *))
    forEachIndex(outputShape) { index, coordinates in
      var source = 0
      for axis in coordinates.indices {
        let c = coordinates[axis] - padding.before[axis]
        guard c >= 0, c < x.shape[axis] else { return }
        source += c * inputStrides[axis]
      }
      result[index] = x.values[source]
    }
    return result
  }

  static func slice(_ x: Tensor, _ slice: StridedSlice, outputShape: [Int]) -> [Float] {
    let inputStrides = strides(x.shape)
    var result = [Float](repeating: 0, count: outputShape.reduce(1, *))
    forEachIndex(outputShape) { index, coordinates in
      var source = 0
      for axis in coordinates.indices {
        source += (slice.begin[axis] + coordinates[axis] * slice.strides[axis]) * inputStrides[axis]
      }
      result[index] = x.values[source]
    }
    return result
  }

  /// Rounds every value to the nearest float16 (ties to even; beyond 65504 to infinity), widened back:
  /// how the runtime emulates an ML Program that computes in float16.
  static func roundToFloat16(_ values: inout [Float]) {
    values.withUnsafeMutableBufferPointer { buffer in
      for i in buffer.indices { buffer[i] = Float(Float16(buffer[i])) }
    }
  }
}
