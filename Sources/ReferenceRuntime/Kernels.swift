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
      case .clip(let low, let high): return min(max(v, low), high)
      case .unary(let function): return unary(function, v)
      }
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
    for row in 0..<x.values.count / n {
      for o in 0..<m {
        var sum = Double(dense.bias?.values[o] ?? 0)
        for i in 0..<n { sum += Double(x.values[row * n + i]) * Double(dense.kernel.values[i * m + o]) }
        result.append(Float(sum))
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

  /// Element `i` of every input under NumPy broadcasting to `outputShape`, combined by `combine`.
  static func broadcast(_ inputs: [Tensor], outputShape: [Int], _ combine: ([Float]) -> Float) -> [Float] {
    if inputs.allSatisfy({ $0.shape == outputShape }) {
      return (0..<outputShape.reduce(1, *)).map { i in combine(inputs.map { $0.values[i] }) }
    }
    let rank = outputShape.count
    let inputStrides = inputs.map { input -> [Int] in
      let own = strides(input.shape)
      let offset = rank - input.shape.count
      return (0..<rank).map { axis in axis < offset || input.shape[axis - offset] == 1 ? 0 : own[axis - offset] }
    }
    var result = [Float](repeating: 0, count: outputShape.reduce(1, *))
    forEachIndex(outputShape) { index, coordinates in
      let items = inputs.indices.map { k -> Float in
        var source = 0
        for axis in 0..<rank { source += coordinates[axis] * inputStrides[k][axis] }
        return inputs[k].values[source]
      }
      result[index] = combine(items)
    }
    return result
  }

  static func elementwise(_ kind: ElementwiseKind, _ inputs: [Tensor], outputShape: [Int]) -> [Float] {
    func flag(_ condition: Bool) -> Float { condition ? 1 : 0 }
    return broadcast(inputs, outputShape: outputShape) { items in
      switch kind {
      case .add: return items.reduce(0, +)
      case .subtract: return items[0] - items[1]
      case .multiply: return items.reduce(1, *)
      case .divide: return items[0] / items[1]
      case .average: return items.reduce(0, +) / Float(items.count)
      case .maximum: return items.max()!
      case .minimum: return items.min()!
      case .power: return pow(items[0], items[1])
      case .greaterThan: return flag(items[0] > items[1])
      case .greaterEqual: return flag(items[0] >= items[1])
      case .lessThan: return flag(items[0] < items[1])
      case .lessEqual: return flag(items[0] <= items[1])
      case .equal: return flag(items[0] == items[1])
      case .notEqual: return flag(items[0] != items[1])
      case .select: return items[0] != 0 ? items[1] : items[2]
      }
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
      for axis in coordinates.indices where !reduction.axes.contains(axis) { target += coordinates[axis] * keptStrides[axis] }
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
      for axis in coordinates.indices { source += (slice.begin[axis] + coordinates[axis] * slice.strides[axis]) * inputStrides[axis] }
      result[index] = x.values[source]
    }
    return result
  }
}
