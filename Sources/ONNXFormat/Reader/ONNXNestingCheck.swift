/// Walks a serialized ONNX message along its recursive fields (graphs in attributes, types in types)
/// before protobuf-c decodes it, refusing nesting deeper than `ONNXLimits.maxNestingDepth` (protobuf-c
/// recurses without a limit) and wire data that is cut off or malformed.
struct ONNXNestingCheck {
  /// The messages that can lead back to themselves, and which of their fields hold which.
  enum Message {
    case model, training, function, graph, node, attribute, tensor, sparseTensor, valueInfo, type, typeWrapper(field: UInt32)

    var children: [UInt32: Message] {
      switch self {
      case .model: return [7: .graph, 20: .training, 25: .function]
      case .training: return [1: .graph, 2: .graph]
      case .function: return [7: .node, 11: .attribute, 12: .valueInfo]
      case .graph: return [1: .node, 11: .valueInfo, 12: .valueInfo, 13: .valueInfo, 15: .sparseTensor]
      case .node: return [5: .attribute]
      case .attribute: return [6: .graph, 11: .graph, 14: .type, 15: .type, 22: .sparseTensor, 23: .sparseTensor]
      case .tensor, .sparseTensor: return [:]
      case .valueInfo: return [2: .type]
      // Sequence (4) and Optional (9) hold a TypeProto in field 1, Map (5) in field 2.
      case .type: return [4: .typeWrapper(field: 1), 5: .typeWrapper(field: 2), 9: .typeWrapper(field: 1)]
      case .typeWrapper(let field): return [field: .type]
      }
    }
  }

  enum Failure: Error {
    case malformed(String)
    case tooDeep
  }

  let bytes: UnsafeBufferPointer<UInt8>

  /// Checks the message in `range`, itself at nesting `depth`.
  func check(_ range: Range<Int>, as message: Message, depth: Int = 1) throws {
    guard depth <= ONNXLimits.maxNestingDepth else { throw Failure.tooDeep }
    let children = message.children
    var position = range.lowerBound
    while position < range.upperBound {
      let start = position
      let key = try varint(&position, end: range.upperBound)
      let number = key >> 3
      guard number != 0, number < 1 << 29 else { throw Failure.malformed("invalid field number \(number) at byte \(start)") }
      switch key & 7 {
      case 0: _ = try varint(&position, end: range.upperBound)
      case 1, 5:
        let size = key & 7 == 1 ? 8 : 4
        guard range.upperBound - position >= size else { throw Failure.malformed("field \(number) at byte \(start) is cut off") }
        position += size
      case 2:
        let length = try varint(&position, end: range.upperBound)
        guard length <= UInt64(range.upperBound - position) else {
          throw Failure.malformed("field \(number) at byte \(start) claims \(length) bytes, \(range.upperBound - position) are left in its message")
        }
        let body = position..<position + Int(length)
        if let child = children[UInt32(number)] { try check(body, as: child, depth: depth + 1) }
        position = body.upperBound
      default: throw Failure.malformed("field \(number) at byte \(start) has wire type \(key & 7), which ONNX does not use")
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
