import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Constants, compressed constants (decompressed on reading), identity and cast.
  static let constantOperations: [String: MILOperationEntry] = [
    "const": MILOperationEntry { importer in
      guard let value = importer.operation.value else { throw importer.invalid("has no 'val' attribute") }
      try importer.recordConstant(value)
    },
    // A lookup table without `shape` is the iOS 18 form.
    "constexpr_lut_to_dense": MILOperationEntry(
      introduced: { $0.inputs["shape"] == nil ? 8 : 6 },
      { try $0.recordConstant(try $0.decompress()) }),
    "constexpr_affine_dequantize": MILOperationEntry(since: 6) { try $0.recordConstant(try $0.decompress()) },
    "constexpr_blockwise_shift_scale": MILOperationEntry(since: 8) { try $0.recordConstant(try $0.decompress()) },
    "constexpr_sparse_to_dense": MILOperationEntry(since: 6) { try $0.recordConstant(try $0.decompress()) },
    "identity": MILOperationEntry { try $0.define(try $0.tensor("x")) },
    "cast": MILOperationEntry { try $0.cast() },
  ]
}

extension MILProgramImporter {
  /// The current operation's output as a constant value, with the operation as its origin.
  mutating func recordConstant(_ value: MILValue) throws {
    constants[try outputName()] = value
    constantOrigins[try outputName()] = LayerOrigin(name: operation.name, type: operation.type)
  }
}
