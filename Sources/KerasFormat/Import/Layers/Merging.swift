import ModelIR

extension KerasLayerRegistry {
  /// Element-wise merges, by class name.
  static let elementwiseKinds: [String: ElementwiseKind] = [
    "Add": .add, "Subtract": .subtract, "Multiply": .multiply, "Average": .average, "Maximum": .maximum,
    "Minimum": .minimum,
  ]

  /// Layers that merge several inputs into one.
  static let mergingHandlers: [String: KerasLayerHandler] =
    elementwiseKinds
    .mapValues { kind -> KerasLayerHandler in { try $0.add(.elementwise(kind), $1.inputs, $1) } }
    .merging(["Concatenate": { try $0.convertConcatenate($1) }]) { first, _ in first }
}

extension KerasGraphImporter {
  mutating func convertConcatenate(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let rank = call.inputs.first.map { shape($0).count } ?? 0
    let axes = try reader.axes("axis", default: [-1], rank: rank)
    guard axes.count == 1 else { throw reader.invalid("axis", reader.present("axis"), expected: "one axis") }
    return try add(.concatenate(axis: try normalizedAxis(axes[0], rank: rank, reader)), call.inputs, call)
  }
}
