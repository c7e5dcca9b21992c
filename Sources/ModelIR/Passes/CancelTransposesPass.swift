/// Removes transposes that undo each other, and merges a transpose of a transpose into one.
///
/// Frontends wrap layout-specific operations in transposes (a Core ML or ONNX tensor is channels
/// first, the IR's spatial operations channels last); between two such operations the pair meets and
/// cancels here, so a chain of convolutions keeps one layout throughout.
public struct CancelTransposesPass: GraphPass {
  public let name = "cancel-transposes"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    var changed = true
    while changed {
      changed = false
      if sinkPastElementwise(&graph) || sinkPastJoins(&graph) {
        changed = true
        continue
      }
      for index in graph.nodes.indices {
        guard case .permute(let second) = graph.nodes[index].operation, let producer = graph.nodes.firstIndex(where: { $0.output == graph.nodes[index].inputs[0] }),
          case .permute(let first) = graph.nodes[producer].operation, first.count == second.count
        else { continue }
        // y = x.transpose(first), z = y.transpose(second): z's axis i is x's axis first[second[i]].
        let composed = second.map { first[$0] }
        let source = graph.nodes[producer].inputs[0]
        if composed == Array(composed.indices) {
          // z is x: readers of z read x. A graph output keeps a value of its own: a copy of x (a reshape
          // to its own shape).
          if graph.outputs.contains(graph.nodes[index].output) {
            graph.nodes[index].operation = .reshape(targetShape: graph[source].type.shape)
            graph.rewire(nodeAt: index, input: 0, to: source)
          } else {
            graph.replaceUses(of: graph.nodes[index].output, with: source)
          }
        } else {
          graph.nodes[index].operation = .permute(order: composed)
          graph.rewire(nodeAt: index, input: 0, to: source)
        }
        graph = graph.pruned()
        changed = true
        break
      }
    }
  }

  /// A transpose read only by an element-wise activation (or cast), a constant padding or a reduction that
  /// keeps its axes moves after it: `f(x.T) = f'(x).T`, where `f'` pads or reduces the axes `f` did, as
  /// they are before the transpose. It moves towards another transpose (which it then meets) or a join
  /// (where it may meet the same transpose of the other inputs, `sinkPastJoins`), or when
  /// after the move it only moves axes of size 1 (and becomes a reshape). Returns whether it moved one.
  func sinkPastElementwise(_ graph: inout Graph) -> Bool {
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard node.inputs.count == 1, let producer = graph.nodes.firstIndex(where: { $0.output == node.inputs[0] }),
        case .permute(let order) = graph.nodes[producer].operation, graph.readerCount(node.inputs[0]) == 1, !graph.outputs.contains(node.inputs[0]),
        let operation = Self.beforeTranspose(node.operation, order: order)
      else { continue }
      let source = graph.nodes[producer].inputs[0]
      guard let movedShape = try? operation.outputShape(inputShapes: [graph[source].type.shape], node: node.name) else { continue }
      // Towards another transpose, or a join where it can meet the same transpose of the other inputs.
      let towardsTranspose = graph.readerCount(node.output) == 1 && graph.nodes.contains(where: { reader in
        switch reader.operation {
        case .permute: return reader.inputs == [node.output]
        case .elementwise, .concatenate: return reader.inputs.contains(node.output)
        default: return false
        }
      })
      guard towardsTranspose || UnitPermutesAsReshapesPass.movesOnlyUnitAxes(order, shape: movedShape) else { continue }
      // The operation reads the transpose's input; the transpose, moved after it, writes the operation's
      // old output (its name and readers stay).
      graph.moveBefore(
        nodeAt: index, operation: operation, sources: [source], shape: movedShape, suffix: "__before_transpose",
        follower: .permute(order: order), followerName: graph.nodes[producer].name, origin: graph.nodes[producer].origin)
      return true
    }
    return false
  }

  /// An element-wise operation or a concatenation whose every input is the same transpose computes on the
  /// inputs before it, and one transpose follows: `x.T + y.T = (x + y).T`. Several transposes become one,
  /// which moves on towards its inverse (a residual block's add between two channels-first convolutions);
  /// a transpose other nodes also read stays for them. Transposes only move forwards, so this ends.
  /// Returns whether it moved one.
  func sinkPastJoins(_ graph: inout Graph) -> Bool {
    for index in graph.nodes.indices {
      guard let producers = graph.joinProducers(of: index, exclusive: false, { node -> [Int]? in
          if case .permute(let order) = node.operation { return order } else { return nil }
        }), let order = producers.first?.match, producers.allSatisfy({ $0.match == order })
      else { continue }
      let node = graph.nodes[index]
      var operation = node.operation
      if case .concatenate(let axis) = operation { operation = .concatenate(axis: order[axis]) }
      let sources = producers.map { graph.nodes[$0.producer].inputs[0] }
      guard let shape = try? operation.outputShape(inputShapes: sources.map { graph[$0].type.shape }, node: node.name) else { continue }
      let first = graph.nodes[producers[0].producer]
      graph.moveBefore(
        nodeAt: index, operation: operation, sources: sources, shape: shape, suffix: "__before_transpose",
        follower: .permute(order: order), followerName: first.name, origin: first.origin)
      return true
    }
    return false
  }

  /// `operation` as it applies before a transpose by `order` (`y = x.transpose(order)`: y's axis i is
  /// x's axis order[i]), or nil when it cannot move.
  static func beforeTranspose(_ operation: Operation, order: [Int]) -> Operation? {
    switch operation {
    case .activation(.parametricReLU): return nil
    case .activation, .cast: return operation
    case .constantPad(let pad):
      guard pad.before.count == order.count, pad.after.count == order.count else { return nil }
      var before = [Int](repeating: 0, count: order.count), after = before
      for (axis, source) in order.enumerated() { (before[source], after[source]) = (pad.before[axis], pad.after[axis]) }
      return .constantPad(ConstantPadding(before: before, after: after, value: pad.value))
    case .reduce(let reduction) where reduction.keepDims:
      guard reduction.axes.allSatisfy({ order.indices.contains($0) }) else { return nil }
      return .reduce(Reduction(kind: reduction.kind, axes: reduction.axes.map { order[$0] }.sorted(), keepDims: true))
    default:
      return nil
    }
  }
}
