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
      if sinkPastElementwise(&graph) || sinkPastJoins(&graph) || alignJoinInputs(&graph) || sinkPastReductions(&graph)
        || splitForks(&graph)
      {
        changed = true
        continue
      }
      // Every transpose of a transpose in one scan (those that share no node), made at once.
      let lookup = graph.lookup
      var edit = GraphEdit(graph)
      for index in graph.nodes.indices {
        let node = graph.nodes[index]
        guard case .permute(let second) = node.operation, let producer = lookup.producer[node.inputs[0]],
          case .permute(let first) = graph.nodes[producer].operation, first.count == second.count
        else { continue }
        let source = graph.nodes[producer].inputs[0]
        guard edit.claim(nodes: [index, producer], values: [node.output, node.inputs[0], source]) else { continue }
        // y = x.transpose(first), z = y.transpose(second): z's axis i is x's axis first[second[i]].
        let composed = second.map { first[$0] }
        var rewritten = node
        rewritten.inputs = [source]
        if composed == Array(composed.indices) {
          // z is x: readers of z read x. A graph output keeps a value of its own: a copy of x (a reshape
          // to its own shape).
          if graph.outputs.contains(node.output) {
            rewritten.operation = .reshape(targetShape: graph[source].type.shape)
            edit.replace(nodeAt: index, with: [rewritten])
          } else {
            edit.redirect(readersOf: node.output, to: source)
          }
        } else {
          rewritten.operation = .permute(order: composed)
          edit.replace(nodeAt: index, with: [rewritten])
        }
      }
      if !edit.isEmpty {
        edit.apply(to: &graph)
        changed = true
      }
    }
  }

  /// A transpose read only by an element-wise activation (or cast), a constant padding, a reduction that
  /// keeps its axes, a slice or a channel shuffle moves after it: `f(x.T) = f'(x).T`, where `f'` pads,
  /// reduces, cuts or shuffles the axes `f` did, as they are before the transpose. It moves towards another
  /// transpose (which it then meets) or a join (where it may meet the same transpose of the other inputs,
  /// `sinkPastJoins`; see `leadsOn`), or when
  /// after the move it only moves axes of size 1 (and becomes a reshape). Returns whether it moved one.
  ///
  /// One scan makes every such move, and follows a moved transpose on down its chain (the transpose a
  /// move leaves after node X moves past X's single reader too), so a chain of n operations after a
  /// transpose takes one scan.
  func sinkPastElementwise(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    var edit = GraphEdit(graph)
    // The transposes this scan moved: by the value they now write, what they read and who they were.
    var pending: [ValueID: (source: ValueID, shape: [Int], order: [Int], name: String, origin: LayerOrigin?)] = [:]
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard node.inputs.count == 1, lookup.readerCount(node.inputs[0]) == 1, !graph.outputs.contains(node.inputs[0])
      else { continue }
      let source: ValueID
      let sourceShape: [Int]
      let order: [Int]
      let name: String
      let origin: LayerOrigin?
      var claimed: [Int] = [index]
      if let chained = pending[node.inputs[0]] {
        (source, sourceShape, order, name, origin) = chained
      } else {
        guard let producer = lookup.producer[node.inputs[0]], case .permute(let o) = graph.nodes[producer].operation
        else { continue }
        source = graph.nodes[producer].inputs[0]
        (sourceShape, order, name, origin) = (
          graph[source].type.shape, o, graph.nodes[producer].name, graph.nodes[producer].origin
        )
        claimed.append(producer)
      }
      guard let operation = Self.beforeTranspose(node.operation, order: order),
        let movedShape = try? operation.outputShape(inputShapes: [sourceShape], node: node.name)
      else { continue }
      // Towards other transposes, joins where it can meet the same transpose of the other inputs, or
      // reductions, which take it in: every reader is one of those.
      guard
        Self.leadsOn(node.output, order: order, in: graph, lookup: lookup)
          || UnitPermutesAsReshapesPass.movesOnlyUnitAxes(order, shape: movedShape)
      else { continue }
      guard
        edit.claim(
          nodes: claimed, values: [node.output] + (pending[node.inputs[0]] == nil ? [node.inputs[0], source] : []))
      else { continue }
      // The operation reads the transpose's input; the transpose, moved after it, writes the operation's
      // old output (its name and readers stay).
      let moved = edit.move(
        nodeAt: index, in: graph, operation: operation, sources: [source], shape: movedShape,
        suffix: "__before_transpose",
        follower: .permute(order: order), followerName: name, origin: origin)
      if !graph.outputs.contains(node.output) { pending[node.output] = (moved, movedShape, order, name, origin) }
    }
    edit.apply(to: &graph)
    return !edit.isEmpty
  }

  /// An element-wise operation or a concatenation whose every input is the same transpose computes on the
  /// inputs before it, and one transpose follows: `x.T + y.T = (x + y).T`. Several transposes become one,
  /// which moves on towards its inverse (a residual block's add between two channels-first convolutions);
  /// a transpose other nodes also read stays for them. Transposes only move forwards, so this ends.
  /// Returns whether it moved one.
  func sinkPastJoins(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    var edit = GraphEdit(graph)
    for index in graph.nodes.indices {
      guard
        let producers = graph.joinProducers(
          of: index, exclusive: false, in: lookup,
          { node -> [Int]? in
            if case .permute(let order) = node.operation { return order } else { return nil }
          }), let order = producers.first?.match, producers.allSatisfy({ $0.match == order })
      else { continue }
      let node = graph.nodes[index]
      var operation = node.operation
      if case .concatenate(let axis) = operation { operation = .concatenate(axis: order[axis]) }
      let sources = producers.map { graph.nodes[$0.producer].inputs[0] }
      guard let shape = try? operation.outputShape(inputShapes: sources.map { graph[$0].type.shape }, node: node.name)
      else { continue }
      let first = graph.nodes[producers[0].producer]
      // The transposes stay for their other readers: only the join changes.
      guard edit.claim(nodes: [index], values: [node.output]) else { continue }
      edit.move(
        nodeAt: index, in: graph, operation: operation, sources: sources, shape: shape, suffix: "__before_transpose",
        follower: .permute(order: order), followerName: first.name, origin: first.origin)
    }
    edit.apply(to: &graph)
    return !edit.isEmpty
  }

  /// A join some of whose inputs are the same transpose `P` and the others constants, or reshapes that
  /// only move unit axes relative to `P`: those others become `P` of a constant with its values moved
  /// (broadcast to the join's rank first), or of a reshape to the shape before `P`. Then the join's
  /// inputs are all `P` and `sinkPastJoins` moves it (the bias or the squeeze-and-excitation scale of
  /// a channels-first network meets the transposes of the convolutions). Returns whether it rewrote one.
  func alignJoinInputs(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      let isElementwise: Bool
      switch node.operation {
      case .elementwise: isElementwise = true
      case .concatenate: isElementwise = false
      default: continue
      }
      guard node.inputs.count >= 2, Set(node.inputs).count == node.inputs.count else { continue }
      let producers = node.inputs.map { lookup.producer[$0] }
      var order: [Int]?
      for producer in producers.compactMap({ $0 }) {
        guard case .permute(let o) = graph.nodes[producer].operation else { continue }
        if order == nil {
          order = o
        } else if order != o {
          order = nil
          break
        }
      }
      guard let order, producers.allSatisfy({ $0 != nil }) else { continue }
      let rank = order.count
      // Shape before P of a tensor of shape `after`: before[order[i]] = after[i].
      func before(_ after: [Int]) -> [Int] {
        var result = [Int](repeating: 1, count: rank)
        for i in 0..<rank { result[order[i]] = after[i] }
        return result
      }
      var plans: [(position: Int, producer: Int)] = []
      var fits = true
      for (position, producer) in producers.enumerated() {
        let p = producer!
        let value = node.inputs[position]
        switch graph.nodes[p].operation {
        case .permute(let o) where o == order: continue
        case .constant(let c)
        where lookup.readerCount(value) == 1 && (c.shape.count == rank || (isElementwise && c.shape.count < rank)):
          plans.append((position, p))
        case .reshape
        where lookup.readerCount(value) == 1 && graph[value].type.shape.count == rank
          && UnitPermutesAsReshapesPass.movesOnlyUnitAxes(order, shape: before(graph[value].type.shape)):
          plans.append((position, p))
        default: fits = false
        }
      }
      guard fits, !plans.isEmpty, plans.count < node.inputs.count else { continue }
      let inverse = (0..<rank).map { axis in order.firstIndex(of: axis)! }
      // Latest producer first, so that inserting a node leaves the other indices as they are.
      for (position, p) in plans.sorted(by: { $0.producer > $1.producer }) {
        let value = node.inputs[position]
        let shape = graph[value].type.shape
        let full = [Int](repeating: 1, count: rank - shape.count) + shape
        let moved = graph.values.count
        graph.values.append(
          Value(
            name: graph.unusedName(graph[value].name + "__before_transpose"),
            type: TensorType(before(full), dataType: graph[value].type.dataType)))
        switch graph.nodes[p].operation {
        case .constant(let c):
          graph.nodes[p].operation = .constant(Constant(shape: full, values: c.values).permuted(inverse))
        default:
          graph.nodes[p].operation = .reshape(targetShape: before(full))
        }
        graph.nodes[p].output = moved
        graph.nodes.insert(
          Node(
            name: graph.nodes[p].name + "__to_join", operation: .permute(order: order), inputs: [moved], output: value,
            origin: graph.nodes[p].origin),
          at: p + 1)
        graph.values[value].type = TensorType(full, dataType: graph[value].type.dataType)
      }
      return true
    }
    return false
  }

  /// A transpose read only by a reduction that drops its axes moves after it: the reduction runs over
  /// the same axes before the transpose, and what is left of the transpose follows (none at all when
  /// the kept axes stay in order: `[N, C, H, W]` averaged over H and W from `[N, H, W, C]`).
  func sinkPastReductions(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    var edit = GraphEdit(graph)
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard case .reduce(let reduction) = node.operation, !reduction.keepDims,
        let producer = lookup.producer[node.inputs[0]],
        case .permute(let order) = graph.nodes[producer].operation, lookup.readerCount(node.inputs[0]) == 1,
        !graph.outputs.contains(node.inputs[0]),
        reduction.axes.allSatisfy({ order.indices.contains($0) })
      else { continue }
      let axes = reduction.axes.map { order[$0] }.sorted()
      let keptSource = order.indices.filter { !axes.contains($0) }
      let remaining = order.indices.filter { !reduction.axes.contains($0) }.map {
        keptSource.firstIndex(of: order[$0])!
      }
      let source = graph.nodes[producer].inputs[0]
      let operation = Operation.reduce(Reduction(kind: reduction.kind, axes: axes, keepDims: false))
      guard let shape = try? operation.outputShape(inputShapes: [graph[source].type.shape], node: node.name) else {
        continue
      }
      let follower: Operation =
        remaining == Array(remaining.indices)
        ? .reshape(targetShape: graph[node.output].type.shape) : .permute(order: remaining)
      guard edit.claim(nodes: [index, producer], values: [node.output, node.inputs[0], source]) else { continue }
      edit.move(
        nodeAt: index, in: graph, operation: operation, sources: [source], shape: shape, suffix: "__before_transpose",
        follower: follower, followerName: graph.nodes[producer].name, origin: graph.nodes[producer].origin)
    }
    edit.apply(to: &graph)
    return !edit.isEmpty
  }

  /// A transpose read by several nodes that each let it move on (element-wise activations, joins) gets a
  /// copy per reader: each copy moves along its own path, and they meet again at the join that brings
  /// the paths together (`x.T * sigmoid(x.T)`, a hard swish after a channels-first convolution).
  /// Returns whether it split one.
  func splitForks(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    for index in graph.nodes.indices {
      guard case .permute(let order) = graph.nodes[index].operation, !graph.outputs.contains(graph.nodes[index].output)
      else { continue }
      let value = graph.nodes[index].output
      let readers = lookup.readingNodes[value] ?? []
      guard readers.count > 1 else { continue }
      // Every reader moves the transpose on, and at least one is a join whose other inputs it can meet.
      let movable = readers.allSatisfy { reader in
        let node = graph.nodes[reader]
        switch node.operation {
        case .elementwise, .concatenate: return true
        default: return node.inputs.count == 1 && Self.beforeTranspose(node.operation, order: order) != nil
        }
      }
      // Or every reader is a slice that would take the copy on (the parts of a split, each towards a transpose or a join).
      let joined =
        readers.contains { reader in
          switch graph.nodes[reader].operation {
          case .elementwise, .concatenate: return true
          default: return false
          }
        }
        || readers.allSatisfy { reader in
          guard case .slice = graph.nodes[reader].operation else { return false }
          return Self.leadsOn(graph.nodes[reader].output, order: order, in: graph, lookup: lookup)
        }
      guard movable, joined else { continue }
      for reader in readers.dropFirst().reversed() {
        let copy = graph.values.count
        graph.values.append(Value(name: graph.unusedName(graph[value].name + "__copy"), type: graph[value].type))
        graph.nodes[reader].inputs = graph.nodes[reader].inputs.map { $0 == value ? copy : $0 }
        let original = graph.nodes[index]
        graph.nodes.insert(
          Node(
            name: original.name + "__copy", operation: original.operation, inputs: original.inputs, output: copy,
            origin: original.origin), at: index + 1)
      }
      return true
    }
    return false
  }

  /// Whether a transpose by `order` of `value`, moved after its readers, goes on towards something that
  /// takes it: every reader is another transpose, a join where it can meet the same transpose of the other
  /// inputs, a reduction (`sinkPastReductions`: the mean over H and W ending a network), or an operation the
  /// transpose moves past (an activation, a slice, a shuffle: ShuffleNet's halves of a shuffled tensor)
  /// whose own readers lead on, a few steps deep.
  static func leadsOn(_ value: ValueID, order: [Int], in graph: Graph, lookup: GraphIndex, depth: Int = 0) -> Bool {
    let readers = (lookup.readingNodes[value] ?? []).map { graph.nodes[$0] }
    guard !graph.outputs.contains(value), !readers.isEmpty, depth < 16 else { return false }
    return readers.allSatisfy { reader in
      switch reader.operation {
      case .permute, .elementwise, .concatenate, .reduce: return true
      default:
        return reader.inputs.count == 1 && beforeTranspose(reader.operation, order: order) != nil
          && leadsOn(reader.output, order: order, in: graph, lookup: lookup, depth: depth + 1)
      }
    }
  }

  /// `operation` as it applies before a transpose by `order` (`y = x.transpose(order)`: y's axis i is
  /// x's axis order[i]), or nil when it cannot move.
  static func beforeTranspose(_ operation: Operation, order: [Int]) -> Operation? {
    switch operation {
    case .activation(.parametricReLU): return nil
    case .activation, .cast: return operation
    case .constantPad(let pad):
      guard pad.before.count == order.count, pad.after.count == order.count else { return nil }
      var before = [Int](repeating: 0, count: order.count)
      var after = before
      for (axis, source) in order.enumerated() { (before[source], after[source]) = (pad.before[axis], pad.after[axis]) }
      return .constantPad(ConstantPadding(before: before, after: after, value: pad.value))
    case .reduce(let reduction) where reduction.keepDims:
      guard reduction.axes.allSatisfy({ order.indices.contains($0) }) else { return nil }
      return .reduce(Reduction(kind: reduction.kind, axes: reduction.axes.map { order[$0] }.sorted(), keepDims: true))
    case .channelShuffle(let axis, let groups):
      guard order.indices.contains(axis) else { return nil }
      return .channelShuffle(axis: order[axis], groups: groups)
    case .slice(let slice):
      // The same cut of each axis, where the axis is before the transpose.
      guard slice.begin.count == order.count, slice.end.count == order.count, slice.strides.count == order.count else {
        return nil
      }
      var begin = slice.begin
      var end = slice.end
      var strides = slice.strides
      for (axis, source) in order.enumerated() {
        (begin[source], end[source], strides[source]) = (slice.begin[axis], slice.end[axis], slice.strides[axis])
      }
      return .slice(StridedSlice(begin: begin, end: end, strides: strides))
    default:
      return nil
    }
  }
}
