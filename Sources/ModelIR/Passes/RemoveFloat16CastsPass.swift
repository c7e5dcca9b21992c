/// Computes a graph in float32 throughout: removes the casts to and from float16 that an ML Program
/// computing in float16 carries, and makes float16 inputs float32.
///
/// For writers that compute in float32 (a classic neural network, or an ML Program written with
/// float32 precision): the result is the same computation without float16 rounding, which is at least
/// as close to what the source's weights define.
public struct RemoveFloat16CastsPass: GraphPass {
  public let name = "remove-float16-casts"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    for id in graph.inputs where graph[id].type.dataType == .float16 {
      graph.values[id].type = TensorType(graph[id].type.shape, dataType: .float32)
    }
    while let index = graph.nodes.firstIndex(where: { node in
      guard case .cast(let type) = node.operation else { return false }
      return type == .float16 || type == .float32
    }) {
      let node = graph.nodes[index]
      if graph.outputs.contains(node.output) {
        // An output keeps its value (and name): the cast becomes a plain copy.
        graph.nodes[index].operation = .reshape(targetShape: graph[node.output].type.shape)
      } else {
        graph.replaceUses(of: node.output, with: node.inputs[0])
        graph = graph.pruned()
      }
    }
    for index in graph.values.indices where graph.values[index].type.dataType == .float16 {
      graph.values[index].type = TensorType(graph.values[index].type.shape, dataType: .float32)
    }
  }
}
