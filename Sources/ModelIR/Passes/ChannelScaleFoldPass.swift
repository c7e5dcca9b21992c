/// A multiply by per-channel constants (`x * s`, `s` of shape `[C]` on an `[H, W, C]` tensor) read only
/// by a convolution, directly or through a zero padding (which scaling leaves zero), is folded into the
/// convolution's kernel: input channel `i`'s weights times `s[i]`. An image input's per-channel
/// normalization (`(pixel / 255 - mean) / std` with a std per channel) costs nothing this way.
public struct ChannelScaleFoldPass: GraphPass {
  public let name = "fold-channel-scales"
  public init() {}

  public func run(_ graph: inout Graph) throws {
    var index = 0
    // Who produces and reads each value: made again only after a fold changes the graph.
    var lookup = graph.lookup
    while index < graph.nodes.count {
      defer { index += 1 }
      let node = graph.nodes[index]
      guard case .elementwise(.multiply) = node.operation, node.inputs.count == 2, lookup.readerCount(node.output) == 1,
        !graph.outputs.contains(node.output),
        let constantIndex = lookup.producer[node.inputs[1]],
        case .constant(let scales) = graph.nodes[constantIndex].operation,
        let channels = graph[node.inputs[0]].type.shape.last, graph[node.inputs[0]].type.shape.count >= 3,
        scales.shape == [channels], graph[node.output].type.shape == graph[node.inputs[0]].type.shape
      else { continue }
      // The convolution reading it, through at most one zero padding.
      var reader = lookup.readingNodes[node.output]?.first
      if let padding = reader, case .zeroPadding2D = graph.nodes[padding].operation,
        lookup.readerCount(graph.nodes[padding].output) == 1,
        !graph.outputs.contains(graph.nodes[padding].output)
      {
        reader = lookup.readingNodes[graph.nodes[padding].output]?.first
      }
      guard let convolution = reader, case .convolution2D(var conv) = graph.nodes[convolution].operation else {
        continue
      }
      let (perGroup, outputs) = (conv.inputChannelsPerGroup, conv.outputChannels)
      let outputsPerGroup = outputs / conv.groups
      var values = conv.kernel.values
      for position in 0..<(conv.kernelHeight * conv.kernelWidth) {
        for i in 0..<perGroup {
          for o in 0..<outputs {
            values[(position * perGroup + i) * outputs + o] *= scales.values[(o / outputsPerGroup) * perGroup + i]
          }
        }
      }
      conv.kernel = Constant(shape: conv.kernel.shape, values: values)
      graph.nodes[convolution].operation = .convolution2D(conv)
      // The multiply's readers read its input instead.
      graph.replaceUses(of: node.output, with: node.inputs[0])
      graph = graph.pruned()
      lookup = graph.lookup
      index = -1
    }
  }
}

extension Graph {
  /// Multiplies graph input `input` (`[..., C]`) by per-channel `factors` before anything reads it: a
  /// constant and a multiply are inserted first (`ChannelScaleFoldPass` later folds them into a
  /// convolution). The factors must be one per channel (checked by the caller).
  public mutating func scaleChannels(of input: ValueID, by factors: [Float]) {
    precondition(self[input].type.shape.last == factors.count, "one factor per channel")
    let name = self[input].name
    let constant = values.count
    values.append(Value(name: unusedName(name + "__channel_scales"), type: TensorType([factors.count])))
    let scaled = values.count
    values.append(Value(name: unusedName(name + "__scaled"), type: self[input].type))
    replaceUses(of: input, with: scaled)
    let origin = LayerOrigin(name: name, type: "input")
    nodes.insert(
      Node(
        name: name + "__scaled", operation: .elementwise(.multiply), inputs: [input, constant], output: scaled,
        origin: origin), at: 0)
    nodes.insert(
      Node(
        name: name + "__channel_scales", operation: .constant(Constant(shape: [factors.count], values: factors)),
        inputs: [], output: constant, origin: origin),
      at: 0)
  }
}
