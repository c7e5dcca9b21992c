/// A mean or max over the height and width of an `[H, W, C]` tensor (kept as 1s, or dropped) is a global pooling,
/// which every writer has a layer for (a Core ML or ONNX global average pooling reaches the IR as a
/// reduction over its spatial axes).
public struct GlobalPoolingPass: GraphPass {
  public let name = "global-pooling"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    for index in graph.nodes.indices {
      guard case .reduce(let reduction) = graph.nodes[index].operation, reduction.axes == [0, 1],
        graph[graph.nodes[index].inputs[0]].type.shape.count == 3
      else { continue }
      let kind: PoolingKind
      switch reduction.kind {
      case .mean: kind = .average
      case .max: kind = .max
      default: continue
      }
      graph.nodes[index].operation = .globalPooling2D(kind: kind, keepDims: reduction.keepDims)
    }
  }
}
