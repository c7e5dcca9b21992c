/// Replaces a concatenation of consecutive slices of one tensor, which together cover the axis they cut,
/// by a reshape of that tensor.
///
/// tf2onnx splits a bidirectional LSTM's `Y` (`[T, 2, 1, H]`) into its directions with a slice and a
/// squeeze each, then joins them again along the features (`[T, 1, 2H]`): the elements come out in the
/// order they went in. In general: let the pieces cut axis `b` of `x`, and let `outer` be the number of
/// elements before `b` (the product of `x`'s leading sizes). Each piece, flattened, is `outer` blocks of
/// its slice of `b` times the trailing sizes; a reshape keeps that order. When every (reshaped) piece has
/// `outer` elements before the concatenation axis as well, the concatenation lays the blocks side by
/// side exactly as `x` holds them, so the result is `x` reshaped.
///
/// One scan; the rewritten concatenation reads `x`, and the slices go in the final prune when nothing
/// else reads them.
public struct ConcatOfSlicesPass: GraphPass {
  public let name = "concat-of-slices"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    let lookup = graph.lookup
    var changed = false
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard case .concatenate(let axis) = node.operation, node.inputs.count >= 2,
        let source = Self.slicedSource(node.inputs, concatAxis: axis, in: graph, lookup: lookup)
      else { continue }
      graph.nodes[index] = Node(
        name: node.name, operation: .reshape(targetShape: graph[node.output].type.shape), inputs: [source],
        output: node.output, origin: node.origin)
      changed = true
    }
    if changed { graph = graph.pruned() }
  }

  /// The tensor the pieces cut, when they are its consecutive slices along one axis (through reshapes),
  /// covering it, and the concatenation keeps its element order (see the type's comment).
  static func slicedSource(_ pieces: [ValueID], concatAxis: Int, in graph: Graph, lookup: GraphIndex) -> ValueID? {
    var source: ValueID?
    var cutAxis: Int?
    var next = 0
    for piece in pieces {
      var value = piece
      var steps = 0
      while let producer = lookup.producer[value], CancelReshapesPass.isReshape(graph.nodes[producer].operation),
        steps < 8
      {
        value = graph.nodes[producer].inputs[0]
        steps += 1
      }
      guard let producer = lookup.producer[value], case .slice(let slice) = graph.nodes[producer].operation else {
        return nil
      }
      let x = graph.nodes[producer].inputs[0]
      let shape = graph[x].type.shape
      guard source == nil || source == x, slice.begin.count == shape.count, slice.end.count == shape.count,
        slice.strides.allSatisfy({ $0 == 1 })
      else { return nil }
      // The one axis the slice cuts; every other axis is taken whole.
      let cut = shape.indices.filter { slice.begin[$0] != 0 || slice.end[$0] != shape[$0] }
      guard cut.count == 1, cutAxis == nil || cutAxis == cut[0], slice.begin[cut[0]] == next else { return nil }
      (source, cutAxis, next) = (x, cut[0], slice.end[cut[0]])
    }
    guard let source, let cutAxis, next == graph[source].type.shape[cutAxis] else { return nil }
    let outer = graph[source].type.shape.prefix(cutAxis).reduce(1, *)
    for piece in pieces {
      let shape = graph[piece].type.shape
      guard concatAxis < shape.count, shape.prefix(concatAxis).reduce(1, *) == outer else { return nil }
    }
    return source
  }
}
