/// An ONNX element type (`TensorProto.DataType`), by its number in the file.
public enum ONNXDataType: Int, CaseIterable, Equatable, Hashable, Sendable {
  case float = 1
  case uint8 = 2
  case int8 = 3
  case uint16 = 4
  case int16 = 5
  case int32 = 6
  case int64 = 7
  case string = 8
  case bool = 9
  case float16 = 10
  case double = 11
  case uint32 = 12
  case uint64 = 13
  case complex64 = 14
  case complex128 = 15
  case bfloat16 = 16
  case float8e4m3fn = 17
  case float8e4m3fnuz = 18
  case float8e5m2 = 19
  case float8e5m2fnuz = 20
  case uint4 = 21
  case int4 = 22

  /// The name the ONNX specification uses ("FLOAT", "INT64", ...).
  public var name: String {
    switch self {
    case .float: return "FLOAT"
    case .uint8: return "UINT8"
    case .int8: return "INT8"
    case .uint16: return "UINT16"
    case .int16: return "INT16"
    case .int32: return "INT32"
    case .int64: return "INT64"
    case .string: return "STRING"
    case .bool: return "BOOL"
    case .float16: return "FLOAT16"
    case .double: return "DOUBLE"
    case .uint32: return "UINT32"
    case .uint64: return "UINT64"
    case .complex64: return "COMPLEX64"
    case .complex128: return "COMPLEX128"
    case .bfloat16: return "BFLOAT16"
    case .float8e4m3fn: return "FLOAT8E4M3FN"
    case .float8e4m3fnuz: return "FLOAT8E4M3FNUZ"
    case .float8e5m2: return "FLOAT8E5M2"
    case .float8e5m2fnuz: return "FLOAT8E5M2FNUZ"
    case .uint4: return "UINT4"
    case .int4: return "INT4"
    }
  }

  /// Bytes per element in `raw_data` for the types the reader decodes; nil for strings and for the
  /// types it does not decode (complex, 8-bit and 4-bit floats and integers).
  public var byteSize: Int? {
    switch self {
    case .bool, .int8, .uint8: return 1
    case .int16, .uint16, .float16, .bfloat16: return 2
    case .float, .int32, .uint32: return 4
    case .double, .int64, .uint64: return 8
    case .string, .complex64, .complex128, .float8e4m3fn, .float8e4m3fnuz, .float8e5m2, .float8e5m2fnuz, .uint4, .int4:
      return nil
    }
  }

  /// Whether the values are integers (booleans included).
  public var isInteger: Bool {
    switch self {
    case .bool, .int8, .uint8, .int16, .uint16, .int32, .uint32, .int64, .uint64, .int4, .uint4: return true
    default: return false
    }
  }
}
