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

  /// A transpose read only by an element-wise activation (or cast) whose result only another transpose
  /// reads moves after it: `f(x.T) = f(x).T`, so the two transposes meet. Returns whether it moved one.
  func sinkPastElementwise(_ graph: inout Graph) -> Bool {
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard node.inputs.count == 1, Self.isElementwise(node.operation), let producer = graph.nodes.firstIndex(where: { $0.output == node.inputs[0] }),
        case .permute(let order) = graph.nodes[producer].operation, graph.readerCount(node.inputs[0]) == 1, !graph.outputs.contains(node.inputs[0]),
        // Only towards another transpose, which it can then meet.
        graph.readerCount(node.output) == 1, graph.nodes.contains(where: { reader in
          guard reader.inputs == [node.output], case .permute = reader.operation else { return false }
          return true
        })
      else { continue }
      // The activation reads the transpose's input and writes a new value; the transpose, moved after
      // it, writes the activation's old output (its name and readers stay).
      let source = graph.nodes[producer].inputs[0]
      let moved = graph.values.count
      var name = graph[node.output].name + "__before_transpose"
      while graph.values.contains(where: { $0.name == name }) { name += "_" }
      graph.values.append(Value(name: name, type: TensorType(graph[source].type.shape, dataType: graph[node.output].type.dataType)))
      graph.nodes[index].inputs = [source]
      graph.nodes[index].output = moved
      let transpose = Node(name: graph.nodes[producer].name, operation: .permute(order: order), inputs: [moved], output: node.output, origin: graph.nodes[producer].origin)
      graph.nodes.insert(transpose, at: index + 1)
      graph = graph.pruned()
      return true
    }
    return false
  }

  static func isElementwise(_ operation: Operation) -> Bool {
    switch operation {
    case .activation(.parametricReLU): return false
    case .activation, .cast: return true
    default: return false
    }
  }
}
