import Foundation

/// The MIL blob storage file (`weights/weight.bin`, storage format version 2) of an ML Program package.
///
/// Layout (little-endian): a 64-byte header (`count` u32, `version` u32 = 2, zeros), then for each blob a
/// 64-byte metadata record (`sentinel` u32 = 0xDEADBEEF, `dataType` u32, `sizeInBytes` u64, `offset` u64
/// of the data, `paddingBits` u64, zeros) at a 64-byte aligned offset, its data right after it. A
/// program's `BlobFileValue.offset` is the offset of the metadata record.
public enum MILBlobStorage {
  /// The blob file's own element codes (not MIL's `DataType` numbers).
  public enum BlobDataType: UInt32, Sendable, CaseIterable {
    case float16 = 1, float32 = 2, uint8 = 3, int8 = 4, bfloat16 = 5, int16 = 6, uint16 = 7, int4 = 8
    case uint1 = 9, uint2 = 10, uint4 = 11, uint3 = 12, uint6 = 13, int32 = 14, uint32 = 15

    /// Bits per element.
    public var bits: Int {
      switch self {
      case .float16, .bfloat16, .int16, .uint16: return 16
      case .float32, .int32, .uint32: return 32
      case .uint8, .int8: return 8
      case .int4, .uint4: return 4
      case .uint1: return 1
      case .uint2: return 2
      case .uint3: return 3
      case .uint6: return 6
      }
    }
  }

  public static let version: UInt32 = 2
  public static let sentinel: UInt32 = 0xDEAD_BEEF
  public static let alignment = 64

  /// One blob as the file records it.
  public struct Blob: Sendable, Equatable {
    public var dataType: BlobDataType
    /// The raw little-endian bytes.
    public var bytes: [UInt8]
    /// Unused bits in the last byte of a sub-byte blob.
    public var paddingBits: Int
  }

  /// Why a blob could not be read.
  public struct FormatError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var detail: String
    public var description: String { "\(path): weight blob file: \(detail)" }
  }

  /// Builds a blob file in memory; `append` returns the offset a program refers to the blob by.
  public struct Writer {
    public private(set) var bytes: [UInt8] = [UInt8](repeating: 0, count: 64)
    public private(set) var count: UInt32 = 0

    public init() { store32(MILBlobStorage.version, at: 4) }

    /// Adds a blob at the next aligned offset and returns the offset of its metadata record.
    public mutating func append(_ dataType: BlobDataType, bytes data: [UInt8], paddingBits: Int = 0) -> UInt64 {
      let metadata = (bytes.count + MILBlobStorage.alignment - 1) / MILBlobStorage.alignment * MILBlobStorage.alignment
      bytes.append(contentsOf: [UInt8](repeating: 0, count: metadata - bytes.count + 64))
      store32(MILBlobStorage.sentinel, at: metadata)
      store32(dataType.rawValue, at: metadata + 4)
      store64(UInt64(data.count), at: metadata + 8)
      store64(UInt64(metadata + 64), at: metadata + 16)
      store64(UInt64(paddingBits), at: metadata + 24)
      bytes.append(contentsOf: data)
      count += 1
      store32(count, at: 0)
      return UInt64(metadata)
    }

    /// Adds float32 values.
    public mutating func append(float32 values: [Float]) -> UInt64 {
      append(.float32, bytes: values.withUnsafeBufferPointer { Array(UnsafeRawBufferPointer($0)) })
    }

    /// Adds float16 values given as their bit patterns.
    public mutating func append(float16Bits values: [UInt16]) -> UInt64 {
      append(.float16, bytes: values.withUnsafeBufferPointer { Array(UnsafeRawBufferPointer($0)) })
    }

    private mutating func store32(_ value: UInt32, at offset: Int) {
      for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    private mutating func store64(_ value: UInt64, at offset: Int) {
      for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
    }
  }

  /// Reads blobs out of a blob file's bytes, checking every number against the file before use.
  public struct Reader: Sendable {
    public let bytes: [UInt8]
    public let path: String
    public let count: Int

    public init(bytes: [UInt8], path: String) throws {
      self.bytes = bytes
      self.path = path
      guard bytes.count >= 64 else { throw FormatError(path: path, detail: "\(bytes.count) bytes, shorter than the 64-byte header") }
      let version = Self.load32(bytes, 4)
      guard version == MILBlobStorage.version else {
        throw FormatError(path: path, detail: "storage version \(version); only version 2 is defined")
      }
      count = Int(Self.load32(bytes, 0))
    }

    public init(contentsOf url: URL) throws {
      guard let data = FileManager.default.contents(atPath: url.path) else { throw FormatError(path: url.path, detail: "cannot be read") }
      try self.init(bytes: [UInt8](data), path: url.path)
    }

    /// The blob whose metadata record is at `offset`.
    public func blob(at offset: UInt64) throws -> Blob {
      guard offset >= 64, offset % UInt64(MILBlobStorage.alignment) == 0, offset <= UInt64(bytes.count), UInt64(bytes.count) - offset >= 64 else {
        throw FormatError(path: path, detail: "offset \(offset) is not an aligned metadata record inside the \(bytes.count)-byte file")
      }
      let start = Int(offset)
      guard Self.load32(bytes, start) == MILBlobStorage.sentinel else {
        throw FormatError(path: path, detail: "no blob record at offset \(offset) (sentinel missing)")
      }
      let code = Self.load32(bytes, start + 4)
      guard let type = BlobDataType(rawValue: code) else { throw FormatError(path: path, detail: "blob at \(offset) has unknown data type \(code)") }
      let size = Self.load64(bytes, start + 8), dataOffset = Self.load64(bytes, start + 16), padding = Self.load64(bytes, start + 24)
      guard dataOffset >= offset + 64, dataOffset <= UInt64(bytes.count), size <= UInt64(bytes.count) - dataOffset else {
        throw FormatError(path: path, detail: "blob at \(offset) claims \(size) bytes at \(dataOffset), beyond the \(bytes.count)-byte file")
      }
      guard padding < 8, type.bits < 8 || padding == 0 else {
        throw FormatError(path: path, detail: "blob at \(offset) has \(padding) padding bits for \(type)")
      }
      let from = Int(dataOffset)
      return Blob(dataType: type, bytes: Array(bytes[from..<from + Int(size)]), paddingBits: Int(padding))
    }

    static func load32(_ b: [UInt8], _ o: Int) -> UInt32 { (0..<4).reduce(0) { $0 | UInt32(b[o + $1]) << (8 * UInt32($1)) } }
    static func load64(_ b: [UInt8], _ o: Int) -> UInt64 { (0..<8).reduce(0) { $0 | UInt64(b[o + $1]) << (8 * UInt64($1)) } }
  }
}

extension MILBlobStorage.FormatError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
