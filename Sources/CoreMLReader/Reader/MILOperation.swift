import CoreMLCommon

/// One MIL operation of a program's `main` block.
public struct MILOperation: Sendable, Equatable {
  /// The operation type (`conv`, `linear`, `const`, `constexpr_lut_to_dense`, ...).
  public var type: String
  /// The `name` attribute, else the first output's name.
  public var name: String
  /// Arguments by parameter name; most parameters take one argument, `concat`'s `values` takes several.
  public var inputs: [String: [MILArgument]]
  public var outputs: [MILNamedType]
  /// For `const` operations: the value (from the `val` attribute).
  public var value: MILValue?
  /// The nested blocks of a control-flow operation (`while_loop`'s condition and body, `cond`'s two
  /// branches), in the file's order; the importer runs those of the operations whose registry entry
  /// takes blocks (`while_loop`).
  public var blocks: [MILBlock] = []
  /// Whether the operation has nested blocks (control flow).
  public var hasBlocks: Bool { !blocks.isEmpty }

  public init(
    type: String, name: String, inputs: [String: [MILArgument]], outputs: [MILNamedType], value: MILValue? = nil
  ) {
    self.type = type
    self.name = name
    self.inputs = inputs
    self.outputs = outputs
    self.value = value
  }

  /// The bit width of a compressed constant this operation decompresses (0 when it is not one).
  public var quantizationBits: Int {
    switch type {
    case "constexpr_lut_to_dense":
      if case .value(let lut)? = inputs["lut"]?.first {
        // iOS 16: lut [2^n]; iOS 18: lut [..., 2^n, vector size].
        let entries = lut.type.shape.count == 1 ? lut.type.shape[0] : lut.type.shape.dropLast().last ?? 0
        return entries > 1 ? Int.bitWidth - (entries - 1).leadingZeroBitCount : 0
      }
      return 0
    case "constexpr_affine_dequantize":
      if case .value(let data)? = inputs["quantized_data"]?.first { return data.type.dataType.bits }
      return 0
    case "constexpr_blockwise_shift_scale":
      if case .value(let data)? = inputs["data"]?.first, !data.type.dataType.isFloat { return data.type.dataType.bits }
      return 0
    case "constexpr_sparse_to_dense":
      // A pruned weight: the zeros can be any share of it, so it takes the loosest rule (1 bit).
      return 1
    default: return 0
    }
  }
}

/// A block nested in an operation: its inputs (a loop's values in each iteration), its operations and the
/// names of its outputs.
public struct MILBlock: Sendable, Equatable {
  public var inputs: [MILNamedType]
  public var operations: [MILOperation]
  public var outputs: [String]

  public init(inputs: [MILNamedType], operations: [MILOperation], outputs: [String]) {
    self.inputs = inputs
    self.operations = operations
    self.outputs = outputs
  }
}

/// One argument of an operation parameter: a value name bound earlier, or an inline value.
public enum MILArgument: Sendable, Equatable {
  case name(String)
  case value(MILValue)
}
