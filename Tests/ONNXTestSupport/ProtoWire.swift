/// A protobuf wire-format writer for building ONNX messages in tests, valid or deliberately not,
/// independent of the reader and of protobuf-c.
public struct ProtoWire {
  private(set) var bytes: [UInt8] = []

  public static func varint(_ value: UInt64) -> [UInt8] {
    var value = value
    var out: [UInt8] = []
    repeat {
      var byte = UInt8(value & 0x7F)
      value >>= 7
      if value != 0 { byte |= 0x80 }
      out.append(byte)
    } while value != 0
    return out
  }

  /// A varint field (negative numbers as their 64-bit two's complement, as protobuf writes int64).
  public mutating func int(_ field: UInt64, _ value: Int64) {
    bytes += Self.varint(field << 3) + Self.varint(UInt64(bitPattern: value))
  }

  public mutating func bytes(_ field: UInt64, _ body: [UInt8]) {
    bytes += Self.varint(field << 3 | 2) + Self.varint(UInt64(body.count)) + body
  }

  public mutating func string(_ field: UInt64, _ text: String) { bytes(field, Array(text.utf8)) }

  public mutating func float(_ field: UInt64, _ value: Float) {
    let bits = value.bitPattern
    bytes += Self.varint(field << 3 | 5) + (0..<4).map { UInt8(truncatingIfNeeded: bits >> (8 * $0)) }
  }

  /// A packed repeated varint field.
  public mutating func packed(_ field: UInt64, _ values: [Int64]) {
    bytes(field, values.flatMap { Self.varint(UInt64(bitPattern: $0)) })
  }

  /// A packed repeated float field.
  public mutating func packedFloats(_ field: UInt64, _ values: [Float]) {
    bytes(field, values.flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value.bitPattern >> (8 * $0)) } })
  }

  public static func message(_ build: (inout ProtoWire) -> Void) -> [UInt8] {
    var wire = ProtoWire()
    build(&wire)
    return wire.bytes
  }
}

/// Little-endian bytes of values, for raw_data.
public func littleEndian(_ values: [Float]) -> [UInt8] {
  values.flatMap { value in (0..<4).map { UInt8(truncatingIfNeeded: value.bitPattern >> (8 * $0)) } }
}
