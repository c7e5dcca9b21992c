import CProtobufC

/// Walks serialized protobuf bytes along the message-typed fields that protobuf-c's generated
/// descriptors name, before protobuf-c unpacks them (the Core ML and ONNX readers both): protobuf-c
/// recurses once per nested message with no limit, so a file nesting `cond` blocks, loop layers or
/// graphs in attributes a hundred thousand deep would overflow the stack. Messages nested deeper than
/// `maximumDepth` are refused, as are wire data that is cut off or malformed, and a string field holding
/// a NUL character (protobuf-c hands strings on as C strings, so `weight.bin\0.txt` would be read as
/// `weight.bin`). The walk visits each byte once (a nested message's bytes are walked by the level that
/// holds it and skipped by its parent), so its cost is linear in the file's size.
public struct ProtobufNesting {
  /// Google's protobuf parsers (Core ML's among them) refuse messages nested more than 100 deep by
  /// default; a file deeper than that cannot be loaded on a device either.
  public static let defaultDepth = 100

  public enum Failure: Error, Equatable {
    case malformed(String)
    case tooDeep
    /// A string field (named) holds a NUL character.
    case nulInString(String)
  }

  let bytes: UnsafeBufferPointer<UInt8>
  let maximumDepth: Int

  public init(bytes: UnsafeBufferPointer<UInt8>, maximumDepth: Int = ProtobufNesting.defaultDepth) {
    self.bytes = bytes
    self.maximumDepth = maximumDepth
  }

  /// Checks the message in `range` whose descriptor is `descriptor`, itself at nesting `depth`.
  public func check(_ range: Range<Int>, descriptor: UnsafePointer<ProtobufCMessageDescriptor>, depth: Int = 1) throws {
    guard depth <= maximumDepth else { throw Failure.tooDeep }
    var position = range.lowerBound
    while position < range.upperBound {
      let start = position
      let key = try varint(&position, end: range.upperBound)
      let number = key >> 3
      guard number != 0, number < 1 << 29 else {
        throw Failure.malformed("invalid field number \(number) at byte \(start)")
      }
      switch key & 7 {
      case 0: _ = try varint(&position, end: range.upperBound)
      case 1, 5:
        let size = key & 7 == 1 ? 8 : 4
        guard range.upperBound - position >= size else {
          throw Failure.malformed("field \(number) at byte \(start) is cut off")
        }
        position += size
      case 2:
        let length = try varint(&position, end: range.upperBound)
        guard length <= UInt64(range.upperBound - position) else {
          throw Failure.malformed(
            "field \(number) at byte \(start) claims \(length) bytes, \(range.upperBound - position) are left in its message"
          )
        }
        let body = position..<position + Int(length)
        if let field = protobuf_c_message_descriptor_get_field(descriptor, UInt32(number)) {
          if field.pointee.type == PROTOBUF_C_TYPE_MESSAGE,
            let child = field.pointee.descriptor?.assumingMemoryBound(to: ProtobufCMessageDescriptor.self)
          {
            try check(body, descriptor: child, depth: depth + 1)
          } else if field.pointee.type == PROTOBUF_C_TYPE_STRING, bytes[body].contains(0) {
            throw Failure.nulInString(field.pointee.name.map { String(cString: $0) } ?? "field \(number)")
          }
        }
        position = body.upperBound
      default:
        throw Failure.malformed(
          "field \(number) at byte \(start) has wire type \(key & 7), which these formats do not use")
      }
    }
  }

  /// A varint of at most 10 bytes, all before `end`.
  private func varint(_ position: inout Int, end: Int) throws -> UInt64 {
    var value: UInt64 = 0
    for index in 0..<10 {
      guard position < end else { throw Failure.malformed("a number is cut off at byte \(position)") }
      let byte = bytes[position]
      position += 1
      value |= UInt64(byte & 0x7F) << (7 * UInt64(index))
      if byte & 0x80 == 0 { return value }
    }
    throw Failure.malformed("a number longer than 10 bytes ends at byte \(position - 1)")
  }
}
