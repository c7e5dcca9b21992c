import ModelIR

/// Computes, once, every operation whose inputs are all constants, and keeps its result as a constant.
///
/// Source formats that build shapes and parameters out of small graphs of their own (ONNX's
/// `Shape`/`Gather`/`Concat` chains, a Core ML constant scaled by a layer) reach the writers as plain
/// constants. The value comes from the reference runtime's direct loops (the oracle), so a folded
/// constant is exactly what the operation would have computed. Results larger than `maximumElements`
/// stay as operations (folding must not make a model bigger), and so do operations the runtime cannot
/// run, custom layers, and anything computed in float16.
public struct ConstantFoldingPass: GraphPass {
  public let name = "fold-constants"
  /// The largest result folded.
  public var maximumElements: Int

  public init(maximumElements: Int = 1 << 16) { self.maximumElements = maximumElements }

  public func run(_ graph: inout Graph) throws {
    var constants: [ValueID: Constant] = [:]
    for node in graph.nodes { if case .constant(let value) = node.operation { constants[node.output] = value } }
    var changed = false
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      switch node.operation {
      case .constant, .custom, .recurrent: continue
      default: break
      }
      let output = graph[node.output].type
      guard !node.inputs.isEmpty, output.dataType == .float32, output.elementCount <= maximumElements,
        node.inputs.allSatisfy({ constants[$0] != nil && graph[$0].type.dataType == .float32 })
      else { continue }
      // A one-node graph of the operation on its constant inputs, run by the direct loops.
      var builder = GraphBuilder()
      let operands = try node.inputs.enumerated().map { position, id in
        try builder.add(.constant(constants[id]!), name: "operand\(position)", inputs: [])
      }
      let result = try builder.add(node.operation, name: "result", inputs: operands)
      let single = builder.build(outputs: [result])
      guard Interpreter.unsupportedOperations(in: single).isEmpty else { continue }
      let values = Interpreter(graph: single, kernels: .direct).run([])[0].values
      guard values.allSatisfy(\.isFinite) else { continue }
      let folded = Constant(shape: output.shape, values: values)
      try graph.replaceOperation(ofNodeAt: index, with: .constant(folded), inputs: [])
      constants[node.output] = folded
      changed = true
    }
    if changed { graph = graph.pruned() }
  }
}
