extension ONNXTensor {
  /// The values as `Float`: float32 as is, float16 and bfloat16 widened, doubles and integers
  /// converted only when exact (a double NaN stays NaN). Throws `notRepresentable` naming the first
  /// value that would change, and for strings.
  public func floatValues() throws -> [Float] {
    func exact<T: BinaryInteger>(_ values: [T]) throws -> [Float] {
      try values.enumerated().map { index, value in
        guard let float = Float(exactly: value) else { throw inexact(index, "\(value)", "Float") }
        return float
      }
    }
    switch storage {
    case .float32(let v): return v
    case .float16(let v): return v.map(Float.init)
    case .bfloat16(let v): return v.map { Float(bitPattern: UInt32($0) << 16) }
    case .double(let v):
      return try v.enumerated().map { index, value in
        if value.isNaN { return .nan }
        guard let float = Float(exactly: value) else { throw inexact(index, "\(value)", "Float") }
        return float
      }
    case .int8(let v): return try exact(v)
    case .int16(let v): return try exact(v)
    case .int32(let v): return try exact(v)
    case .int64(let v): return try exact(v)
    case .uint8(let v): return try exact(v)
    case .uint16(let v): return try exact(v)
    case .uint32(let v): return try exact(v)
    case .uint64(let v): return try exact(v)
    case .bool(let v): return v.map { $0 ? 1 : 0 }
    case .string: throw ONNXFormatError.notRepresentable(tensor: name, detail: "a STRING tensor has no numeric values")
    }
  }

  /// The values as the IR's float32: doubles rounded to the nearest float (what any float32 model
  /// computes with; one beyond float32's range throws `notRepresentable`), everything else as
  /// `floatValues()`.
  public func roundedFloatValues() throws -> [Float] {
    guard case .double(let v) = storage else { return try floatValues() }
    return try v.enumerated().map { index, value in
      let float = Float(value)
      guard float.isFinite || !value.isFinite else { throw inexact(index, "\(value)", "Float") }
      return float
    }
  }

  /// The values of an integer (or boolean, as 0 and 1) tensor as `Int`; a UINT64 value beyond
  /// `Int.max` throws `notRepresentable`, and so does a floating-point or string tensor.
  public func intValues() throws -> [Int] {
    switch storage {
    case .int8(let v): return v.map(Int.init)
    case .int16(let v): return v.map(Int.init)
    case .int32(let v): return v.map(Int.init)
    case .int64(let v): return v.map(Int.init)
    case .uint8(let v): return v.map(Int.init)
    case .uint16(let v): return v.map(Int.init)
    case .uint32(let v): return v.map(Int.init)
    case .uint64(let v):
      return try v.enumerated().map { index, value in
        guard let int = Int(exactly: value) else { throw inexact(index, "\(value)", "Int") }
        return int
      }
    case .bool(let v): return v.map { $0 ? 1 : 0 }
    case .float32, .float16, .bfloat16, .double, .string:
      throw ONNXFormatError.notRepresentable(tensor: name, detail: "a \(dataType.name) tensor is not an integer tensor")
    }
  }

  private func inexact(_ index: Int, _ value: String, _ type: String) -> ONNXFormatError {
    .notRepresentable(
      tensor: name,
      detail: "value \(index) (\(value)) of a \(dataType.name) tensor is not exactly representable as \(type)")
  }
}
