/// Removes reshapes that change nothing, merges a reshape of a reshape into one, and removes pairs that
/// cancel (a Flatten the next layer undoes).
///
/// Reshapes, flattens and their inverses keep the row-major order of elements, so only the last shape
/// of a chain matters.
public struct CancelReshapesPass: GraphPass {
  public let name = "cancel-reshapes"
  public init() {}

  static func isReshape(_ operation: Operation) -> Bool {
    switch operation {
    case .reshape, .flatten: return true
    default: return false
    }
  }

  public func run(_ graph: inout Graph) throws {
    var changed = true
    while changed {
      changed = false
      for index in graph.nodes.indices where Self.isReshape(graph.nodes[index].operation) {
        let node = graph.nodes[index]
        let output = graph[node.output].type.shape
        if graph[node.inputs[0]].type.shape == output, !graph.outputs.contains(node.output) {
          // A reshape to the shape it already has.
          graph.replaceUses(of: node.output, with: node.inputs[0])
        } else if let producer = graph.nodes.first(where: { $0.output == node.inputs[0] }), Self.isReshape(producer.operation) {
          // A reshape of a reshape reads the first one's input; the first goes when nothing else reads it.
          graph.nodes[index].operation = .reshape(targetShape: output)
          graph.rewire(nodeAt: index, input: 0, to: producer.inputs[0])
        } else {
          continue
        }
        graph = graph.pruned()
        changed = true
        break
      }
    }
  }
}
