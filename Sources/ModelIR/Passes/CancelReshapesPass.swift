/// Removes reshapes that change nothing, merges a reshape of a reshape into one, and removes pairs that
/// cancel (a Flatten the next layer undoes).
///
/// Reshapes, flattens and their inverses keep the row-major order of elements, so only the last shape
/// of a chain matters.
///
/// One scan in graph order: each reshape's input has been settled when the reshape is reached (a value
/// an identity reshape stood for is read from its source, a reshape of a reshape reads the first one's
/// source), so a whole chain shrinks in one scan, and one prune removes what nothing reads any more.
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
    let outputs = Set(graph.outputs)
    // Values read from another value instead (an identity reshape's result from its input).
    var standsFor: [ValueID: ValueID] = [:]
    // The node producing each value, as it is after this scan's changes.
    var producer: [ValueID: Int] = [:]
    var changed = false
    for index in graph.nodes.indices {
      if !standsFor.isEmpty, graph.nodes[index].inputs.contains(where: { standsFor[$0] != nil }) {
        graph.nodes[index].inputs = graph.nodes[index].inputs.map { standsFor[$0] ?? $0 }
        changed = true
      }
      let node = graph.nodes[index]
      producer[node.output] = index
      guard Self.isReshape(node.operation), let input = node.inputs.first else { continue }
      let shape = graph[node.output].type.shape
      if let first = producer[input], Self.isReshape(graph.nodes[first].operation),
        let source = graph.nodes[first].inputs.first
      {
        // A reshape of a reshape reads the first one's input; the first goes when nothing else reads it.
        graph.nodes[index].operation = .reshape(targetShape: shape)
        graph.rewire(nodeAt: index, input: 0, to: source)
        changed = true
      }
      let source = graph.nodes[index].inputs[0]
      if graph[source].type.shape == shape, !outputs.contains(node.output) {
        // A reshape to the shape it already has.
        standsFor[node.output] = source
        changed = true
      }
    }
    if changed { graph = graph.pruned() }
  }
}
