import CoreMLCommon

/// A Swift view of an ML Program's `main` function: its inputs, operations (in order) and outputs.
///
/// Constant values (immediate or read from `weight.bin`) are decoded into `MILValue`s by the reader, with
/// every size checked against the declared tensor type.
public struct MILProgram: Sendable, Equatable {
  /// The function's opset (`CoreML5` for iOS 15, `CoreML6` for iOS 16, ... `CoreML8` for iOS 18).
  public var opset: String
  public var inputs: [MILNamedType]
  public var operations: [MILOperation]
  /// The names of the block's output values.
  public var outputs: [String]

  public init(opset: String, inputs: [MILNamedType], operations: [MILOperation], outputs: [String]) {
    self.opset = opset
    self.inputs = inputs
    self.operations = operations
    self.outputs = outputs
  }

  /// The opsets this reader knows: `CoreML5` (iOS 15) to `CoreML9` (iOS 26); a later one may define
  /// operations differently, so it is not read as an earlier one.
  public static let knownOpsets = 5...9

  /// The opset's number (5 for `CoreML5`), or nil for an unknown opset name.
  public var opsetVersion: Int? {
    guard opset.hasPrefix("CoreML"), let number = Int(opset.dropFirst(6)), Self.knownOpsets.contains(number),
      "CoreML\(number)" == opset
    else { return nil }
    return number
  }

  /// Whether the program computes in float16: some operation casts to fp16 or produces an fp16 tensor.
  public var usesFloat16: Bool {
    operations.contains { op in op.outputs.contains { $0.type.dataType == .float16 } }
  }

  /// The smallest bit width of compressed (palettized or linearly quantized) constants, or 0 when none are.
  public var quantizationBits: Int {
    operations.map(\.quantizationBits).filter { $0 > 0 }.min() ?? 0
  }

  /// The operation producing the value `name`.
  public func producer(of name: String) -> MILOperation? {
    operations.first { $0.outputs.contains { $0.name == name } }
  }
}
