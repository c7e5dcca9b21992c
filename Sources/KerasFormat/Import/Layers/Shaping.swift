import ModelIR

extension KerasLayerRegistry {
  /// Layers that move, pad, crop or repeat elements without computing on them.
  static let shapingHandlers: [String: KerasLayerHandler] = [
    "Flatten": { try $0.convertFlatten($1) },
    "Reshape": { try $0.convertReshape($1) },
    "Permute": { try $0.convertPermute($1) },
    "ZeroPadding2D": { try $0.convertZeroPadding2D($1) },
    "Cropping2D": { try $0.convertCropping2D($1) },
    "UpSampling2D": { try $0.convertUpSampling2D($1) },
  ]
}

extension KerasGraphImporter {
  mutating func convertFlatten(_ call: KerasLayerCall) throws -> ValueID {
    let input = try call.single()
    return shape(input).count == 1 ? input : try add(.flatten, [input], call)
  }

  mutating func convertReshape(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    var target = try reader.ints("target_shape", range: -1...LayerConfigReader.maxConfigInteger)
    guard !target.contains(0), target.filter({ $0 == -1 }).count <= 1 else {
      throw reader.invalid(
        "target_shape", reader.present("target_shape"), expected: "sizes of 1 or more, at most one of them -1")
    }
    if let unknown = target.firstIndex(of: -1) {
      // Keras fills the -1 so the element count stays; it must divide exactly.
      let total = try checkedProduct(shape(input), reader)
      guard let known = GraphLimits.elementCount(target.filter { $0 != -1 }), known >= 1, total % known == 0 else {
        throw reader.invalid(
          "target_shape", reader.present("target_shape"),
          expected: "a shape with as many elements as the input \(shape(input))")
      }
      target[unknown] = total / known
    }
    return try add(.reshape(targetShape: target), [input], call)
  }

  mutating func convertPermute(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    let rank = shape(input).count
    let dims = try reader.ints("dims", range: 1...max(rank, 1))
    guard dims.sorted() == Array(1...max(rank, 1)) else {
      throw reader.invalid("dims", reader.present("dims"), expected: "a permutation of 1...\(rank)")
    }
    return try add(.permute(order: dims.map { $0 - 1 }), [input], call)
  }

  mutating func convertZeroPadding2D(_ call: KerasLayerCall) throws -> ValueID {
    try call.reader.requireChannelsLast()
    return try add(.zeroPadding2D(call.reader.box("padding")), [try call.single()], call)
  }

  mutating func convertCropping2D(_ call: KerasLayerCall) throws -> ValueID {
    try call.reader.requireChannelsLast()
    return try add(.cropping2D(call.reader.box("cropping")), [try call.single()], call)
  }

  mutating func convertUpSampling2D(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    try reader.requireChannelsLast()
    let size = try reader.pair("size", default: [2, 2])
    let interpolation = try reader.string("interpolation", default: "nearest")
    guard interpolation == "nearest" || interpolation == "bilinear" else {
      throw reader.fail("interpolation '\(interpolation)' is not supported (nearest or bilinear)")
    }
    return try add(
      .upsampling2D(height: size[0], width: size[1], mode: interpolation == "bilinear" ? .bilinear : .nearest),
      [try call.single()], call)
  }
}
