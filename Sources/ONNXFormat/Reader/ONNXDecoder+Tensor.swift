import CProtobufC
import ModelIR
import ONNXSpec

extension ONNXDecoder {
  /// A dense tensor with its values decoded: from `raw_data`, an external file, or the repeated
  /// field for its type, whose length must match the dims exactly.
  func tensor(_ t: Onnx__TensorProto) throws -> ONNXTensor {
    let name = try text(t.name, "name")
    let dims = items(t.dims, t.n_dims).map { Int($0) }
    if let index = dims.firstIndex(where: { $0 < 0 }) {
      throw invalid("dims[\(index)] is \(dims[index]); sizes cannot be negative")
    }
    guard let count = GraphLimits.elementCount(dims) else {
      throw invalid("dims \(dims) hold more than \(ONNXLimits.maxElementCount) elements")
    }
    let type = try elementType(t.has_data_type, t.data_type, "data_type")
    guard type == .string || type.byteSize != nil else { throw unsupported("\(type.name) tensors are not read") }
    guard t.segment == nil else { throw unsupported("the tensor is one segment of a larger tensor (segment)") }
    let typed = [
      ("float_data", t.n_float_data), ("int32_data", t.n_int32_data), ("string_data", t.n_string_data),
      ("int64_data", t.n_int64_data), ("double_data", t.n_double_data), ("uint64_data", t.n_uint64_data),
    ].filter { $0.1 > 0 }
    let location = t.has_data_location != 0 ? t.data_location.rawValue : 0
    let storage: ONNXTensorStorage
    switch location {
    case 0:
      guard t.n_external_data == 0 else { throw invalid("external_data is set, but data_location is not EXTERNAL") }
      if t.has_raw_data != 0 {
        if let field = typed.first { throw invalid("both raw_data and \(field.0) are set") }
        guard let size = type.byteSize else {
          throw invalid("raw_data cannot hold STRING values (they belong in string_data)")
        }
        guard t.raw_data.len == count * size else {
          throw invalid(
            "raw_data holds \(t.raw_data.len) bytes; \(count) \(type.name) values (dims \(dims)) take \(count * size)")
        }
        storage = try decode(
          UnsafeRawBufferPointer(start: t.raw_data.data, count: t.raw_data.len), type: type, count: count)
      } else {
        storage = try typedValues(t, type: type, dims: dims, count: count, set: typed.map(\.0))
      }
    case 1:
      if t.has_raw_data != 0 || !typed.isEmpty {
        throw invalid(
          "data_location is EXTERNAL, but the tensor holds data in \(t.has_raw_data != 0 ? "raw_data" : typed[0].0)")
      }
      guard let size = type.byteSize else { throw invalid("STRING tensors cannot be stored externally") }
      let bytes = try externalData(t, byteCount: count * size)
      storage = try bytes.withUnsafeBytes { try decode($0, type: type, count: count) }
    default:
      throw invalid("data_location \(location) is neither DEFAULT (0) nor EXTERNAL (1)")
    }
    return ONNXTensor(name: name, dataType: type, dims: dims, storage: storage)
  }

  /// Values from the repeated field `type` keeps them in; `set` names the fields present.
  private func typedValues(_ t: Onnx__TensorProto, type: ONNXDataType, dims: [Int], count: Int, set: [String]) throws
    -> ONNXTensorStorage
  {
    let field: String
    switch type {
    case .float: field = "float_data"
    case .int64: field = "int64_data"
    case .double: field = "double_data"
    case .string: field = "string_data"
    case .uint32, .uint64: field = "uint64_data"
    default: field = "int32_data"
    }
    if let other = set.first(where: { $0 != field }) {
      throw invalid("\(other) is set on a \(type.name) tensor (its values belong in \(field) or raw_data)")
    }
    let held =
      set.isEmpty
      ? 0 : [t.n_float_data, t.n_int32_data, t.n_string_data, t.n_int64_data, t.n_double_data, t.n_uint64_data].max()!
    guard held == count else {
      throw invalid(
        held == 0
          ? "the tensor holds no data; dims \(dims) need \(count) values"
          : "\(field) holds \(held) values; dims \(dims) need \(count)")
    }
    /// int32_data narrowed to `T`, each value checked.
    func narrowed<T: FixedWidthInteger>(_: T.Type, _ range: ClosedRange<Int32>? = nil) throws -> [T] {
      try items(t.int32_data, t.n_int32_data).enumerated().map { index, value in
        let allowed = range ?? Int32(clamping: T.min)...Int32(clamping: T.max)
        guard allowed.contains(value), let narrow = T(exactly: value) else {
          throw invalid(
            "int32_data[\(index)] is \(value), outside \(type.name)'s \(allowed.lowerBound)...\(allowed.upperBound)")
        }
        return narrow
      }
    }
    switch type {
    case .float: return .float32(items(t.float_data, t.n_float_data))
    case .double: return .double(items(t.double_data, t.n_double_data))
    case .int64: return .int64(items(t.int64_data, t.n_int64_data))
    case .uint64: return .uint64(items(t.uint64_data, t.n_uint64_data))
    case .uint32:
      return .uint32(
        try items(t.uint64_data, t.n_uint64_data).enumerated().map { index, value in
          guard let narrow = UInt32(exactly: value) else {
            throw invalid("uint64_data[\(index)] is \(value), outside UINT32")
          }
          return narrow
        })
    case .int32: return .int32(items(t.int32_data, t.n_int32_data))
    case .int16: return .int16(try narrowed(Int16.self))
    case .int8: return .int8(try narrowed(Int8.self))
    case .uint16: return .uint16(try narrowed(UInt16.self))
    case .uint8: return .uint8(try narrowed(UInt8.self))
    case .bool: return .bool(try narrowed(UInt8.self, 0...1).map { $0 == 1 })
    case .float16: return .float16(try narrowed(UInt16.self).map(Float16.init(bitPattern:)))
    case .bfloat16: return .bfloat16(try narrowed(UInt16.self))
    case .string:
      return .string(try items(t.string_data, t.n_string_data).enumerated().map { try text($1, "string_data[\($0)]") })
    default: throw unsupported("\(type.name) tensors are not read")
    }
  }

  /// `count` fixed-width little-endian values of `type` from `raw` (which holds exactly that many bytes).
  func decode(_ raw: UnsafeRawBufferPointer, type: ONNXDataType, count: Int) throws -> ONNXTensorStorage {
    func copied<T>(_ zero: T) -> [T] {
      var values = [T](repeating: zero, count: count)
      values.withUnsafeMutableBytes { destination in
        guard destination.count > 0 else { return }
        destination.copyMemory(from: raw)
        #if _endian(big)
          let size = MemoryLayout<T>.size
          for start in stride(from: 0, to: destination.count, by: size) { destination[start..<start + size].reverse() }
        #endif
      }
      return values
    }
    switch type {
    case .float: return .float32(copied(Float(0)))
    case .double: return .double(copied(Double(0)))
    case .float16: return .float16(copied(Float16(0)))
    case .bfloat16: return .bfloat16(copied(UInt16(0)))
    case .int8: return .int8(copied(Int8(0)))
    case .int16: return .int16(copied(Int16(0)))
    case .int32: return .int32(copied(Int32(0)))
    case .int64: return .int64(copied(Int64(0)))
    case .uint8: return .uint8(copied(UInt8(0)))
    case .uint16: return .uint16(copied(UInt16(0)))
    case .uint32: return .uint32(copied(UInt32(0)))
    case .uint64: return .uint64(copied(UInt64(0)))
    case .bool:
      return .bool(
        try copied(UInt8(0)).enumerated().map { index, byte in
          guard byte <= 1 else { throw invalid("raw_data byte \(index) is \(byte); a BOOL is 0 or 1") }
          return byte == 1
        })
    default: throw unsupported("\(type.name) tensors are not read")
    }
  }
}
