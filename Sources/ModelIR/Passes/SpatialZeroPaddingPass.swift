/// A constant padding by zeros of an `[H, W, C]` tensor's height and width only is a ZeroPadding2D,
/// which every writer has a layer for (an ML Program's `pad`, and ZeroPadding2D is where a convolution's
/// explicit padding goes when a frontend splits it off).
public struct SpatialZeroPaddingPass: GraphPass {
  public let name = "spatial-zero-padding"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    for index in graph.nodes.indices {
      guard case .constantPad(let pad) = graph.nodes[index].operation, pad.value == 0,
        graph[graph.nodes[index].inputs[0]].type.shape.count == 3, pad.before.count == 3, pad.after.count == 3,
        pad.before[2] == 0, pad.after[2] == 0
      else { continue }
      graph.nodes[index].operation = .zeroPadding2D(
        Box2D(top: pad.before[0], bottom: pad.after[0], left: pad.before[1], right: pad.after[1]))
    }
  }
}
