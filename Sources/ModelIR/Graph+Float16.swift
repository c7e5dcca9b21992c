extension Operation {
  /// The operation with every constant it holds replaced by `transform`'s result (same shapes).
  public func mappingConstants(_ transform: (Constant) -> Constant) -> Operation {
    switch self {
    case .convolution2D(var c):
      c.kernel = transform(c.kernel)
      c.bias = c.bias.map(transform)
      return .convolution2D(c)
    case .dense(var d):
      d.kernel = transform(d.kernel)
      d.bias = d.bias.map(transform)
      return .dense(d)
    case .convolutionTranspose(var c):
      c.kernel = transform(c.kernel)
      c.bias = c.bias.map(transform)
      return .convolutionTranspose(c)
    case .batchNormalization(var b):
      (b.gamma, b.beta, b.mean, b.variance) = (
        transform(b.gamma), transform(b.beta), transform(b.mean), transform(b.variance)
      )
      return .batchNormalization(b)
    case .activation(.parametricReLU(let alpha)): return .activation(.parametricReLU(alpha: transform(alpha)))
    case .constant(let value): return .constant(transform(value))
    case .embedding(let table): return .embedding(table: transform(table))
    case .custom(var layer):
      layer.weights = layer.weights.map(transform)
      return .custom(layer)
    case .layerNormalization(var norm):
      (norm.gamma, norm.beta) = (norm.gamma.map(transform), norm.beta.map(transform))
      return .layerNormalization(norm)
    case .recurrent(var r):
      func weights(_ w: Recurrent.Weights) -> Recurrent.Weights {
        var w = w
        (w.kernel, w.recurrentKernel, w.bias) = (
          transform(w.kernel), transform(w.recurrentKernel), w.bias.map(transform)
        )
        return w
      }
      r.forward = weights(r.forward)
      r.backward = r.backward.map(weights)
      return .recurrent(r)
    default: return self
    }
  }
}

extension Graph {
  /// The graph as a float16 program computes it: every constant rounded to float16 and every computed value
  /// typed float16 (which the reference runtime rounds each result to). Inputs stay as they are.
  public func emulatingFloat16() -> Graph {
    var copy = self
    copy.nodes = nodes.map { node in
      var node = node
      node.operation = node.operation.mappingConstants { constant in
        Constant(shape: constant.shape, values: constant.values.map { Float(Float16($0)) })
      }
      return node
    }
    for node in nodes { copy.values[node.output].type.dataType = .float16 }
    return copy
  }
}
