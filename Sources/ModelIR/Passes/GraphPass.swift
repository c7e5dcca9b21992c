/// One rewrite of a graph that keeps what it computes: graph in, graph out.
///
/// Passes are small and named; `GraphPipeline` runs them in order. Each pass must leave the graph's
/// inputs, outputs and their names as they are, and may only remove or merge nodes whose results are
/// not graph outputs (so every tensor a user can ask for keeps its name).
public protocol GraphPass: Sendable {
  /// A short name for listings and errors ("cancel-transposes").
  var name: String { get }
  func run(_ graph: inout Graph) throws
  /// When a pipeline runs it: once before the rewrites, among the rewrites (again while any changes
  /// the graph), or once after them as a check.
  var stage: GraphPassStage { get }
}

/// Where a pass runs in a pipeline.
public enum GraphPassStage: Sendable {
  /// Once, before the rewrites: a change applied exactly once (scaling an input's channels).
  case prepare
  /// With the other rewrites, again while a round changes the graph: it must reach a fixed point.
  case rewrite
  /// Once, after the rewrites: reads the graph and throws, or changes nothing.
  case check
}

extension GraphPass {
  public var stage: GraphPassStage { .rewrite }
  /// Whether the pass only checks the graph.
  public var isCheck: Bool { stage == .check }
}

/// An ordered list of passes.
public struct GraphPipeline: Sendable {
  public var passes: [any GraphPass]

  public init(_ passes: [any GraphPass]) { self.passes = passes }

  /// Runs the passes that prepare the graph once, then every rewriting pass in order, and the list again while a round changes the graph (at most
  /// `rounds` times: each pass only removes or moves nodes forward, so rounds reach a fixed point; a deep
  /// residual network moves its batch axis past one block or so per round), then every check once.
  ///
  /// After every pass the graph's interface is checked (as coremltools checks after each of its passes):
  /// the same inputs and outputs, in order, with the same names and shapes; a pass that changed them
  /// throws `GraphError.passChangedInterface` naming it.
  public func run(_ graph: inout Graph, rounds: Int = 1_000) throws {
    let interface = graph.interface
    func run(_ pass: any GraphPass) throws {
      try pass.run(&graph)
      let now = graph.interface
      guard now == interface else {
        throw GraphError.passChangedInterface(pass: pass.name, detail: Graph.describeChange(from: interface, to: now))
      }
    }
    for pass in passes where pass.stage == .prepare { try run(pass) }
    let rewrites = passes.filter { $0.stage == .rewrite }
    for _ in 0..<max(rounds, 1) where !rewrites.isEmpty {
      let before = graph.structure
      for pass in rewrites { try run(pass) }
      if graph.structure == before { break }
    }
    for pass in passes where pass.stage == .check { try run(pass) }
  }

  /// The passes' names, in order.
  public var names: [String] { passes.map(\.name) }

  /// The passes every source graph goes through before a writer sees it: layer normalizations and
  /// channel shuffles written out step by step become one operation each, unit-axis reshapes move down
  /// until they meet, transposes that undo each other cancel, transposes of unit axes become reshapes,
  /// a tensor cut into slices and joined again becomes a reshape, chains of reshapes shrink, a constant
  /// added after a dense layer becomes its bias.
  public static let standard = GraphPipeline([
    LayerNormFusionPass(), ChannelShuffleFusionPass(), SinkUnitReshapesPass(), CancelTransposesPass(),
    UnitPermutesAsReshapesPass(), ConcatOfSlicesPass(),
    CancelReshapesPass(), DenseBiasFoldPass(), SpatialZeroPaddingPass(), GlobalPoolingPass(), GeluFusionPass(),
  ])
}

/// The producer of each value and its reader count (graph outputs count once), computed once per scan.
struct GraphIndex {
  let producer: [ValueID: Int]
  let readers: [ValueID: Int]
  /// The nodes reading each value, in graph order (each once).
  let readingNodes: [ValueID: [Int]]

  init(_ graph: Graph) {
    var producer: [ValueID: Int] = [:]
    var readers: [ValueID: Int] = [:]
    var readingNodes: [ValueID: [Int]] = [:]
    for (index, node) in graph.nodes.enumerated() {
      producer[node.output] = index
      for input in node.inputs { readers[input, default: 0] += 1 }
      for input in Set(node.inputs) { readingNodes[input, default: []].append(index) }
    }
    for output in graph.outputs { readers[output, default: 0] += 1 }
    self.producer = producer
    self.readers = readers
    self.readingNodes = readingNodes
  }

  func readerCount(_ id: ValueID) -> Int { readers[id] ?? 0 }
}

extension Graph {
  /// The inputs and outputs as an app sees them: names and shapes, in order.
  struct Interface: Equatable {
    var inputs: [String]
    var outputs: [String]
  }

  var interface: Interface {
    Interface(
      inputs: inputs.map { "\(self[$0].name) \(self[$0].type.shape)" },
      outputs: outputs.map { "\(self[$0].name) \(self[$0].type.shape)" })
  }

  static func describeChange(from old: Interface, to new: Interface) -> String {
    for (kind, before, after) in [("inputs", old.inputs, new.inputs), ("outputs", old.outputs, new.outputs)]
    where before != after {
      return "\(kind) were \(before), now \(after)"
    }
    return "unchanged"
  }

  /// What the passes change: which nodes there are, what they read and write, and every value's type
  /// (weights are not compared; no pass changes them).
  var structure: [String] {
    nodes.map { "\($0.operation.kindName) \($0.inputs) \($0.output)" } + values.map { "\($0.type)" }
  }

  /// Who produces and how many read each value, for one scan of the graph: valid until the graph
  /// changes (the scans that use it stop at their first change).
  var lookup: GraphIndex { GraphIndex(self) }

  /// The number of nodes reading value `id`, plus one when it is a graph output.
  func readerCount(_ id: ValueID) -> Int {
    nodes.reduce(outputs.contains(id) ? 1 : 0) { $0 + $1.inputs.filter { $0 == id }.count }
  }

  /// Node `index` computes `operation` on `inputs` instead; its result must keep its shape (checked), so
  /// the value, its name and its readers stay as they are. For passes outside this module.
  public mutating func replaceOperation(ofNodeAt index: Int, with operation: Operation, inputs: [ValueID]) throws {
    let node = nodes[index]
    let shape = try operation.outputShape(inputShapes: inputs.map { self[$0].type.shape }, node: node.name)
    guard shape == self[node.output].type.shape else {
      throw GraphError.shapeMismatch(
        node: node.name, detail: "a replacement computes \(shape), not \(self[node.output].type.shape)")
    }
    nodes[index].operation = operation
    nodes[index].inputs = inputs
  }

  /// Node `index` reads `replacement` instead of its input `position`.
  mutating func rewire(nodeAt index: Int, input position: Int, to replacement: ValueID) {
    nodes[index].inputs[position] = replacement
  }

  /// A value name not taken yet: `base`, else `base_`, `base__`, ...
  func unusedName(_ base: String) -> String {
    var name = base
    while values.contains(where: { $0.name == name }) { name += "_" }
    return name
  }

  /// Moves node `index` before the node (or nodes, one per input) that feed it: node `index` computes
  /// `operation` (of shape `shape`) on `sources` into a new value named after its output plus `suffix`, and a new
  /// node `follower` (named `followerName`, from `origin`) reads that value and writes node `index`'s old
  /// output, so its name and readers stay. Prunes what nothing reads any more.
  mutating func moveBefore(
    nodeAt index: Int, operation: Operation, sources: [ValueID], shape: [Int], suffix: String,
    follower: Operation, followerName: String, origin: LayerOrigin?, prune: Bool = true
  ) {
    let node = nodes[index]
    let moved = values.count
    values.append(
      Value(
        name: unusedName(self[node.output].name + suffix),
        type: TensorType(shape, dataType: self[node.output].type.dataType)))
    nodes[index].operation = operation
    nodes[index].inputs = sources
    nodes[index].output = moved
    nodes.insert(
      Node(name: followerName, operation: follower, inputs: [moved], output: node.output, origin: origin), at: index + 1
    )
    if prune { self = pruned() }
  }

  /// For a node joining several tensors (an element-wise operation on inputs of one rank, or a concatenation):
  /// (inputs of one rank unless not `sameRank`) when every input is produced by a node that `match`
  /// accepts (read only there when `exclusive`), the
  /// matched nodes' indices and what each returned. Nil when any input is not such a node.
  func joinProducers<T>(
    of index: Int, exclusive: Bool = true, sameRank: Bool = true, in lookup: GraphIndex? = nil, _ match: (Node) -> T?
  ) -> [(producer: Int, match: T)]? {
    let node = nodes[index]
    let lookup = lookup ?? GraphIndex(self)
    guard node.inputs.count >= 2, Set(node.inputs).count == node.inputs.count else { return nil }
    switch node.operation {
    case .elementwise:
      // Broadcasting commutes with moving axes when every input has the same rank.
      guard !sameRank || Set(node.inputs.map { self[$0].type.shape.count }).count == 1 else { return nil }
    case .concatenate: break
    default: return nil
    }
    var result: [(producer: Int, match: T)] = []
    for input in node.inputs {
      guard let producer = lookup.producer[input], !exclusive || lookup.readerCount(input) == 1,
        let matched = match(nodes[producer])
      else { return nil }
      result.append((producer, matched))
    }
    return result
  }

  /// Every node reading `old` reads `new` instead (graph outputs are left alone).
  mutating func replaceUses(of old: ValueID, with new: ValueID) {
    for index in nodes.indices { nodes[index].inputs = nodes[index].inputs.map { $0 == old ? new : $0 } }
  }
}

/// Changes a pass finds in one scan of a graph, made at once: the nodes and values each change touches
/// are claimed, so that changes found in the same scan never overlap; `apply` then rebuilds the node list
/// once and prunes once. A pass that made one change and scanned again (or inserted into the node list
/// per change) cost the number of changes times the graph's size, quadratic on long chains.
struct GraphEdit {
  private let valueBase: Int
  private(set) var newValues: [Value] = []
  private var replacements: [Int: [Node]] = [:]
  private var redirects: [ValueID: ValueID] = [:]
  private var touchedNodes = Set<Int>(), touchedValues = Set<ValueID>()
  private var names: Set<String>?
  private var nextNumber: [String: Int] = [:]

  init(_ graph: Graph) { valueBase = graph.values.count }

  var isEmpty: Bool { replacements.isEmpty && redirects.isEmpty }

  /// Claims `nodes` and `values` for one change; false (claiming nothing) when another change of this
  /// edit already touched any of them.
  mutating func claim(nodes: [Int], values: [ValueID]) -> Bool {
    guard touchedNodes.isDisjoint(with: nodes), touchedValues.isDisjoint(with: values) else { return false }
    touchedNodes.formUnion(nodes)
    touchedValues.formUnion(values)
    return true
  }

  /// Whether `nodes` and `values` are still free (nothing is claimed).
  func isFree(nodes: [Int], values: [ValueID]) -> Bool {
    touchedNodes.isDisjoint(with: nodes) && touchedValues.isDisjoint(with: values)
  }

  /// Marks more values as touched by the change just claimed.
  mutating func touch(values: [ValueID]) { touchedValues.formUnion(values) }

  /// A new value named `base` (or `base_2`, `base_3`, ... when taken). The next number to try is kept
  /// per base: a constant that thousands of nodes share gets thousands of new values named after it, and
  /// probing from the start each time (or growing a suffix) made that quadratic.
  mutating func newValue(named base: String, type: TensorType, in graph: Graph) -> ValueID {
    if names == nil { names = Set(graph.values.map(\.name)) }
    var name = base
    if names?.contains(name) == true {
      var number = nextNumber[base] ?? 2
      while names?.contains("\(base)_\(number)") == true { number += 1 }
      name = "\(base)_\(number)"
      nextNumber[base] = number + 1
    }
    names?.insert(name)
    newValues.append(Value(name: name, type: type))
    return valueBase + newValues.count - 1
  }

  /// The name a new value of this edit got (unique among the graph's values).
  func name(ofNew value: ValueID) -> String { newValues[value - valueBase].name }

  /// Node `index` becomes `nodes` (in order, at its place).
  mutating func replace(nodeAt index: Int, with nodes: [Node]) { replacements[index] = nodes }

  /// The replacement made for node `index` so far, if any.
  func replacement(ofNodeAt index: Int) -> [Node]? { replacements[index] }

  /// Every node reading `old` reads `new` instead (graph outputs are left alone).
  mutating func redirect(readersOf old: ValueID, to new: ValueID) { redirects[old] = new }

  /// As `Graph.moveBefore`: node `index` computes `operation` on `sources` into a new value (named after
  /// its output plus `suffix`), and `follower` reads that and writes the node's old output. Returns the
  /// new value.
  @discardableResult
  mutating func move(
    nodeAt index: Int, in graph: Graph, operation: Operation, sources: [ValueID], shape: [Int], suffix: String,
    follower: Operation, followerName: String, origin: LayerOrigin?
  ) -> ValueID {
    let node = graph.nodes[index]
    let moved = newValue(
      named: graph[node.output].name + suffix, type: TensorType(shape, dataType: graph[node.output].type.dataType),
      in: graph)
    replace(
      nodeAt: index,
      with: [
        Node(name: node.name, operation: operation, inputs: sources, output: moved, origin: node.origin),
        Node(name: followerName, operation: follower, inputs: [moved], output: node.output, origin: origin),
      ])
    return moved
  }

  /// Makes the changes: new values, the node list rebuilt once, reads redirected, then one prune.
  func apply(to graph: inout Graph) {
    guard !isEmpty else { return }
    graph.values += newValues
    var nodes: [Node] = []
    nodes.reserveCapacity(graph.nodes.count + replacements.count)
    for (index, node) in graph.nodes.enumerated() {
      if let replacement = replacements[index] { nodes += replacement } else { nodes.append(node) }
    }
    if !redirects.isEmpty {
      func resolve(_ id: ValueID) -> ValueID {
        var current = id
        var steps = 0
        while let next = redirects[current], steps <= redirects.count {
          current = next
          steps += 1
        }
        return current
      }
      for index in nodes.indices where nodes[index].inputs.contains(where: { redirects[$0] != nil }) {
        nodes[index].inputs = nodes[index].inputs.map(resolve)
      }
    }
    graph.nodes = nodes
    graph = graph.pruned()
  }
}
