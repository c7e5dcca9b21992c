/// Builds a `Graph` node by node, inferring and checking every output shape as it goes.
public struct GraphBuilder {
  private var values: [Value] = []
  private var nodes: [Node] = []
  private var inputs: [ValueID] = []
  private var usedNames: Set<String> = []
  /// Recorded on every node added from now on: the source layer being imported.
  public var origin: LayerOrigin?

  public init() {}

  /// A builder holding `graph`'s values, nodes and inputs, to add nodes after it (its outputs are
  /// given again to `build`).
  public init(continuing graph: Graph) {
    values = graph.values
    nodes = graph.nodes
    inputs = graph.inputs
    usedNames = Set(graph.values.map(\.name)).union(graph.nodes.map(\.name))
  }

  /// Adds a graph input; an `optional` one may be left out by the caller (zeros then).
  public mutating func addInput(name: String, type: TensorType, optional: Bool = false) throws -> ValueID {
    guard GraphLimits.areSizes(type.shape), GraphLimits.elementCount(type.shape) != nil else {
      throw GraphError.tooLarge(
        node: name,
        detail:
          "input shape \(type.shape) needs sizes of 1 to \(GraphLimits.maxSize) and at most \(GraphLimits.maxElementCount) elements"
      )
    }
    let id = try addValue(name: name, type: type)
    values[id].isOptional = optional
    inputs.append(id)
    return id
  }

  /// Adds a node and returns its output value; throws when the input shapes do not fit the operation.
  public mutating func add(_ operation: Operation, name: String, inputs nodeInputs: [ValueID]) throws -> ValueID {
    let shapes = nodeInputs.map { values[$0].type.shape }
    let shape = try operation.outputShape(inputShapes: shapes, node: name)
    guard GraphLimits.areSizes(shape), GraphLimits.elementCount(shape) != nil else {
      throw GraphError.tooLarge(
        node: name,
        detail:
          "output shape \(shape) needs sizes of 1 to \(GraphLimits.maxSize) and at most \(GraphLimits.maxElementCount) elements"
      )
    }
    // A cast sets the element type; any other operation computes in float16 when an input is float16.
    let dataType: DataType
    if case .cast(let target) = operation {
      dataType = target
    } else {
      dataType = nodeInputs.contains { values[$0].type.dataType == .float16 } ? .float16 : .float32
    }
    let output = try addValue(name: uniqueName(name + "_output"), type: TensorType(shape, dataType: dataType))
    nodes.append(Node(name: uniqueName(name), operation: operation, inputs: nodeInputs, output: output, origin: origin))
    usedNames.insert(nodes.last!.name)
    return output
  }

  /// How many nodes have been added.
  public var nodeCount: Int { nodes.count }

  /// The nodes added from position `start` on (what one importer step added).
  public func nodes(since start: Int) -> ArraySlice<Node> { nodes[start...] }

  /// The type of a value added so far.
  public func type(of id: ValueID) -> TensorType { values[id].type }

  /// Finishes the graph with these outputs.
  public func build(outputs: [ValueID]) -> Graph {
    Graph(values: values, nodes: nodes, inputs: inputs, outputs: outputs)
  }

  /// `base`, or `base_2`, `base_3`, ... when taken.
  public func uniqueName(_ base: String) -> String {
    if !usedNames.contains(base) { return base }
    var suffix = 2
    while usedNames.contains("\(base)_\(suffix)") { suffix += 1 }
    return "\(base)_\(suffix)"
  }

  private mutating func addValue(name: String, type: TensorType) throws -> ValueID {
    guard !usedNames.contains(name) else { throw GraphError.duplicateName(name) }
    usedNames.insert(name)
    values.append(Value(name: name, type: type))
    return values.count - 1
  }
}
