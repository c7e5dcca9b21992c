/// Keeps the operations whose weights float16 cannot store in float32 inside a program that computes in
/// float16, changing nothing else: each such operation reads its inputs through casts to float32 and its
/// result is cast back to float16 for the operations after it (its result stays in float16's range: the
/// converter checks that on sampled inputs before choosing this over a float32 program).
///
/// Such an operation holds a weight beyond ±65 504 (a folded BatchNorm scale of 1.05e7 on a channel that is
/// always 0), or reads a constant node holding one (which the writer then stores in float32). Run once,
/// for an ML Program written in float16; `Float32IslandsPass.operations(in:)` lists what it keeps.
public struct Float32IslandsPass: GraphPass {
  public let name = "float32-islands"
  public init() {}

  /// float16's largest finite value.
  static let largest: Float = 65_504

  /// Whether a constant holds a finite value float16 cannot store.
  public static func isBeyondFloat16(_ constant: Constant) -> Bool {
    constant.values.contains { $0.isFinite && abs($0) > largest }
  }

  /// The indices of the nodes that must compute in float32, in graph order.
  public static func operations(in graph: Graph) -> [Int] {
    var bigConstants = Set<ValueID>()
    var result: [Int] = []
    for (index, node) in graph.nodes.enumerated() {
      if case .constant(let constant) = node.operation {
        if isBeyondFloat16(constant) { bigConstants.insert(node.output) }
        continue
      }
      if node.operation.constants.contains(where: isBeyondFloat16) || node.inputs.contains(where: bigConstants.contains)
      {
        result.append(index)
      }
    }
    return result
  }

  public func run(_ graph: inout Graph) throws {
    let islands = Self.operations(in: graph)
    guard !islands.isEmpty else { return }
    let lookup = graph.lookup
    var edit = GraphEdit(graph)
    for index in islands {
      let node = graph.nodes[index]
      // Done already: every input arrives in float32 (a cast or a constant the writer keeps in float32).
      let needsCast = node.inputs.map { input -> Bool in
        guard let producer = lookup.producer[input] else { return true }
        switch graph.nodes[producer].operation {
        case .cast(.float32): return false
        case .constant(let constant): return !Self.isBeyondFloat16(constant)
        default: return true
        }
      }
      guard needsCast.contains(true) else { continue }
      var replacement: [Node] = []
      var inputs: [ValueID] = []
      for (position, input) in node.inputs.enumerated() {
        guard needsCast[position] else {
          inputs.append(input)
          continue
        }
        let widened = edit.newValue(
          named: graph[input].name + "__float32", type: TensorType(graph[input].type.shape, dataType: .float32),
          in: graph)
        replacement.append(
          Node(
            name: edit.name(ofNew: widened), operation: .cast(.float32), inputs: [input], output: widened,
            origin: node.origin))
        inputs.append(widened)
      }
      let result = edit.newValue(
        named: graph[node.output].name + "__float32",
        type: TensorType(graph[node.output].type.shape, dataType: .float32), in: graph)
      replacement.append(
        Node(name: node.name, operation: node.operation, inputs: inputs, output: result, origin: node.origin))
      replacement.append(
        Node(
          name: node.name + "__to_float16", operation: .cast(.float16), inputs: [result], output: node.output,
          origin: node.origin))
      edit.replace(nodeAt: index, with: replacement)
    }
    edit.apply(to: &graph)
  }
}
