/// An ONNX tensor's values, decoded into the Swift type of its element type (row-major order).
public enum ONNXTensorStorage: Equatable, Sendable {
  case float32([Float])
  case float16([Float16])
  /// Bit patterns: the top 16 bits of the float32 each value rounds.
  case bfloat16([UInt16])
  case double([Double])
  case int8([Int8])
  case int16([Int16])
  case int32([Int32])
  case int64([Int64])
  case uint8([UInt8])
  case uint16([UInt16])
  case uint32([UInt32])
  case uint64([UInt64])
  case bool([Bool])
  /// UTF-8 checked.
  case string([String])

  /// How many values are held.
  public var count: Int {
    switch self {
    case .float32(let v): return v.count
    case .float16(let v): return v.count
    case .bfloat16(let v): return v.count
    case .double(let v): return v.count
    case .int8(let v): return v.count
    case .int16(let v): return v.count
    case .int32(let v): return v.count
    case .int64(let v): return v.count
    case .uint8(let v): return v.count
    case .uint16(let v): return v.count
    case .uint32(let v): return v.count
    case .uint64(let v): return v.count
    case .bool(let v): return v.count
    case .string(let v): return v.count
    }
  }
}
