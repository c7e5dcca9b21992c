import ModelIR

extension KerasLayerRegistry {
  /// Layers that are the identity at inference time and are removed (unless a custom conversion is registered).
  static let noOpHandlers: [String: KerasLayerHandler] = Dictionary(
    uniqueKeysWithValues: [
      "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
      "GaussianDropout", "AlphaDropout", "ActivityRegularization",
      // Masking only changes results for time steps equal to its mask value; inputs are assumed to have none.
      "Masking",
    ].map { ($0, { try $0.convertNoOp($1) } as KerasLayerHandler) })
}

extension KerasGraphImporter {
  func convertNoOp(_ call: KerasLayerCall) throws -> ValueID {
    // No-ops still have their documented ranges: a dropout rate is a probability.
    if call.reader.present("rate") != nil { _ = try call.reader.float("rate", range: 0...1) }
    return try call.single()
  }
}
