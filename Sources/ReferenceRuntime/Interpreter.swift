import Foundation
import ModelIR

/// A float32 reference interpreter of the IR: simple direct loops, deterministic, one batch item at a time.
///
/// It follows Keras semantics (channels-last, TensorFlow padding), so it serves as the oracle that
/// faster kernels and converted models are compared against.
public struct Interpreter {
  public let graph: Graph

  public init(graph: Graph) { self.graph = graph }

  /// Runs the graph on one batch item per input (in `graph.inputs` order) and returns the outputs.
  public func run(_ inputs: [Tensor]) -> [Tensor] {
    var values = [Tensor?](repeating: nil, count: graph.values.count)
    for (id, tensor) in zip(graph.inputs, inputs) {
      precondition(tensor.shape == graph[id].type.shape, "input '\(graph[id].name)' needs shape \(graph[id].type.shape)")
      values[id] = tensor
    }
    for node in graph.nodes {
      let arguments = node.inputs.map { values[$0]! }
      values[node.output] = Tensor(shape: graph[node.output].type.shape, values: evaluate(node.operation, arguments, outputShape: graph[node.output].type.shape))
    }
    return graph.outputs.map { values[$0]! }
  }

  func evaluate(_ operation: ModelIR.Operation, _ inputs: [Tensor], outputShape: [Int]) -> [Float] {
    let x = inputs[0]
    switch operation {
    case .convolution2D(let conv): return Kernels.convolution(x, conv, outputShape: outputShape)
    case .dense(let dense):
      let (n, m) = (dense.inputUnits, dense.outputUnits)
      return (0..<m).map { o in
        var sum = Double(dense.bias?.values[o] ?? 0)
        for i in 0..<n { sum += Double(x.values[i]) * Double(dense.kernel.values[i * m + o]) }
        return Float(sum)
      }
    case .batchNormalization(let norm):
      let c = norm.channels
      return x.values.enumerated().map { index, value in
        let k = index % c
        return norm.gamma.values[k] * (value - norm.mean.values[k]) / (norm.variance.values[k] + norm.epsilon).squareRoot() + norm.beta.values[k]
      }
    case .activation(let activation): return Kernels.activation(activation, x)
    case .softmax:
      let c = x.shape.last!
      var result = x.values
      for start in stride(from: 0, to: result.count, by: c) {
        let slice = result[start..<start + c]
        let maximum = slice.max()!
        let exps = slice.map { exp(Double($0 - maximum)) }
        let total = exps.reduce(0, +)
        for (offset, e) in exps.enumerated() { result[start + offset] = Float(e / total) }
      }
      return result
    case .pooling2D(let pool): return Kernels.pooling(x, pool, outputShape: outputShape)
    case .globalPooling2D(let kind, _):
      let (h, w, c) = (x.shape[0], x.shape[1], x.shape[2])
      return (0..<c).map { k in
        let column = (0..<h * w).map { x.values[$0 * c + k] }
        return kind == .max ? column.max()! : Float(column.reduce(0.0) { $0 + Double($1) } / Double(h * w))
      }
    case .flatten, .reshape: return x.values
    case .permute(let order):
      var result = [Float](repeating: 0, count: x.values.count)
      let inStrides = Kernels.strides(x.shape)
      let outStrides = Kernels.strides(outputShape)
      for index in 0..<result.count {
        var source = 0
        for axis in 0..<order.count { source += (index / outStrides[axis] % outputShape[axis]) * inStrides[order[axis]] }
        result[index] = x.values[source]
      }
      return result
    case .zeroPadding2D(let box):
      return Kernels.window(x, outputShape: outputShape) { y, xx in (y - box.top, xx - box.left) }
    case .cropping2D(let box):
      return Kernels.window(x, outputShape: outputShape) { y, xx in (y + box.top, xx + box.left) }
    case .upsampling2D(let fh, let fw, let bilinear):
      return bilinear ? Kernels.bilinear(x, outputShape: outputShape) : Kernels.window(x, outputShape: outputShape) { y, xx in (y / fh, xx / fw) }
    case .elementwise(let kind):
      return (0..<x.values.count).map { i in
        let items = inputs.map { $0.values[i] }
        switch kind {
        case .add: return items.reduce(0, +)
        case .subtract: return items[0] - items[1]
        case .multiply: return items.reduce(1, *)
        case .average: return items.reduce(0, +) / Float(items.count)
        case .maximum: return items.max()!
        case .minimum: return items.min()!
        }
      }
    case .concatenate(let axis):
      let outer = outputShape.prefix(axis).reduce(1) { $0 * $1 }
      var result: [Float] = []
      result.reserveCapacity(outputShape.reduce(1, *))
      for o in 0..<outer {
        for input in inputs {
          let block = input.shape.suffix(from: axis).reduce(1) { $0 * $1 }
          result += input.values[(o * block)..<((o + 1) * block)]
        }
      }
      return result
    }
  }
}
