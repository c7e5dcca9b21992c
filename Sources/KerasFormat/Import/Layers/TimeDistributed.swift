import ModelIR

extension KerasLayerRegistry {
  static let timeDistributedHandlers: [String: KerasLayerHandler] = [
    "TimeDistributed": { try $0.convertTimeDistributed($1) }
  ]
}

extension KerasGraphImporter {
  /// Inner layers that act on the last axis only, so the time axis passes through.
  static let lastAxisClassNames: Set<String> = [
    "Dense", "Activation", "Dropout", "ReLU", "LeakyReLU", "ELU", "Softmax",
  ]

  /// The wrapped layer on every step: last-axis layers and image layers run on the whole tensor.
  mutating func convertTimeDistributed(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let layer = call.layer
    guard let inner = reader.value("layer").flatMap(KerasLayerConfig.init(wrapped:)) else {
      throw reader.fail("no wrapped layer")
    }
    let input = try call.single()
    if Self.lastAxisClassNames.contains(inner.className) {
      let renamed = KerasLayerConfig(className: inner.className, name: layer.name, config: inner.config)
      return try convert(renamed, inputs: [input], weightGroup: call.weightGroup)
    }
    if inner.className == "Flatten" {
      let s = shape(input)
      guard s.count >= 2 else { throw reader.fail("TimeDistributed(Flatten) of \(s) (needs a time axis)") }
      return try add(.reshape(targetShape: [s[0], try checkedProduct(Array(s.dropFirst()), reader)]), [input], call)
    }
    // Image layers take the time axis as a leading axis.
    guard shape(input).count == 4, KerasLayerCatalog.supportedClassNames.contains(inner.className) else {
      throw reader.fail(
        "TimeDistributed(\(inner.className)) is not supported (Dense, activations, Flatten and image layers are)")
    }
    let renamed = KerasLayerConfig(className: inner.className, name: layer.name, config: inner.config)
    return try convert(renamed, inputs: [input], weightGroup: call.weightGroup)
  }
}
