import ONNXFormat
import ONNXTestSupport
import Testing

/// The typed storage of each element type, and the `[Float]` / `[Int]` accessors' exactness.
@Suite struct TensorValueTests {
  func tensor(_ dataType: Int64, dims: [Int64], raw: [UInt8]? = nil, extra: (inout ProtoWire) -> Void = { _ in }) throws
    -> ONNXTensor
  {
    try ONNXTensorReader.read(bytes: ONNXProtos.tensor(dims: dims, dataType: dataType, raw: raw, extra: extra))
  }

  @Test func rawDataOfEachType() throws {
    #expect(
      try tensor(11, dims: [1], raw: (0..<8).map { UInt8(truncatingIfNeeded: (1.5 as Double).bitPattern >> (8 * $0)) })
        .storage == .double([1.5]))
    #expect(try tensor(3, dims: [2], raw: [0xFF, 0x7F]).storage == .int8([-1, 127]))
    #expect(try tensor(5, dims: [1], raw: [0x00, 0x80]).storage == .int16([-32768]))
    #expect(try tensor(6, dims: [1], raw: [1, 0, 0, 0x80]).storage == .int32([Int32.min + 1]))
    #expect(try tensor(7, dims: [1], raw: [0xFE] + [UInt8](repeating: 0xFF, count: 7)).storage == .int64([-2]))
    #expect(try tensor(2, dims: [1], raw: [200]).storage == .uint8([200]))
    #expect(try tensor(4, dims: [1], raw: [0x34, 0x12]).storage == .uint16([0x1234]))
    #expect(try tensor(12, dims: [1], raw: [0, 0, 0, 0x80]).storage == .uint32([0x8000_0000]))
    #expect(try tensor(13, dims: [1], raw: [UInt8](repeating: 0xFF, count: 8)).storage == .uint64([.max]))
    #expect(try tensor(9, dims: [3], raw: [1, 0, 1]).storage == .bool([true, false, true]))
    // 0x3C00 is 1.0 in half precision, 0x3F80 is 1.0 in bfloat16.
    #expect(try tensor(10, dims: [1], raw: [0x00, 0x3C]).floatValues() == [1])
    #expect(try tensor(16, dims: [2], raw: [0x80, 0x3F, 0x40, 0xC0]).floatValues() == [1, -3])
    // Scalars (no dims) hold one value; a zero dimension holds none.
    #expect(try tensor(1, dims: [], raw: littleEndian([7])).floatValues() == [7])
    #expect(try tensor(1, dims: [3, 0], raw: []).elementCount == 0)
  }

  @Test func typedFields() throws {
    #expect(try tensor(10, dims: [2]) { $0.packed(5, [0x3C00, 0xC000]) }.floatValues() == [1, -2])
    #expect(try tensor(9, dims: [2]) { $0.packed(5, [0, 1]) }.storage == .bool([false, true]))
    #expect(try tensor(12, dims: [1]) { $0.packed(11, [4_000_000_000]) }.storage == .uint32([4_000_000_000]))
    #expect(throws: ONNXFormatError.self) { try tensor(12, dims: [1]) { $0.packed(11, [1 << 33]) } }
    #expect(throws: ONNXFormatError.self) { try tensor(10, dims: [1]) { $0.packed(5, [70_000]) } }
    #expect(try tensor(7, dims: [2]) { $0.packed(7, [-5, 1 << 40]) }.intValues() == [-5, 1 << 40])
    #expect(
      try tensor(8, dims: [2]) {
        $0.string(6, "a")
        $0.string(6, "β")
      }.storage == .string(["a", "β"]))
    #expect(throws: ONNXFormatError.self) { try tensor(8, dims: [1]) { $0.bytes(6, [0xFF, 0xFE]) } }
    #expect(throws: ONNXFormatError.self) { try tensor(8, dims: [1], raw: [0x61]) }
  }

  @Test func conversionsAreExact() throws {
    let double = ONNXTensor(name: "d", dataType: .double, dims: [3], storage: .double([0.5, .infinity, 0.1]))
    #expect(
      throws: ONNXFormatError.notRepresentable(
        tensor: "d", detail: "value 2 (0.1) of a DOUBLE tensor is not exactly representable as Float")
    ) {
      try double.floatValues()
    }
    #expect(try ONNXTensor(name: "n", dataType: .double, dims: [1], storage: .double([.nan])).floatValues()[0].isNaN)
    let int64 = ONNXTensor(name: "i", dataType: .int64, dims: [2], storage: .int64([1 << 24, (1 << 24) + 1]))
    #expect(throws: ONNXFormatError.self) { try int64.floatValues() }
    #expect(try int64.intValues() == [1 << 24, (1 << 24) + 1])
    let big = ONNXTensor(name: "u", dataType: .uint64, dims: [1], storage: .uint64([.max]))
    #expect(
      throws: ONNXFormatError.notRepresentable(
        tensor: "u", detail: "value 0 (18446744073709551615) of a UINT64 tensor is not exactly representable as Int")
    ) {
      try big.intValues()
    }
    #expect(throws: ONNXFormatError.notRepresentable(tensor: "f", detail: "a FLOAT tensor is not an integer tensor")) {
      try ONNXTensor(name: "f", dataType: .float, dims: [1], storage: .float32([1])).intValues()
    }
    #expect(throws: ONNXFormatError.self) {
      try ONNXTensor(name: "s", dataType: .string, dims: [1], storage: .string(["x"])).floatValues()
    }
  }
}
