/// A typed, topologically ordered dataflow graph with named inputs and outputs.
///
/// Build one with `GraphBuilder`, which checks every shape as nodes are added.
public struct Graph: Sendable, Equatable {
  public internal(set) var values: [Value]
  public internal(set) var nodes: [Node]
  public internal(set) var inputs: [ValueID]
  public internal(set) var outputs: [ValueID]

  init(values: [Value], nodes: [Node], inputs: [ValueID], outputs: [ValueID]) {
    self.values = values
    self.nodes = nodes
    self.inputs = inputs
    self.outputs = outputs
  }

  /// The value with this id.
  public subscript(id: ValueID) -> Value { values[id] }

  /// The node producing a value, or nil for graph inputs.
  public func producer(of id: ValueID) -> Node? { nodes.first { $0.output == id } }

  /// The number of weight elements in all constants.
  public var parameterCount: Int { nodes.reduce(0) { $0 + $1.operation.constants.reduce(0) { $0 + $1.count } } }

  /// Renames a value; names must stay unique.
  public mutating func rename(_ id: ValueID, to newName: String) throws {
    if let clash = values.firstIndex(where: { $0.name == newName }), clash != id {
      throw GraphError.duplicateName(newName)
    }
    values[id].name = newName
  }

  /// Names value `id` `name`; a different value already called so steps aside as `name__internal2`
  /// (then 3, ...). Importers use it to give an output its feature name when an internal value has it.
  public mutating func claimName(_ name: String, for id: ValueID) throws {
    guard values[id].name != name else { return }
    if let clash = values.indices.first(where: { values[$0].name == name }), clash != id {
      var suffix = 2
      while values.contains(where: { $0.name == "\(name)__internal\(suffix)" }) { suffix += 1 }
      try rename(clash, to: "\(name)__internal\(suffix)")
    }
    try rename(id, to: name)
  }

  /// The graph without the nodes that no output depends on.
  public func pruned() -> Graph {
    var needed = Set(outputs)
    var kept: [Node] = []
    for node in nodes.reversed() where needed.contains(node.output) {
      kept.append(node)
      needed.formUnion(node.inputs)
    }
    return Graph(values: values, nodes: kept.reversed(), inputs: inputs, outputs: outputs)
  }

  /// The part of the graph that computes `values`, which become its outputs.
  public func truncated(at values: [ValueID]) -> Graph {
    Graph(values: self.values, nodes: nodes, inputs: inputs, outputs: values).pruned()
  }

  /// Input `id` arrives as the tensor whose axis `i` is the value's axis `order[i]`: a new input of that
  /// shape takes the input's name and place, and a permute back gives the old value (renamed), so every
  /// reader stays. Writers use it to declare a feature in the order the source declares it.
  public mutating func permuteInput(_ id: ValueID, order: [Int]) {
    guard let position = inputs.firstIndex(of: id) else { return }
    let name = values[id].name
    let type = values[id].type
    values[id].name = unusedName(name + "__declared_order")
    let stored = values.count
    values.append(
      Value(
        name: name, type: TensorType(order.map { type.shape[$0] }, dataType: type.dataType),
        isOptional: values[id].isOptional))
    values[id].isOptional = false
    let inverse = (0..<order.count).map { axis in order.firstIndex(of: axis) ?? axis }
    nodes.insert(
      Node(name: name + "__to_graph_order", operation: .permute(order: inverse), inputs: [stored], output: id), at: 0)
    inputs[position] = stored
  }

  /// Output `id` is given as the tensor whose axis `i` is the value's axis `order[i]`: a permute of the
  /// value takes the output's name and place (the value is renamed).
  public mutating func permuteOutput(_ id: ValueID, order: [Int]) {
    guard let position = outputs.firstIndex(of: id) else { return }
    let name = values[id].name
    let type = values[id].type
    values[id].name = unusedName(name + "__graph_order")
    let given = values.count
    values.append(Value(name: name, type: TensorType(order.map { type.shape[$0] }, dataType: type.dataType)))
    nodes.append(
      Node(name: name + "__to_declared_order", operation: .permute(order: order), inputs: [id], output: given))
    outputs[position] = given
  }

  /// Output `id` is `operation` applied to it: a node after the value takes the output's name and place
  /// (the value is renamed), as `permuteOutput` does for a permute.
  public mutating func appendToOutput(_ id: ValueID, operation: Operation, nodeName: String) {
    guard let position = outputs.firstIndex(of: id) else { return }
    let name = values[id].name
    values[id].name = unusedName(name + "__network")
    let given = values.count
    values.append(Value(name: name, type: values[id].type))
    nodes.append(Node(name: unusedName(nodeName), operation: operation, inputs: [id], output: given))
    outputs[position] = given
  }

  /// The graph without node `index`, its readers reading its single input instead.
  ///
  /// The node's output must not be a graph output.
  public func bypassing(nodeAt index: Int) -> Graph {
    let node = nodes[index]
    precondition(
      node.inputs.count == 1 && !outputs.contains(node.output), "only a single-input inner node can be bypassed")
    var copy = self
    copy.nodes.remove(at: index)
    for i in copy.nodes.indices {
      copy.nodes[i].inputs = copy.nodes[i].inputs.map { $0 == node.output ? node.inputs[0] : $0 }
    }
    return copy
  }
}
