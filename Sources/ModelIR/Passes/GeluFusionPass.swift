/// GELU as exporters write it before it had an operator of its own (PyTorch's ONNX export, tf2onnx):
/// `x * 0.5 * (1 + erf(x / sqrt(2)))`, in either order of the products, becomes one exact GELU, which
/// every writer has (the classic writer has no erf).
public struct GeluFusionPass: GraphPass {
  public let name = "fuse-gelu"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    var index = 0
    while index < graph.nodes.count {
      defer { index += 1 }
      guard case .activation(.erf) = graph.nodes[index].operation, let match = Self.match(erfAt: index, in: graph)
      else { continue }
      // The last multiply computes GELU of x; the rest is pruned.
      graph.nodes[match.last].operation = .activation(.gelu(approximate: false))
      graph.nodes[match.last].inputs = [match.x]
      graph = graph.pruned()
      index = -1
    }
  }

  /// The constant a value holds when a constant node of one element produces it.
  static func scalar(_ id: ValueID, in graph: Graph) -> Float? {
    guard let node = graph.nodes.first(where: { $0.output == id }), case .constant(let c) = node.operation, c.count == 1
    else { return nil }
    return c.values[0]
  }

  /// For the erf at `index`: the GELU's input `x` and the node computing the result.
  static func match(erfAt index: Int, in graph: Graph) -> (x: ValueID, last: Int)? {
    func producer(_ id: ValueID) -> Node? { graph.nodes.first { $0.output == id } }
    func onlyReader(_ id: ValueID) -> Int? {
      let readers = graph.nodes.indices.filter { graph.nodes[$0].inputs.contains(id) }
      return readers.count == 1 && !graph.outputs.contains(id) ? readers[0] : nil
    }
    /// For a binary node `[a, b]`, the other input when one of them is a scalar constant `value`.
    func other(_ node: Node, scalar value: Float, tolerance: Float = 1e-6) -> ValueID? {
      guard node.inputs.count == 2 else { return nil }
      for (a, b) in [(0, 1), (1, 0)] {
        if let s = scalar(node.inputs[b], in: graph), abs(s - value) <= tolerance * abs(value) { return node.inputs[a] }
      }
      return nil
    }
    let erf = graph.nodes[index]
    // x / sqrt(2), or x * (1 / sqrt(2)).
    guard let scaled = producer(erf.inputs[0]), onlyReader(erf.inputs[0]) != nil else { return nil }
    let x: ValueID
    switch scaled.operation {
    case .elementwise(.divide):
      guard scaled.inputs.count == 2, let s = scalar(scaled.inputs[1], in: graph),
        abs(s - Float(2).squareRoot()) <= 1e-6
      else { return nil }
      x = scaled.inputs[0]
    case .elementwise(.multiply):
      guard let input = other(scaled, scalar: 1 / Float(2).squareRoot()) else { return nil }
      x = input
    default: return nil
    }
    // 1 + erf(...)
    guard let plus = onlyReader(erf.output), case .elementwise(.add) = graph.nodes[plus].operation,
      other(graph.nodes[plus], scalar: 1) == erf.output
    else { return nil }
    // (x * (1 + erf)) * 0.5, or x * ((1 + erf) * 0.5), or (0.5 * x) * (1 + erf).
    guard let first = onlyReader(graph.nodes[plus].output), case .elementwise(.multiply) = graph.nodes[first].operation,
      graph.nodes[first].inputs.count == 2
    else { return nil }
    let partner = graph.nodes[first].inputs.first { $0 != graph.nodes[plus].output } ?? graph.nodes[plus].output
    let same =
      graph[partner].type.shape == graph[x].type.shape
      && graph[graph.nodes[first].output].type.shape == graph[x].type.shape
    if partner == x {
      guard let last = onlyReader(graph.nodes[first].output),
        case .elementwise(.multiply) = graph.nodes[last].operation,
        other(graph.nodes[last], scalar: 0.5) == graph.nodes[first].output, same
      else { return nil }
      return (x, last)
    }
    if let half = producer(partner), case .elementwise(.multiply) = half.operation, other(half, scalar: 0.5) == x, same
    {
      return (x, first)
    }
    // ((1 + erf) * 0.5) * x (PyTorch's dynamo exporter): the half is a scalar, so only the results' shapes are x's.
    let sameResult = graph[graph.nodes[first].output].type.shape == graph[x].type.shape
    if scalar(partner, in: graph).map({ abs($0 - 0.5) <= 5e-7 }) == true,
      let last = onlyReader(graph.nodes[first].output),
      case .elementwise(.multiply) = graph.nodes[last].operation, graph.nodes[last].inputs.contains(x), sameResult,
      graph[graph.nodes[last].output].type.shape == graph[x].type.shape
    {
      return (x, last)
    }
    return nil
  }
}
