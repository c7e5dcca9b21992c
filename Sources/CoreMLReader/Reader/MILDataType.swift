import CoreMLCommon

/// MIL scalar types, with the `DataType` enum's numbers from `Schemas/MIL.proto`.
public enum MILDataType: Int, Sendable, Equatable {
  case unused = 0
  case bool = 1
  case string = 2
  case float16 = 10
  case float32 = 11
  case float64 = 12
  case bfloat16 = 13
  case int8 = 21
  case int16 = 22
  case int32 = 23
  case int64 = 24
  case int4 = 25
  case uint8 = 31
  case uint16 = 32
  case uint32 = 33
  case uint64 = 34
  case uint4 = 35
  case uint2 = 36
  case uint1 = 37
  case uint6 = 38
  case uint3 = 39

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
