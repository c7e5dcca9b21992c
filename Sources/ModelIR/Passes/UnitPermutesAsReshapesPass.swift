/// Turns a transpose that only moves axes of size 1 (or none) into a reshape.
///
/// When the axes larger than 1 keep their order, a transpose leaves the row-major order of the elements
/// as it is: it is a reshape to its output shape, which then merges with the reshapes around it. Classic
/// Core ML vectors are `[1, C, 1, 1]` blobs; a spatial layer on one (a batch normalization of a dense
/// layer's output) is wrapped in transposes between `[C, 1, 1]` and `[1, 1, C]` that move only unit axes.
public struct UnitPermutesAsReshapesPass: GraphPass {
  public let name = "unit-permutes-as-reshapes"
  public init() {}

  /// Whether the transpose `order` of a tensor of `shape` keeps its non-unit axes in order.
  static func movesOnlyUnitAxes(_ order: [Int], shape: [Int]) -> Bool {
    guard order.count == shape.count, Set(order) == Set(shape.indices) else { return false }
    let kept = order.filter { shape[$0] != 1 }
    return kept == kept.sorted()
  }

  public func run(_ graph: inout Graph) throws {
    for index in graph.nodes.indices {
      // The identity order included (a transpose the other passes left with nothing to move).
      guard case .permute(let order) = graph.nodes[index].operation,
        Self.movesOnlyUnitAxes(order, shape: graph[graph.nodes[index].inputs[0]].type.shape)
      else { continue }
      graph.nodes[index].operation = .reshape(targetShape: graph[graph.nodes[index].output].type.shape)
    }
  }
}
