import ModelIR

extension KerasLayerRegistry {
  static let bidirectionalHandlers: [String: KerasLayerHandler] = [
    "Bidirectional": { try $0.convertBidirectional($1) }
  ]
}

extension KerasGraphImporter {
  /// A recurrent layer run both ways; the halves' weights are under the wrapper's name.
  mutating func convertBidirectional(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let layer = call.layer
    let weightGroup = call.weightGroup
    guard let inner = reader.value("layer").flatMap(KerasLayerConfig.init(wrapped:)) else {
      throw reader.fail("no wrapped layer")
    }
    guard Self.recurrentClassNames.contains(inner.className) else {
      throw reader.fail("wraps \(inner.className); only SimpleRNN, LSTM and GRU")
    }
    let mergeName = try reader.string("merge_mode", default: "concat")
    guard let merge = Recurrent.Merge(rawValue: mergeName) else {
      throw reader.fail("merge_mode '\(mergeName)' is not supported")
    }
    let input = try call.single()
    var forward = try recurrent(inner, input: input, weightGroup: weightGroup, owner: layer.name, direction: "forward")
    let backward = try recurrent(
      inner, input: input, weightGroup: weightGroup, owner: layer.name, direction: "backward")
    guard !forward.goBackwards else { throw reader.fail("a wrapped layer with go_backwards is not supported") }
    forward.backward = backward.forward
    forward.merge = merge
    return try add(.recurrent(forward), [input], call)
  }
}
