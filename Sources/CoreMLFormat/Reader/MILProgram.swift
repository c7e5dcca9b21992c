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

  /// The opset's number (5 for `CoreML5`), or nil for an unknown opset name.
  public var opsetVersion: Int? {
    guard opset.hasPrefix("CoreML"), let number = Int(opset.dropFirst(6)), (5...99).contains(number) else { return nil }
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
  public func producer(of name: String) -> MILOperation? { operations.first { $0.outputs.contains { $0.name == name } } }
}

/// A named, typed value: a function input or an operation output.
public struct MILNamedType: Sendable, Equatable {
  public var name: String
  public var type: MILTensorType

  public init(name: String, type: MILTensorType) {
    self.name = name
    self.type = type
  }
}

/// A MIL tensor type. Unknown dimensions are -1; a scalar has rank 0.
public struct MILTensorType: Sendable, Equatable {
  public var dataType: MILDataType
  public var shape: [Int]
  /// False for list, tuple and dictionary types (which the reader records but the importer does not run).
  public var isTensor: Bool = true

  public init(dataType: MILDataType, shape: [Int], isTensor: Bool = true) {
    self.dataType = dataType
    self.shape = shape
    self.isTensor = isTensor
  }
}

/// MIL scalar types, with the `DataType` enum's numbers from `Schemas/MIL.proto`.
public enum MILDataType: Int, Sendable, Equatable {
  case unused = 0, bool = 1, string = 2, float16 = 10, float32 = 11, float64 = 12, bfloat16 = 13
  case int8 = 21, int16 = 22, int32 = 23, int64 = 24, int4 = 25
  case uint8 = 31, uint16 = 32, uint32 = 33, uint64 = 34, uint4 = 35, uint2 = 36, uint1 = 37, uint6 = 38, uint3 = 39

  /// Bits per element in packed storage (0 for strings and unused).
  public var bits: Int {
    switch self {
    case .unused, .string: return 0
    case .bool, .int8, .uint8: return 8
    case .float16, .bfloat16, .int16, .uint16: return 16
    case .float32, .int32, .uint32: return 32
    case .float64, .int64, .uint64: return 64
    case .int4, .uint4: return 4
    case .uint1: return 1
    case .uint2: return 2
    case .uint3: return 3
    case .uint6: return 6
    }
  }

  public var isFloat: Bool { self == .float16 || self == .float32 || self == .float64 || self == .bfloat16 }
  public var isSigned: Bool { [.int4, .int8, .int16, .int32, .int64].contains(self) }
}
