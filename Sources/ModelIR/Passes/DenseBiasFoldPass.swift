/// Folds the addition of a constant vector after a dense layer into the dense layer's bias.
///
/// tf2onnx writes a Dense layer applied to every step of a sequence as Tensordot (Reshape, MatMul,
/// Reshape) followed by an `Add` of the bias; once the reshapes have cancelled, the `Add` of a `[units]`
/// constant (or one with leading unit axes) broadcast over `[..., units]` is `x · W + b`: the dense layer's
/// bias (added to the one it has). Classic Core ML cannot broadcast an add across a sequence axis, but
/// its inner product takes a bias. Only a dense result that nothing else reads is folded.
///
/// One scan; the old dense node goes in the final prune.
public struct DenseBiasFoldPass: GraphPass {
  public let name = "dense-bias-fold"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    let lookup = graph.lookup
    let outputs = Set(graph.outputs)
    var changed = false
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard case .elementwise(.add) = node.operation, node.inputs.count == 2 else { continue }
      for (position, other) in [(0, 1), (1, 0)] {
        guard let denseIndex = lookup.producer[node.inputs[position]],
          case .dense(let dense) = graph.nodes[denseIndex].operation,
          lookup.readerCount(node.inputs[position]) == 1, !outputs.contains(node.inputs[position]),
          let constantIndex = lookup.producer[node.inputs[other]],
          case .constant(let vector) = graph.nodes[constantIndex].operation,
          vector.count == dense.outputUnits, vector.shape.last == dense.outputUnits,
          vector.shape.dropLast().allSatisfy({ $0 == 1 }),
          vector.shape.count <= graph[node.output].type.shape.count,
          graph[node.output].type.shape == graph[node.inputs[position]].type.shape
        else { continue }
        let bias = dense.bias.map { zip($0.values, vector.values).map { $0 + $1 } } ?? vector.values
        let folded = Dense(kernel: dense.kernel, bias: Constant(shape: [dense.outputUnits], values: bias))
        graph.nodes[index] = Node(
          name: node.name, operation: .dense(folded), inputs: graph.nodes[denseIndex].inputs, output: node.output,
          origin: node.origin)
        changed = true
        break
      }
    }
    if changed { graph = graph.pruned() }
  }
}
