/// Layer normalization over the last axis as exporters write it without an operator of its own
/// (PyTorch's `LayerNorm` before opset 17, and the `LayerNorm2d` of ConvNeXt's head at any opset):
///
///     mean = reduce_mean(x, last axis, keepdims);  d = x - mean
///     variance = reduce_mean(d ^ 2 (or d * d), last axis, keepdims)
///     y = d / sqrt(variance + epsilon)   (or d * rsqrt(variance + epsilon))
///     [y * gamma] [+ beta]               (constants along the last axis, or scalars)
///
/// becomes one `layerNormalization` of `x`, which every writer has (the classic format has no mean over
/// an axis but its channels, and no broadcasting division). Every intermediate result must be read only
/// inside the pattern. Where constants broadcast the result to more leading unit axes than `x` has, a
/// reshape after the normalization adds them.
public struct LayerNormFusionPass: GraphPass {
  public let name = "fuse-layer-norm"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    var changed = true
    while changed {
      changed = false
      let lookup = graph.lookup
      for index in graph.nodes.indices {
        guard let match = Self.match(meanAt: index, in: graph, lookup: lookup) else { continue }
        let last = graph.nodes[match.last]
        let shape = graph[match.x].type.shape
        if graph[last.output].type.shape == shape {
          try graph.replaceOperation(ofNodeAt: match.last, with: .layerNormalization(match.norm), inputs: [match.x])
          graph = graph.pruned()
        } else {
          graph.moveBefore(
            nodeAt: match.last, operation: .layerNormalization(match.norm), sources: [match.x], shape: shape,
            suffix: "__normalized",
            follower: .reshape(targetShape: graph[last.output].type.shape), followerName: last.name + "__unit_axes",
            origin: last.origin)
        }
        changed = true
        break
      }
    }
  }

  /// The values of the constant producing `id`, or nil when a constant node does not produce it.
  static func constant(_ id: ValueID, in graph: Graph, lookup: GraphIndex) -> Constant? {
    guard let producer = lookup.producer[id], case .constant(let c) = graph.nodes[producer].operation else {
      return nil
    }
    return c
  }

  /// For the first mean of a layer normalization at `index`: its input, the normalization and the node
  /// computing its result.
  static func match(meanAt index: Int, in graph: Graph, lookup: GraphIndex) -> (
    x: ValueID, norm: LayerNormalization, last: Int
  )? {
    func isMeanOverLastAxis(_ node: Node) -> Bool {
      guard case .reduce(let r) = node.operation, r.kind == .mean, r.keepDims else { return false }
      return r.axes == [graph[node.inputs[0]].type.shape.count - 1]
    }
    /// The single node reading `id` (which is no graph output).
    func onlyReader(_ id: ValueID) -> Int? {
      let readers = lookup.readingNodes[id] ?? []
      return readers.count == 1 && lookup.readerCount(id) == graph.nodes[readers[0]].inputs.filter({ $0 == id }).count
        ? readers[0] : nil
    }
    /// For a binary element-wise node of `kind` reading `id`: its other input.
    func partner(_ node: Node, _ kind: ElementwiseKind, of id: ValueID) -> ValueID? {
      guard case .elementwise(kind) = node.operation, node.inputs.count == 2, node.inputs.contains(id) else {
        return nil
      }
      return node.inputs[0] == id ? node.inputs[1] : node.inputs[0]
    }
    /// A constant of one value.
    func scalar(_ id: ValueID) -> Float? {
      guard let c = constant(id, in: graph, lookup: lookup), c.count == 1 else { return nil }
      return c.values[0]
    }

    let mean = graph.nodes[index]
    guard isMeanOverLastAxis(mean) else { return nil }
    let x = mean.inputs[0]
    guard let channels = graph[x].type.shape.last, let subtract = onlyReader(mean.output),
      graph.nodes[subtract].operation == .elementwise(.subtract), graph.nodes[subtract].inputs == [x, mean.output]
    else { return nil }
    let centered = graph.nodes[subtract].output
    // The centered values are read twice: squared, and normalized.
    let readers = lookup.readingNodes[centered] ?? []
    guard readers.count == 2, !graph.outputs.contains(centered) else { return nil }
    func isSquare(_ node: Node) -> Bool {
      switch node.operation {
      case .elementwise(.multiply): return node.inputs == [centered, centered]
      case .elementwise(.power):
        return node.inputs.count == 2 && node.inputs[0] == centered && scalar(node.inputs[1]) == 2
      case .activation(.unary(let f)):
        return node.inputs == [centered] && f.kind == .power && f.alpha == 2 && f.scale == 1 && f.shift == 0
      default: return false
      }
    }
    guard let square = readers.first(where: { isSquare(graph.nodes[$0]) }),
      let normalize = readers.first(where: { $0 != square }),
      let varianceIndex = onlyReader(graph.nodes[square].output), isMeanOverLastAxis(graph.nodes[varianceIndex])
    else { return nil }
    // variance [+ epsilon], then sqrt (divided by) or rsqrt (multiplied by).
    var epsilon: Float = 0
    var current = graph.nodes[varianceIndex].output
    guard var next = onlyReader(current) else { return nil }
    if let e = partner(graph.nodes[next], .add, of: current).flatMap(scalar) {
      epsilon = e
      current = graph.nodes[next].output
      guard let after = onlyReader(current) else { return nil }
      next = after
    }
    guard case .activation(.unary(let root)) = graph.nodes[next].operation, root.scale == 1,
      root.kind == .sqrt || root.kind == .rsqrt,
      onlyReader(graph.nodes[next].output) == normalize
    else { return nil }
    epsilon += root.shift + (root.kind == .rsqrt ? root.epsilon : 0)
    let expected: ElementwiseKind = root.kind == .sqrt ? .divide : .multiply
    guard graph.nodes[normalize].operation == .elementwise(expected), graph.nodes[normalize].inputs.count == 2,
      graph.nodes[normalize].inputs[0] == centered
        || (expected == .multiply && graph.nodes[normalize].inputs[1] == centered),
      Set(graph.nodes[normalize].inputs) == [centered, graph.nodes[next].output]
    else { return nil }

    // gamma, then beta: constants that only vary along the last axis (or scalars).
    func channelVector(_ id: ValueID) -> Constant? {
      guard let c = constant(id, in: graph, lookup: lookup), c.shape.dropLast().allSatisfy({ $0 == 1 }) else {
        return nil
      }
      if c.count == channels { return Constant(shape: [channels], values: c.values) }
      return c.count == 1 ? Constant(shape: [channels], values: [Float](repeating: c.values[0], count: channels)) : nil
    }
    var (gamma, beta): (Constant?, Constant?) = (nil, nil)
    var last = normalize
    if let reader = onlyReader(graph.nodes[last].output),
      let g = partner(graph.nodes[reader], .multiply, of: graph.nodes[last].output).flatMap(channelVector)
    {
      gamma = g
      last = reader
    }
    if let reader = onlyReader(graph.nodes[last].output),
      let b = partner(graph.nodes[reader], .add, of: graph.nodes[last].output).flatMap(channelVector)
    {
      beta = b
      last = reader
    }
    // The result is x's shape, with at most some unit axes in front (from the constants' broadcasting).
    let (shape, output) = (graph[x].type.shape, graph[graph.nodes[last].output].type.shape)
    guard output.count >= shape.count, Array(output.suffix(shape.count)) == shape,
      output.dropLast(shape.count).allSatisfy({ $0 == 1 })
    else { return nil }
    return (x, LayerNormalization(gamma: gamma, beta: beta, epsilon: epsilon), last)
  }
}
