import CoreMLCommon

/// A bounds-checked reader of the protobuf wire format, for the parts of a Core ML file that our generated
/// schema leaves out (see `CoreMLModelOutline`).
///
/// Every length and number comes from the file and is checked against the bytes left before use: a varint
/// has at most 10 bytes, a length-delimited field must fit in its message, groups (wire types 3 and 4, which
/// Core ML never uses) and field number 0 are errors. Each call reads one message level; nesting depth is
/// the caller's to limit.
struct ProtobufWire {
  /// A field's value as the wire carries it.
  enum Value: Equatable {
    case varint(UInt64)
    case fixed64(UInt64)
    /// A length-delimited field: the range of its bytes in `bytes`.
    case bytes(Range<Int>)
    case fixed32(UInt32)
  }

  struct Field: Equatable {
    var number: UInt32
    var value: Value
  }

  /// What is wrong with the bytes, and at which byte.
  struct Failure: Error, Equatable {
    var detail: String
  }

  let bytes: [UInt8]

  /// The fields of the message in `range`, in file order.
  func fields(in range: Range<Int>) throws -> [Field] {
    guard range.lowerBound >= 0, range.upperBound <= bytes.count else {
      throw Failure(detail: "message at \(range) lies outside the \(bytes.count)-byte file")
    }
    var fields: [Field] = []
    var position = range.lowerBound
    while position < range.upperBound {
      let start = position
      let key = try varint(&position, end: range.upperBound)
      guard key >> 3 < 1 << 29, key >> 3 != 0 else {  // protobuf field numbers are 1 ..< 2^29
        throw Failure(detail: "invalid field number \(key >> 3) at byte \(start)")
      }
      let number = UInt32(key >> 3)
      switch key & 7 {
      case 0:
        fields.append(.init(number: number, value: .varint(try varint(&position, end: range.upperBound))))
      case 1:
        guard range.upperBound - position >= 8 else {
          throw Failure(detail: "field \(number) at byte \(start): 8-byte value cut off")
        }
        var value: UInt64 = 0
        for i in 0..<8 { value |= UInt64(bytes[position + i]) << (8 * UInt64(i)) }
        position += 8
        fields.append(.init(number: number, value: .fixed64(value)))
      case 2:
        let length = try varint(&position, end: range.upperBound)
        guard length <= UInt64(range.upperBound - position) else {
          throw Failure(
            detail:
              "field \(number) at byte \(start) claims \(length) bytes, \(range.upperBound - position) left in its message"
          )
        }
        fields.append(.init(number: number, value: .bytes(position..<position + Int(length))))
        position += Int(length)
      case 5:
        guard range.upperBound - position >= 4 else {
          throw Failure(detail: "field \(number) at byte \(start): 4-byte value cut off")
        }
        var value: UInt32 = 0
        for i in 0..<4 { value |= UInt32(bytes[position + i]) << (8 * UInt32(i)) }
        position += 4
        fields.append(.init(number: number, value: .fixed32(value)))
      default:
        throw Failure(
          detail: "field \(number) at byte \(start) has wire type \(key & 7), which Core ML files do not use")
      }
    }
    return fields
  }

  /// Reads a varint at `position` (at most 10 bytes, all before `end`) and moves past it.
  func varint(_ position: inout Int, end: Int) throws -> UInt64 {
    var value: UInt64 = 0
    for index in 0..<10 {
      guard position < end else { throw Failure(detail: "varint cut off at byte \(position)") }
      let byte = bytes[position]
      position += 1
      // The tenth byte holds only the top bit of a 64-bit value.
      guard index < 9 || byte <= 1 else {
        throw Failure(detail: "varint longer than 64 bits ending at byte \(position - 1)")
      }
      value |= UInt64(byte & 0x7F) << (7 * UInt64(index))
      if byte & 0x80 == 0 { return value }
    }
    throw Failure(detail: "varint longer than 10 bytes ending at byte \(position - 1)")
  }

  /// A length-delimited field's bytes as UTF-8 text (invalid sequences replaced).
  func text(_ range: Range<Int>) -> String { String(decoding: bytes[range], as: UTF8.self) }

  /// A repeated integer field's values: packed (one length-delimited run of varints) or one varint per field.
  func integers(_ value: Value) throws -> [UInt64] {
    switch value {
    case .varint(let v): return [v]
    case .bytes(let range):
      var values: [UInt64] = []
      var position = range.lowerBound
      while position < range.upperBound { values.append(try varint(&position, end: range.upperBound)) }
      return values
    default: throw Failure(detail: "an integer field has a fixed-width value")
    }
  }
}
