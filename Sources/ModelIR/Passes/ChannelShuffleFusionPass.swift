/// ShuffleNet's channel shuffle as exporters write it, a reshape splitting one axis into `[groups, n]`,
/// a transpose swapping the two and a reshape merging them again (`x.reshape(N, g, C / g, H, W)
/// .transpose(1, 2).reshape(N, C, H, W)`), becomes one `channelShuffle` of that axis.
///
/// As one operation it moves past transposes and unit-axis reshapes like an activation does (so a
/// channels-first network's shuffle ends up on the channels of `[H, W, C]`), and a writer without rank-5
/// reshapes (classic Core ML) has an exact layer sequence for it. Unit axes may come and go anywhere in
/// the three steps; the two reshapes must otherwise keep every axis but the split one.
public struct ChannelShuffleFusionPass: GraphPass {
  public let name = "fuse-channel-shuffle"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    var changed = true
    while changed {
      changed = false
      let lookup = graph.lookup
      for index in graph.nodes.indices {
        guard let match = Self.match(reshapeAt: index, in: graph, lookup: lookup) else { continue }
        let node = graph.nodes[index]
        let shuffle = Operation.channelShuffle(axis: match.axis, groups: match.groups)
        let shape = graph[match.x].type.shape
        if graph[node.output].type.shape == shape {
          try graph.replaceOperation(ofNodeAt: index, with: shuffle, inputs: [match.x])
          graph = graph.pruned()
        } else {
          // Unit axes added or dropped on the way: a reshape after the shuffle keeps the output's shape.
          graph.moveBefore(
            nodeAt: index, operation: shuffle, sources: [match.x], shape: shape, suffix: "__shuffled",
            follower: .reshape(targetShape: graph[node.output].type.shape), followerName: node.name + "__unit_axes",
            origin: node.origin)
        }
        changed = true
        break
      }
    }
  }

  /// For the last reshape of a shuffle at `index`: the tensor shuffled, the axis (of its shape) and the groups.
  static func match(reshapeAt index: Int, in graph: Graph, lookup: GraphIndex) -> (x: ValueID, axis: Int, groups: Int)?
  {
    let last = graph.nodes[index]
    guard case .reshape = last.operation, let swapIndex = lookup.producer[last.inputs[0]],
      case .permute(let order) = graph.nodes[swapIndex].operation, lookup.readerCount(last.inputs[0]) == 1,
      let splitIndex = lookup.producer[graph.nodes[swapIndex].inputs[0]],
      case .reshape = graph.nodes[splitIndex].operation,
      lookup.readerCount(graph.nodes[swapIndex].inputs[0]) == 1
    else { return nil }
    let x = graph.nodes[splitIndex].inputs[0]
    let shape = graph[x].type.shape
    let split = graph[graph.nodes[splitIndex].output].type.shape
    let merged = graph[last.output].type.shape
    // Without unit axes: the input `[..., C, ...]` split into `[..., g, n, ...]`, the two swapped, merged back.
    let kept = shape.filter { $0 != 1 }
    guard merged.filter({ $0 != 1 }) == kept else { return nil }
    let splitAxes = split.indices.filter { split[$0] != 1 }
    let parts = splitAxes.map { split[$0] }
    guard parts.count == kept.count + 1 else { return nil }
    // The first place where the split shape differs from the input is the split axis.
    guard let position = kept.indices.first(where: { parts[$0] != kept[$0] }),
      parts[position] * parts[position + 1] == kept[position],
      Array(parts[..<position]) == Array(kept[..<position]),
      Array(parts[(position + 2)...]) == Array(kept[(position + 1)...])
    else { return nil }
    // The transpose swaps the two parts and keeps every other axis larger than 1 in order.
    var expected = splitAxes
    expected.swapAt(position, position + 1)
    guard order.filter({ split[$0] != 1 }) == expected else { return nil }
    let axis = shape.indices.filter { shape[$0] != 1 }[position]
    return (x, axis, parts[position])
  }
}
