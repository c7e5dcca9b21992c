import ModelIR

extension KerasLayerRegistry {
  /// 2-D pooling, windowed and global; `Max…` names pool the maximum, the others the average.
  static let poolingHandlers: [String: KerasLayerHandler] = [
    "MaxPooling2D": { try $0.convertPooling2D($1) },
    "MaxPool2D": { try $0.convertPooling2D($1) },
    "AveragePooling2D": { try $0.convertPooling2D($1) },
    "AvgPool2D": { try $0.convertPooling2D($1) },
    "GlobalAveragePooling2D": { try $0.convertGlobalPooling2D($1) },
    "GlobalAvgPool2D": { try $0.convertGlobalPooling2D($1) },
    "GlobalMaxPooling2D": { try $0.convertGlobalPooling2D($1) },
    "GlobalMaxPool2D": { try $0.convertGlobalPooling2D($1) },
  ]
}

extension KerasGraphImporter {
  mutating func convertPooling2D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let pool = try reader.pair("pool_size", default: [2, 2])
    let pooling = Pooling2D(
      kind: call.className.hasPrefix("Max") ? .max : .average, pool: pool,
      strides: try reader.pair("strides", default: pool), padding: try reader.padding())
    return try add(.pooling2D(pooling), [try call.single()], call)
  }

  mutating func convertGlobalPooling2D(_ call: KerasLayerCall) throws -> ValueID {
    try call.reader.requireChannelsLast()
    let kind: PoolingKind = call.className.hasPrefix("GlobalMax") ? .max : .average
    return try add(
      .globalPooling2D(kind: kind, keepDims: call.reader.bool("keepdims", default: false)), [try call.single()], call)
  }
}
