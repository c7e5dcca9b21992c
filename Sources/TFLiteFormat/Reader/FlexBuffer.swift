/// The options of a custom operator written as a FlexBuffers map (as MediaPipe's landmark operators write
/// theirs), read by hand with every offset checked against the bytes.
///
/// The layout (FlexBuffers' documentation, "FlexBuffers" in FlatBuffers' internals): numbers little endian;
/// the last byte is the root's byte width, the one before it the root's packed type (type << 2 | log2 of a
/// child's byte width), the root value just before those. Strings, keys, vectors and maps are stored as
/// unsigned offsets counted back from where the offset is stored. A vector is preceded by its size; an
/// untyped vector (and a map's values) is followed by one packed type per element; a map is preceded by its
/// keys vector's offset and byte width, then its size. Only one level is read: a map of numbers and vectors
/// of numbers; nothing recurses on the file's contents.
public struct FlexBufferMap: Sendable, Equatable {
  public enum Value: Sendable, Equatable {
    case int(Int64)
    case float(Double)
    /// A vector of integers (typed or untyped).
    case ints([Int64])
    /// Anything else (strings, nested maps, ...), by its FlexBuffers type code.
    case other(Int)
  }

  public var entries: [String: Value]

  public struct Failure: Error, Equatable, CustomStringConvertible {
    public var detail: String
    public var description: String { detail }
  }

  // FlexBuffers type codes.
  static let int = 1, uint = 2, float = 3, key = 4, indirectInt = 6, indirectUInt = 7, indirectFloat = 8, map = 9
  static let vector = 10, vectorInt = 11, vectorUInt = 12, bool = 26

  /// At most this many entries and vector elements are read (options, not data).
  static let limit = 1 << 16

  public init(_ bytes: [UInt8]) throws {
    let reader = Reader(bytes: bytes)
    guard bytes.count >= 3 else { throw Failure(detail: "\(bytes.count) bytes are too few for a FlexBuffer") }
    let rootWidth = Int(bytes[bytes.count - 1])
    let rootType = Int(bytes[bytes.count - 2])
    guard [1, 2, 4, 8].contains(rootWidth), bytes.count - 2 >= rootWidth else {
      throw Failure(detail: "root byte width \(rootWidth) in \(bytes.count) bytes")
    }
    guard rootType >> 2 == Self.map else { throw Failure(detail: "the root is of type \(rootType >> 2), not a map") }
    let rootAt = bytes.count - 2 - rootWidth
    let mapAt = try reader.target(rootAt, rootWidth)
    let width = 1 << (rootType & 3)
    let size = try reader.size(before: mapAt, width)
    let keysAt = try reader.target(mapAt - 3 * width, width)
    let keysWidth = try reader.uint(mapAt - 2 * width, width)
    guard [1, 2, 4, 8].contains(keysWidth) else { throw Failure(detail: "keys of byte width \(keysWidth)") }
    guard try reader.size(before: keysAt, Int(keysWidth)) == size else {
      throw Failure(detail: "a map of \(size) values with a different number of keys")
    }
    var entries: [String: Value] = [:]
    for i in 0..<size {
      let name = try reader.string(at: try reader.target(keysAt + i * Int(keysWidth), Int(keysWidth)))
      let packed = Int(try reader.uint(mapAt + size * width + i, 1))
      entries[name] = try reader.value(at: mapAt + i * width, width: width, packed: packed)
    }
    self.entries = entries
  }

  public subscript(_ key: String) -> Value? { entries[key] }

  struct Reader {
    let bytes: [UInt8]

    func check(_ at: Int, _ count: Int) throws {
      guard at >= 0, count >= 0, at <= bytes.count, bytes.count - at >= count else {
        throw Failure(detail: "\(count) bytes at offset \(at) run past the \(bytes.count)-byte options")
      }
    }

    func uint(_ at: Int, _ width: Int) throws -> UInt64 {
      try check(at, width)
      return (0..<width).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
    }

    func int(_ at: Int, _ width: Int) throws -> Int64 {
      let raw = try uint(at, width)
      let shift = UInt64(64 - 8 * width)
      return Int64(bitPattern: raw << shift) >> Int64(shift)
    }

    func float(_ at: Int, _ width: Int) throws -> Double {
      switch width {
      case 4: return Double(Float(bitPattern: UInt32(try uint(at, 4))))
      case 8: return Double(bitPattern: try uint(at, 8))
      default: throw Failure(detail: "a float of \(width) bytes")
      }
    }

    /// The position an offset of `width` bytes stored at `at` points back to.
    func target(_ at: Int, _ width: Int) throws -> Int {
      let offset = try uint(at, width)
      guard at >= 0, offset <= UInt64(at) else {
        throw Failure(detail: "offset \(offset) at \(at) points before the options")
      }
      return at - Int(offset)
    }

    /// The element count stored just before a vector.
    func size(before at: Int, _ width: Int) throws -> Int {
      let size = try uint(at - width, width)
      guard size <= UInt64(FlexBufferMap.limit), Int(size) <= bytes.count else {
        throw Failure(detail: "a vector of \(size) elements")
      }
      return Int(size)
    }

    func string(at: Int) throws -> String {
      guard at >= 0, at < bytes.count, let end = bytes[at...].firstIndex(of: 0) else {
        throw Failure(detail: "a key at \(at) without its terminating zero")
      }
      return String(decoding: bytes[at..<end], as: UTF8.self)
    }

    /// A map value or vector element of `width` bytes at `at` with packed type `packed`.
    func value(at: Int, width: Int, packed: Int) throws -> Value {
      let type = packed >> 2
      let childWidth = 1 << (packed & 3)
      switch type {
      case FlexBufferMap.int, FlexBufferMap.bool: return .int(try int(at, width))
      case FlexBufferMap.uint:
        let raw = try uint(at, width)
        guard raw <= UInt64(Int64.max) else { throw Failure(detail: "an unsigned value beyond 2^63") }
        return .int(Int64(raw))
      case FlexBufferMap.float: return .float(try float(at, width))
      case FlexBufferMap.indirectInt: return .int(try int(try target(at, width), childWidth))
      case FlexBufferMap.indirectUInt:
        let raw = try uint(try target(at, width), childWidth)
        guard raw <= UInt64(Int64.max) else { throw Failure(detail: "an unsigned value beyond 2^63") }
        return .int(Int64(raw))
      case FlexBufferMap.indirectFloat: return .float(try float(try target(at, width), childWidth))
      case FlexBufferMap.vectorInt, FlexBufferMap.vectorUInt:
        let start = try target(at, width)
        let count = try size(before: start, childWidth)
        return .ints(
          try (0..<count).map {
            type == FlexBufferMap.vectorInt
              ? try int(start + $0 * childWidth, childWidth)
              : Int64(clamping: try uint(start + $0 * childWidth, childWidth))
          })
      case FlexBufferMap.vector:
        let start = try target(at, width)
        let count = try size(before: start, childWidth)
        var values: [Int64] = []
        for i in 0..<count {
          let elementPacked = Int(try uint(start + count * childWidth + i, 1))
          guard case .int(let v) = try scalar(at: start + i * childWidth, width: childWidth, packed: elementPacked)
          else { return .other(type) }
          values.append(v)
        }
        return .ints(values)
      default: return .other(type)
      }
    }

    /// An element of an untyped vector: a number only (no further nesting).
    func scalar(at: Int, width: Int, packed: Int) throws -> Value {
      switch packed >> 2 {
      case FlexBufferMap.int, FlexBufferMap.uint, FlexBufferMap.float, FlexBufferMap.bool, FlexBufferMap.indirectInt,
        FlexBufferMap.indirectUInt, FlexBufferMap.indirectFloat:
        return try value(at: at, width: width, packed: packed)
      default: return .other(packed >> 2)
      }
    }
  }
}
