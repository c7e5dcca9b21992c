import ModelIR

extension KerasLayerRegistry {
  static let dotHandlers: [String: KerasLayerHandler] = [
    "Dot": { try $0.convertDot($1) }
  ]
}

extension KerasGraphImporter {
  mutating func convertDot(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let inputs = call.inputs
    guard inputs.count == 2, shape(inputs[0]).count == 1, shape(inputs[0]) == shape(inputs[1]) else {
      throw reader.fail("Dot of \(inputs.map { shape($0) }) (two vectors of one length only)")
    }
    let axes = try reader.axes("axes", default: [1], rank: 1)
    guard axes.allSatisfy({ $0 == 1 || $0 == -1 }) else { throw reader.fail("axes \(axes) (only the feature axis)") }
    return try add(.dot(cosine: reader.bool("normalize", default: false)), inputs, call)
  }
}
