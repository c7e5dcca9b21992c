/// A FlatBuffer read by hand, every offset and length checked against the bytes before use.
///
/// The binary layout (FlatBuffers' documentation, "Internals"): all numbers little endian; at byte 0 the
/// `uoffset` (u32) of the root table; a table starts with an `soffset` (i32) whose subtraction from the
/// table's position gives its vtable; a vtable is `u16` vtable size, `u16` table size, then one `u16` per
/// field (the field's offset inside the table, 0 when absent: the default applies). Offsets to tables,
/// vectors and strings are `u32`s relative to where they are stored; a vector is a `u32` count then its
/// elements; a string a `u32` length, its bytes and a NUL. Nothing here recurses on the file's contents.
public struct FlatBuffer: Sendable {
  public let bytes: [UInt8]
  /// For errors: the file read.
  public let path: String

  public init(bytes: [UInt8], path: String) {
    self.bytes = bytes
    self.path = path
  }

  public struct Failure: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var field: String
    public var detail: String
    public var description: String { "\(path): \(field): \(detail)" }
  }

  func fail(_ field: String, _ detail: String) -> Failure { Failure(path: path, field: field, detail: detail) }

  /// `count` bytes at `position` lie inside the buffer.
  func check(_ position: Int, _ count: Int, _ field: String) throws {
    guard position >= 0, count >= 0, position <= bytes.count, bytes.count - position >= count else {
      throw fail(field, "\(count) bytes at offset \(position) run past the \(bytes.count)-byte file")
    }
  }

  func u8(_ at: Int, _ field: String) throws -> UInt8 {
    try check(at, 1, field)
    return bytes[at]
  }

  func u16(_ at: Int, _ field: String) throws -> UInt16 {
    try check(at, 2, field)
    return UInt16(bytes[at]) | UInt16(bytes[at + 1]) << 8
  }

  func u32(_ at: Int, _ field: String) throws -> UInt32 {
    try check(at, 4, field)
    return (0..<4).reduce(UInt32(0)) { $0 | UInt32(bytes[at + $1]) << (8 * $1) }
  }

  func u64(_ at: Int, _ field: String) throws -> UInt64 {
    try check(at, 8, field)
    return (0..<8).reduce(UInt64(0)) { $0 | UInt64(bytes[at + $1]) << (8 * $1) }
  }

  /// The position an `uoffset` stored at `at` points to.
  func follow(_ at: Int, _ field: String) throws -> Int {
    let offset = Int(try u32(at, field))
    let (target, overflow) = at.addingReportingOverflow(offset)
    guard !overflow, target < bytes.count else {
      throw fail(field, "offset \(offset) at \(at) points past the \(bytes.count)-byte file")
    }
    return target
  }

  /// The root table.
  public func root() throws -> FlatTable {
    guard bytes.count >= 8 else { throw fail("root", "\(bytes.count) bytes are too few for a FlatBuffer") }
    return try table(at: try follow(0, "root"), "root")
  }

  /// The four bytes after the root offset (the file identifier), as text.
  public var identifier: String? {
    guard bytes.count >= 8 else { return nil }
    return String(decoding: bytes[4..<8], as: UTF8.self)
  }

  /// The table at `position`, its vtable checked.
  func table(at position: Int, _ field: String) throws -> FlatTable {
    let soffset = Int(Int32(bitPattern: try u32(position, field)))
    let (vtable, overflow) = position.subtractingReportingOverflow(soffset)
    guard !overflow, vtable >= 0 else { throw fail(field, "the table at \(position) has no vtable inside the file") }
    let vtableSize = Int(try u16(vtable, field))
    let tableSize = Int(try u16(vtable + 2, field))
    guard vtableSize >= 4, vtableSize % 2 == 0 else {
      throw fail(field, "the vtable at \(vtable) declares \(vtableSize) bytes")
    }
    try check(vtable, vtableSize, field)
    try check(position, tableSize, field)
    return FlatTable(buffer: self, position: position, vtable: vtable, slots: (vtableSize - 4) / 2, size: tableSize)
  }
}

/// A table of a `FlatBuffer`: its fields by vtable slot (declaration order; a union takes two slots).
public struct FlatTable: Sendable {
  let buffer: FlatBuffer
  let position: Int
  let vtable: Int
  let slots: Int
  let size: Int

  /// Where field `slot` is stored, or nil when the table leaves it out.
  func field(_ slot: Int, _ name: String, width: Int) throws -> Int? {
    guard slot < slots else { return nil }
    let offset = Int(try buffer.u16(vtable + 4 + 2 * slot, name))
    guard offset != 0 else { return nil }
    guard offset + width <= size else {
      throw buffer.fail(name, "field at \(offset) of a \(size)-byte table")
    }
    return position + offset
  }

  public func u8(_ slot: Int, _ name: String, default value: UInt8 = 0) throws -> UInt8 {
    guard let at = try field(slot, name, width: 1) else { return value }
    return try buffer.u8(at, name)
  }

  public func bool(_ slot: Int, _ name: String, default value: Bool = false) throws -> Bool {
    try u8(slot, name, default: value ? 1 : 0) != 0
  }

  public func i8(_ slot: Int, _ name: String, default value: Int8 = 0) throws -> Int8 {
    Int8(bitPattern: try u8(slot, name, default: UInt8(bitPattern: value)))
  }

  public func i32(_ slot: Int, _ name: String, default value: Int32 = 0) throws -> Int32 {
    guard let at = try field(slot, name, width: 4) else { return value }
    return Int32(bitPattern: try buffer.u32(at, name))
  }

  public func u32(_ slot: Int, _ name: String, default value: UInt32 = 0) throws -> UInt32 {
    guard let at = try field(slot, name, width: 4) else { return value }
    return try buffer.u32(at, name)
  }

  public func u64(_ slot: Int, _ name: String, default value: UInt64 = 0) throws -> UInt64 {
    guard let at = try field(slot, name, width: 8) else { return value }
    return try buffer.u64(at, name)
  }

  public func f32(_ slot: Int, _ name: String, default value: Float = 0) throws -> Float {
    guard let at = try field(slot, name, width: 4) else { return value }
    return Float(bitPattern: try buffer.u32(at, name))
  }

  /// The table field `slot` refers to.
  public func table(_ slot: Int, _ name: String) throws -> FlatTable? {
    guard let at = try field(slot, name, width: 4) else { return nil }
    return try buffer.table(at: try buffer.follow(at, name), name)
  }

  public func string(_ slot: Int, _ name: String) throws -> String? {
    guard let at = try field(slot, name, width: 4) else { return nil }
    let start = try buffer.follow(at, name)
    let length = Int(try buffer.u32(start, name))
    try buffer.check(start + 4, length, name)
    return String(decoding: buffer.bytes[(start + 4)..<(start + 4 + length)], as: UTF8.self)
  }

  /// The vector field `slot` refers to, its elements `elementSize` bytes each (4 for offsets).
  public func vector(_ slot: Int, _ name: String, elementSize: Int) throws -> FlatVector? {
    guard let at = try field(slot, name, width: 4) else { return nil }
    let start = try buffer.follow(at, name)
    let count = Int(try buffer.u32(start, name))
    let (bytes, overflow) = count.multipliedReportingOverflow(by: elementSize)
    guard !overflow else { throw buffer.fail(name, "a vector of \(count) elements") }
    try buffer.check(start + 4, bytes, name)
    return FlatVector(buffer: buffer, start: start + 4, count: count, elementSize: elementSize, name: name)
  }

  public func tables(_ slot: Int, _ name: String) throws -> [FlatTable] {
    guard let vector = try vector(slot, name, elementSize: 4) else { return [] }
    return try (0..<vector.count).map { try vector.table($0) }
  }

  public func strings(_ slot: Int, _ name: String) throws -> [String] {
    guard let vector = try vector(slot, name, elementSize: 4) else { return [] }
    return try (0..<vector.count).map { try vector.string($0) }
  }

  public func int32s(_ slot: Int, _ name: String) throws -> [Int32]? {
    guard let vector = try vector(slot, name, elementSize: 4) else { return nil }
    return try (0..<vector.count).map { Int32(bitPattern: try buffer.u32(vector.start + 4 * $0, name)) }
  }

  public func int64s(_ slot: Int, _ name: String) throws -> [Int64]? {
    guard let vector = try vector(slot, name, elementSize: 8) else { return nil }
    return try (0..<vector.count).map { Int64(bitPattern: try buffer.u64(vector.start + 8 * $0, name)) }
  }

  public func floats(_ slot: Int, _ name: String) throws -> [Float]? {
    guard let vector = try vector(slot, name, elementSize: 4) else { return nil }
    return try (0..<vector.count).map { Float(bitPattern: try buffer.u32(vector.start + 4 * $0, name)) }
  }

  /// A byte vector as the range of the file's bytes it occupies.
  public func byteRange(_ slot: Int, _ name: String) throws -> Range<Int>? {
    guard let vector = try vector(slot, name, elementSize: 1) else { return nil }
    return vector.start..<(vector.start + vector.count)
  }
}

/// A vector of a `FlatBuffer`.
public struct FlatVector: Sendable {
  let buffer: FlatBuffer
  let start: Int
  public let count: Int
  let elementSize: Int
  let name: String

  public func table(_ index: Int) throws -> FlatTable {
    let at = start + 4 * index
    return try buffer.table(at: try buffer.follow(at, name), name)
  }

  public func string(_ index: Int) throws -> String {
    let at = try buffer.follow(start + 4 * index, name)
    let length = Int(try buffer.u32(at, name))
    try buffer.check(at + 4, length, name)
    return String(decoding: buffer.bytes[(at + 4)..<(at + 4 + length)], as: UTF8.self)
  }
}
