/// Moves a reshape that only adds or drops axes of size 1 past the operation reading it, so that it
/// meets the next reshape (and merges with it) or leaves a transpose next to its inverse.
///
/// Core ML blobs carry unit batch and sequence axes (`[1, C, H, W]`, `[1, C, 1, 1]`) that the IR's
/// tensors do not; a frontend adds and drops them with reshapes around the operations it imports.
/// An element-wise operation, a dense layer or a softmax over the last axis computes the same with or
/// without unit axes, and a transpose of the reshaped tensor is a transpose of the original followed by
/// the reshape. The reshape's result keeps its value (and name); only the operation's output is new.
public struct SinkUnitReshapesPass: GraphPass {
  public let name = "sink-unit-reshapes"
  public init() {}

  /// The shape without its size-1 axes.
  static func squeezed(_ shape: [Int]) -> [Int] { shape.filter { $0 != 1 } }

  public func run(_ graph: inout Graph) throws {
    Self.splitSharedReshapes(&graph)
    var changed = true
    while changed {
      changed = false
      if Self.sinkPastJoins(&graph) {
        changed = true
        continue
      }
      // One scan finds every move whose nodes and values no other move of the scan touches, and follows
      // each moved reshape on down its chain in the same scan: the reshape a move leaves after node X
      // (`pending`) is moved past X's single reader too, and so on, so a chain of n operations after a
      // reshape takes one scan, not n. The moves are then made in one rebuild of the node list and one
      // prune: a rescan or an insertion per move made long chains quadratic.
      let lookup = graph.lookup
      var edit = GraphEdit(graph)
      var pending: [ValueID: (source: ValueID, shape: [Int])] = [:]
      for index in graph.nodes.indices {
        let node = graph.nodes[index]
        if node.inputs.count >= 2 {
          // An element-wise operation on one unit-axes reshape and constants (a bias, a scale).
          if let join = Self.broadcastJoin(index, in: graph, lookup: lookup, pending: pending),
            edit.claim(
              nodes: [index] + join.claimedNodes,
              values: [node.output] + (pending[node.inputs[join.position]] == nil ? [node.inputs[join.position]] : []))
          {
            var inputs = node.inputs
            inputs[join.position] = join.source
            let added = Self.squeezedConstants(
              join.squeezed, of: node, inputs: &inputs, in: graph, lookup: lookup, edit: &edit)
            let output = graph[node.output].type.shape
            if join.shape == output {
              var rewired = node
              rewired.inputs = inputs
              edit.replace(nodeAt: index, with: added + [rewired])
            } else {
              let moved = edit.move(
                nodeAt: index, in: graph, operation: node.operation, sources: inputs, shape: join.shape,
                suffix: "__unit_axes",
                follower: .reshape(targetShape: output), followerName: node.name + "__unit_axes", origin: node.origin)
              edit.replace(nodeAt: index, with: added + (edit.replacement(ofNodeAt: index) ?? []))
              if !graph.outputs.contains(node.output) { pending[node.output] = (moved, join.shape) }
            }
          }
          continue
        }
        guard node.inputs.count == 1, lookup.readerCount(node.inputs[0]) == 1 else { continue }
        let after = graph[node.inputs[0]].type.shape
        var source: ValueID
        var before: [Int]
        let operation: Operation
        var claimed: [Int] = [index]
        var claimedValues: [ValueID] = [node.output]
        if let chained = pending[node.inputs[0]], CancelReshapesPass.isReshape(node.operation) {
          // A reshape after the one this scan moved here reshapes that one's input at once; when it too
          // only adds or drops unit axes, it moves on down the chain in its place.
          guard edit.claim(nodes: [index], values: [node.output]) else { continue }
          let target = graph[node.output].type.shape
          edit.replace(
            nodeAt: index,
            with: [
              Node(
                name: node.name, operation: .reshape(targetShape: target), inputs: [chained.source],
                output: node.output, origin: node.origin)
            ])
          if Self.squeezed(chained.shape) == Self.squeezed(target), !graph.outputs.contains(node.output) {
            pending[node.output] = chained
          }
          continue
        }
        if let chained = pending[node.inputs[0]] {
          // The reshape this scan moved to just before this node moves on past it.
          (source, before) = chained
          guard Self.squeezed(before) == Self.squeezed(after),
            let moved = Self.moved(node.operation, before: before, after: after)
          else { continue }
          operation = moved
        } else {
          guard let producer = lookup.producer[node.inputs[0]], case .reshape = graph.nodes[producer].operation,
            // A reshape of a reshape merges with it first (`CancelReshapesPass`), even when the first has other readers.
            !(lookup.producer[graph.nodes[producer].inputs[0]].map {
              CancelReshapesPass.isReshape(graph.nodes[$0].operation)
            } ?? false)
          else { continue }
          source = graph.nodes[producer].inputs[0]
          guard edit.isFree(nodes: [producer, index], values: [source, node.inputs[0], node.output]) else { continue }
          claimed.append(producer)
          claimedValues += [source, node.inputs[0]]
          before = graph[source].type.shape
          if Self.squeezed(before) == Self.squeezed(after),
            let moved = Self.moved(node.operation, before: before, after: after)
          {
            operation = moved
          } else {
            // A reshape that also adds unit axes (`[2, 2, 128]` to `[1, 1, 512]`) reshapes to the shape
            // without them (`[512]`), and the unit axes move on as above. Before a spatial operation the
            // reshape keeps the image and drops only the batch axis (`[1, 2000]` to `[1, 1, 2000, 1]`
            // becomes `[1, 2000, 1]`, an image of height 1, and the batch axis moves on).
            let squeezed = Self.squeezed(after).isEmpty ? [1] : Self.squeezed(after)
            let image = Array(after.dropFirst())
            let core =
              after.count == 4 && after[0] == 1 && Self.moved(node.operation, before: image, after: after) != nil
              ? image : squeezed
            guard core != after, core != before, let moved = Self.moved(node.operation, before: core, after: after),
              (try? moved.outputShape(inputShapes: [core], node: node.name)) != nil
            else { continue }
            let middle = graph.nodes[producer].output
            graph.nodes[producer].operation = .reshape(targetShape: core)
            graph.values[middle].type = TensorType(core, dataType: graph[middle].type.dataType)
            (source, before, operation) = (middle, core, moved)
          }
        }
        // The operation now reads the reshape's input; a new reshape after it produces its old output.
        guard let shape = try? operation.outputShape(inputShapes: [before], node: node.name),
          edit.claim(nodes: claimed, values: claimedValues)
        else { continue }
        let moved = edit.move(
          nodeAt: index, in: graph, operation: operation, sources: [source], shape: shape, suffix: "__unit_axes",
          follower: .reshape(targetShape: graph[node.output].type.shape), followerName: node.name + "__unit_axes",
          origin: node.origin)
        if !graph.outputs.contains(node.output) { pending[node.output] = (moved, shape) }
      }
      if !edit.isEmpty {
        edit.apply(to: &graph)
        changed = true
        continue
      }
      // Last, when nothing else moves: the other inputs of a join will not bring their own reshape.
      if !changed && (Self.bypassBroadcastReshapes(&graph) || Self.squeezeBroadcastConstants(&graph)) { changed = true }
    }
  }

  /// For an element-wise node `index` one of whose inputs is a reshape that only adds unit axes in front
  /// (one in the graph, read only there, or one this scan moved: `pending`) and whose other inputs are
  /// constants: the input before the reshape, the constants with leading unit axes beyond its rank
  /// dropped, and the shape the node computes from those. Broadcasting aligns axes from the right, so the
  /// node computes the same values; its output is that shape with unit axes in front (nil otherwise).
  static func broadcastJoin(
    _ index: Int, in graph: Graph, lookup: GraphIndex, pending: [ValueID: (source: ValueID, shape: [Int])]
  ) -> (position: Int, source: ValueID, squeezed: [(Int, Constant)], shape: [Int], claimedNodes: [Int])? {
    let node = graph.nodes[index]
    guard case .elementwise = node.operation, Set(node.inputs).count == node.inputs.count else { return nil }
    var found: (position: Int, source: ValueID, before: [Int], claimed: [Int])?
    var constants: [Int: Constant] = [:]
    for (position, input) in node.inputs.enumerated() {
      if let moved = pending[input], lookup.readerCount(input) == 1, found == nil {
        found = (position, moved.source, moved.shape, [])
        continue
      }
      guard let producer = lookup.producer[input] else { return nil }
      switch graph.nodes[producer].operation {
      case .constant(let c): constants[position] = c
      case .reshape where found == nil && lookup.readerCount(input) == 1 && !graph.outputs.contains(input):
        let source = graph.nodes[producer].inputs[0]
        // Not a reshape of a reshape: those merge first.
        if let before = lookup.producer[source], CancelReshapesPass.isReshape(graph.nodes[before].operation) {
          return nil
        }
        found = (position, source, graph[source].type.shape, [producer])
      default: return nil
      }
    }
    guard let found, !constants.isEmpty else { return nil }
    let after = graph[node.inputs[found.position]].type.shape
    let added = after.count - found.before.count
    guard added > 0, Array(after.suffix(found.before.count)) == found.before,
      after.prefix(added).allSatisfy({ $0 == 1 })
    else { return nil }
    var shapes = node.inputs.map { graph[$0].type.shape }
    shapes[found.position] = found.before
    var squeezed: [(Int, Constant)] = []
    let rank = found.before.count
    for (position, c) in constants.sorted(by: { $0.key < $1.key }) where c.shape.count > rank {
      guard c.shape.prefix(c.shape.count - rank).allSatisfy({ $0 == 1 }) else { return nil }
      let constant = Constant(shape: Array(c.shape.suffix(rank)), values: c.values)
      squeezed.append((position, constant))
      shapes[position] = constant.shape
    }
    let output = graph[node.output].type.shape
    guard let shape = try? node.operation.outputShape(inputShapes: shapes, node: node.name),
      output.count >= shape.count,
      Array(output.suffix(shape.count)) == shape, output.prefix(output.count - shape.count).allSatisfy({ $0 == 1 })
    else { return nil }
    return (found.position, found.source, squeezed, shape, found.claimed)
  }

  /// An element-wise operation or a concatenation whose every input is a reshape adding unit axes in
  /// front (the same number for a concatenation; each read only there) computes on the inputs before
  /// them, and one reshape follows: two branches that each carry a batch axis join without it (an
  /// element-wise operation broadcasts from the right, so the added axes change nothing). Returns
  /// whether it moved one.
  static func sinkPastJoins(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    // As `run`: every move of one scan whose nodes and values are its own, made from the last.
    var edit = GraphEdit(graph)
    for index in graph.nodes.indices {
      guard
        let producers = graph.joinProducers(
          of: index, sameRank: false, in: lookup,
          { node -> Int? in
            guard case .reshape = node.operation else { return nil }
            let (before, after) = (graph[node.inputs[0]].type.shape, graph[node.output].type.shape)
            let added = after.count - before.count
            return added > 0 && Array(after.suffix(before.count)) == before
              && after.prefix(added).allSatisfy({ $0 == 1 }) ? added : nil
          }), let added = producers.map(\.match).min()
      else { continue }
      let node = graph.nodes[index]
      var operation = node.operation
      if case .concatenate(let axis) = operation {
        // A concatenation needs one rank; an element-wise operation broadcasts inputs of any rank from the right.
        guard axis >= added, producers.allSatisfy({ $0.match == added }) else { continue }
        operation = .concatenate(axis: axis - added)
      }
      let sources = producers.map { graph.nodes[$0.producer].inputs[0] }
      guard let shape = try? operation.outputShape(inputShapes: sources.map { graph[$0].type.shape }, node: node.name)
      else { continue }
      guard edit.claim(nodes: [index] + producers.map(\.producer), values: sources + node.inputs + [node.output]) else {
        continue
      }
      edit.move(
        nodeAt: index, in: graph, operation: operation, sources: sources, shape: shape, suffix: "__unit_axes",
        follower: .reshape(targetShape: graph[node.output].type.shape), followerName: node.name + "__unit_axes",
        origin: node.origin)
    }
    edit.apply(to: &graph)
    return !edit.isEmpty
  }

  /// An element-wise operation broadcasts from the right, so an input reshaped only to add unit axes in
  /// front (read only there) can be read before the reshape (`x * s.reshape([1, C])` with `x` of shape
  /// `[H, W, C]` is `x * s`); when the result then loses unit axes in front, a reshape after it adds them
  /// back and moves on. Returns whether it bypassed one.
  static func bypassBroadcastReshapes(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    var edit = GraphEdit(graph)
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard case .elementwise = node.operation, node.inputs.count >= 2 else { continue }
      // Where the other inputs are reshapes or transposes too, the join moves as a whole instead (`sinkPastJoins`).
      let producers = node.inputs.map { input in lookup.producer[input].map { graph.nodes[$0].operation } }
      let layoutInputs = producers.filter { operation in
        switch operation {
        case .reshape?, .permute?: return true
        default: return false
        }
      }
      guard layoutInputs.count == 1 else { continue }
      for (position, input) in node.inputs.enumerated() {
        guard let producer = lookup.producer[input], case .reshape = graph.nodes[producer].operation,
          lookup.readerCount(input) == 1
        else { continue }
        let source = graph.nodes[producer].inputs[0]
        let (before, after) = (graph[source].type.shape, graph[input].type.shape)
        let added = after.count - before.count
        guard added > 0, Array(after.suffix(before.count)) == before, after.prefix(added).allSatisfy({ $0 == 1 }) else {
          continue
        }
        var shapes = node.inputs.map { graph[$0].type.shape }
        shapes[position] = before
        let output = graph[node.output].type.shape
        guard let shape = Broadcasting.shape(shapes) else { continue }
        var inputs = node.inputs
        inputs[position] = source
        if shape == output {
          guard edit.claim(nodes: [index, producer], values: [input, node.output]) else { break }
          var rewired = node
          rewired.inputs = inputs
          edit.replace(nodeAt: index, with: [rewired])
          break
        }
        // The result loses the unit axes in front: they move on after it, as a reshape.
        guard output.count > shape.count, Array(output.suffix(shape.count)) == shape,
          output.prefix(output.count - shape.count).allSatisfy({ $0 == 1 })
        else { continue }
        guard edit.claim(nodes: [index, producer], values: [input, node.output]) else { break }
        edit.move(
          nodeAt: index, in: graph, operation: node.operation, sources: inputs, shape: shape, suffix: "__unit_axes",
          follower: .reshape(targetShape: output), followerName: node.name + "__unit_axes", origin: node.origin)
        break
      }
    }
    edit.apply(to: &graph)
    return !edit.isEmpty
  }

  /// An element-wise operation whose result has more axes than any of its computed inputs only because
  /// a constant has unit axes in front (`x * s` with `x` of shape `[H, W, C]` and `s` of `[1, 1, 1, C]`,
  /// a channels-first scale moved to channels last) computes the same with the constant's leading unit
  /// axes dropped; a reshape after it adds them back and moves on. Returns whether it squeezed one.
  static func squeezeBroadcastConstants(_ graph: inout Graph) -> Bool {
    let lookup = graph.lookup
    var edit = GraphEdit(graph)
    for index in graph.nodes.indices {
      let node = graph.nodes[index]
      guard case .elementwise = node.operation, node.inputs.count >= 2 else { continue }
      let constants = node.inputs.map { input -> Constant? in
        guard let producer = lookup.producer[input], case .constant(let c) = graph.nodes[producer].operation else {
          return nil
        }
        return c
      }
      let computed = node.inputs.indices.filter { constants[$0] == nil }
      guard let rank = computed.map({ graph[node.inputs[$0]].type.shape.count }).max() else { continue }
      let output = graph[node.output].type.shape
      let extra = output.count - rank
      guard extra > 0, output.prefix(extra).allSatisfy({ $0 == 1 }) else { continue }
      // The squeezed constants' shapes first: the node must compute the shape without the unit axes.
      var shapes = node.inputs.map { graph[$0].type.shape }
      var squeezed: [Int: Constant] = [:]
      for position in node.inputs.indices {
        guard let c = constants[position], c.shape.count > rank else { continue }
        squeezed[position] = Constant(shape: Array(c.shape.dropFirst(c.shape.count - rank)), values: c.values)
        shapes[position] = squeezed[position]!.shape
      }
      guard let shape = try? node.operation.outputShape(inputShapes: shapes, node: node.name),
        shape == Array(output.dropFirst(extra)),
        edit.claim(nodes: [index], values: [node.output])
      else { continue }
      var inputs = node.inputs
      let added = Self.squeezedConstants(
        squeezed.sorted(by: { $0.key < $1.key }), of: node, inputs: &inputs, in: graph, lookup: lookup, edit: &edit)
      edit.move(
        nodeAt: index, in: graph, operation: node.operation, sources: inputs, shape: shape, suffix: "__unit_axes",
        follower: .reshape(targetShape: output), followerName: node.name + "__unit_axes", origin: node.origin)
      edit.replace(nodeAt: index, with: added + (edit.replacement(ofNodeAt: index) ?? []))
    }
    edit.apply(to: &graph)
    return !edit.isEmpty
  }

  /// A constant node for each squeezed constant of `node` (named after its new value, unique), with
  /// `inputs` reading them instead of the constants they replace.
  static func squeezedConstants(
    _ squeezed: [(Int, Constant)], of node: Node, inputs: inout [ValueID], in graph: Graph, lookup: GraphIndex,
    edit: inout GraphEdit
  ) -> [Node] {
    squeezed.map { position, constant in
      let old = node.inputs[position]
      let value = edit.newValue(
        named: graph[old].name + "__squeezed", type: TensorType(constant.shape, dataType: graph[old].type.dataType),
        in: graph)
      inputs[position] = value
      return Node(
        name: edit.name(ofNew: value), operation: .constant(constant), inputs: [], output: value,
        origin: lookup.producer[old].flatMap { graph.nodes[$0].origin })
    }
  }

  /// The operation as it applies to the tensor before the reshape, or nil when it cannot move.
  static func moved(_ operation: Operation, before: [Int], after: [Int]) -> Operation? {
    // Where each non-unit axis of the reshaped tensor was before the reshape.
    let kept = before.indices.filter { before[$0] != 1 }
    var position: [Int: Int] = [:]
    var next = 0
    for axis in after.indices where after[axis] != 1 {
      position[axis] = kept[next]
      next += 1
    }
    // Only unit axes put in front: a spatial operation takes leading axes as they come.
    let onlyLeading = after.count > before.count && Array(after.suffix(before.count)) == before && before.count >= 3
    switch operation {
    case .activation(.parametricReLU): return nil
    case .activation, .cast: return operation
    case .embedding:
      // A lookup per element: unit axes of the ids stay unit axes of the result (before its vector axis).
      return operation
    case .dense:
      // It reads the last axis, which must be the same on both sides; it does not take on unit axes
      // (a dense layer of `[1, 1, C]` is not one every writer has).
      return after.last != 1 && before.last == after.last && before.count <= after.count ? operation : nil
    case .batchNormalization, .layerNormalization, .localResponseNormalization:
      // These read the last axis; it must be the same axis on both sides.
      return after.last != 1 && before.last == after.last ? operation : nil
    case .softmax(let axis):
      return position[axis].map { .softmax(axis: $0) }
    case .channelShuffle(let axis, let groups):
      return position[axis].map { .channelShuffle(axis: $0, groups: groups) }
    case .reduce(let reduction):
      // Every reduced axis must be one the reshape keeps; without keepDims the unit axes go anyway.
      let axes = reduction.axes.compactMap { position[$0] }
      guard axes.count == reduction.axes.count else { return nil }
      return .reduce(Reduction(kind: reduction.kind, axes: axes.sorted(), keepDims: reduction.keepDims))
    case .slice(let slice):
      // Each added unit axis must be taken whole (begin 0, end 1, stride 1); the rest slices the same axes.
      let added = after.count - before.count
      guard after.count > before.count, Array(after.suffix(before.count)) == before, slice.begin.count == after.count,
        slice.end.count == after.count, slice.strides.count == after.count,
        (0..<added).allSatisfy({ slice.begin[$0] == 0 && slice.end[$0] == 1 && slice.strides[$0] == 1 })
      else { return nil }
      return .slice(
        StridedSlice(
          begin: Array(slice.begin.dropFirst(added)), end: Array(slice.end.dropFirst(added)),
          strides: Array(slice.strides.dropFirst(added))))
    case .constantPad(let pad):
      // Padding of the added unit axes must be none; the rest pads the same axes.
      let added = after.count - before.count
      guard onlyLeading, pad.before.count == after.count, pad.after.count == after.count,
        pad.before.prefix(added).allSatisfy({ $0 == 0 }), pad.after.prefix(added).allSatisfy({ $0 == 0 })
      else { return nil }
      return .constantPad(
        ConstantPadding(
          before: Array(pad.before.dropFirst(added)), after: Array(pad.after.dropFirst(added)), value: pad.value))
    case .convolution2D, .convolutionTranspose, .pooling2D, .zeroPadding2D, .cropping2D, .upsampling2D,
      .globalPooling2D(_, keepDims: true):
      return onlyLeading ? operation : nil
    case .permute(let order):
      // The transpose of the original puts its non-unit axes in the order the transpose of the reshaped
      // tensor has them; its unit axes (dropped by the reshape after it) go last.
      let ordered = order.compactMap { position[$0] }
      let unit = before.indices.filter { before[$0] == 1 }
      return .permute(order: ordered + unit)
    default:
      return nil
    }
  }

  /// A unit-axis reshape read by several nodes gets a copy per reader, so that each can move on its
  /// own branch (a skip connection reads the same tensor as the next layer).
  static func splitSharedReshapes(_ graph: inout Graph) {
    // All splits of a scan at once (a reader reading two shared reshapes takes the second in the next scan).
    while true {
      let lookup = graph.lookup
      var edit = GraphEdit(graph)
      for node in graph.nodes {
        guard case .reshape = node.operation, !graph.outputs.contains(node.output),
          squeezed(graph[node.inputs[0]].type.shape) == squeezed(graph[node.output].type.shape)
        else { continue }
        let readers = lookup.readingNodes[node.output] ?? []
        guard readers.count > 1 else { continue }
        for reader in readers.dropFirst() where edit.claim(nodes: [reader], values: []) {
          let copy = edit.newValue(named: graph[node.output].name + "__copy", type: graph[node.output].type, in: graph)
          var rewired = graph.nodes[reader]
          rewired.inputs = rewired.inputs.map { $0 == node.output ? copy : $0 }
          edit.replace(
            nodeAt: reader,
            with: [
              Node(
                name: node.name + "__copy", operation: node.operation, inputs: node.inputs, output: copy,
                origin: node.origin), rewired,
            ])
        }
      }
      guard !edit.isEmpty else { return }
      edit.apply(to: &graph)
    }
  }
}
