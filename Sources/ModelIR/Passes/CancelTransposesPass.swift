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
      if sinkPastElementwise(&graph) {
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
          // z is x: readers of z read x (z itself stays when it is a graph output, as a copy-free alias is not possible).
          guard !graph.outputs.contains(graph.nodes[index].output) else { continue }
          graph.replaceUses(of: graph.nodes[index].output, with: source)
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
  /// they are before the transpose. It moves towards another transpose (which it then meets), or when
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
      let towardsTranspose = graph.readerCount(node.output) == 1 && graph.nodes.contains(where: { reader in
        guard reader.inputs == [node.output], case .permute = reader.operation else { return false }
        return true
      })
      guard towardsTranspose || UnitPermutesAsReshapesPass.movesOnlyUnitAxes(order, shape: movedShape) else { continue }
      // The operation reads the transpose's input; the transpose, moved after it, writes the operation's
      // old output (its name and readers stay).
      graph.moveBefore(
        nodeAt: index, operation: operation, source: source, shape: movedShape, suffix: "__before_transpose",
        follower: .permute(order: order), followerName: graph.nodes[producer].name, origin: graph.nodes[producer].origin)
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
