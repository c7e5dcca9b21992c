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
}
