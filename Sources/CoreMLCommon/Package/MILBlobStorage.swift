import Foundation
import ModelFormats

/// The MIL blob storage file (`weights/weight.bin`, storage format version 2) of an ML Program package.
///
/// Layout (little-endian): a 64-byte header (`count` u32, `version` u32 = 2, zeros), then for each blob a
/// 64-byte metadata record (`sentinel` u32 = 0xDEADBEEF, `dataType` u32, `sizeInBytes` u64, `offset` u64
/// of the data, `paddingBits` u64 (meaningful for sub-byte types only), reserved) at a 64-byte aligned offset, its data right after it. A
/// program's `BlobFileValue.offset` is the offset of the metadata record.
public enum MILBlobStorage {
  /// The blob file's own element codes (not MIL's `DataType` numbers).
  public enum BlobDataType: UInt32, Sendable, CaseIterable {
    case float16 = 1
    case float32 = 2
    case uint8 = 3
    case int8 = 4
    case bfloat16 = 5
    case int16 = 6
    case uint16 = 7
    case int4 = 8
    case uint1 = 9
    case uint2 = 10
    case uint4 = 11
    case uint3 = 12
    case uint6 = 13
    case int32 = 14
    case uint32 = 15

    /// The unsigned type of `bits` bits (1, 2, 3, 4, 6, 8).
    public init(unsignedBits bits: Int) {
      switch bits {
      case 1: self = .uint1
      case 2: self = .uint2
      case 3: self = .uint3
      case 4: self = .uint4
      case 6: self = .uint6
      default: self = .uint8
      }
    }

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

  /// Builds a blob file; `append` returns the offset a program refers to the blob by. A blob's data
  /// is kept as given (or, for a weight, as the IR holds it) and laid out only when the file is written
  /// (`write(to:)`, `bytes`), a block at a time: the whole file is never in memory.
  public struct Writer: Sendable {
    private enum Payload: Sendable {
      case bytes([UInt8])
      case values(CoreMLWeightValues, float16: Bool)
    }
    private struct Entry: Sendable {
      var metadata: Int
      var dataType: BlobDataType
      var size: Int
      var paddingBits: Int
      var payload: Payload
    }
    private var entries: [Entry] = []
    /// The file's size in bytes.
    public private(set) var byteCount = 64
    public var count: UInt32 { UInt32(entries.count) }

    public init() {}

    /// The whole file.
    public var bytes: [UInt8] {
      var bytes: [UInt8] = []
      bytes.reserveCapacity(byteCount)
      write { bytes.append(contentsOf: $0) }
      return bytes
    }

    /// Adds a blob at the next aligned offset and returns the offset of its metadata record.
    public mutating func append(_ dataType: BlobDataType, bytes data: [UInt8], paddingBits: Int = 0) -> UInt64 {
      append(dataType, size: data.count, paddingBits: paddingBits, .bytes(data))
    }

    /// Adds float32 values.
    public mutating func append(float32 values: [Float]) -> UInt64 {
      append(.float32, bytes: values.withUnsafeBufferPointer { Array(UnsafeRawBufferPointer($0)) })
    }

    /// Adds float16 values given as their bit patterns.
    public mutating func append(float16Bits values: [UInt16]) -> UInt64 {
      append(.float16, bytes: values.withUnsafeBufferPointer { Array(UnsafeRawBufferPointer($0)) })
    }

    /// Adds a weight, laid out in Core ML's order as float32 or float16 when the file is written (float16
    /// values must already be checked against float16's range).
    package mutating func append(_ values: CoreMLWeightValues, float16: Bool) -> UInt64 {
      append(
        float16 ? .float16 : .float32, size: values.count * (float16 ? 2 : 4), paddingBits: 0,
        .values(values, float16: float16))
    }

    private mutating func append(_ dataType: BlobDataType, size: Int, paddingBits: Int, _ payload: Payload) -> UInt64 {
      let metadata = (byteCount + MILBlobStorage.alignment - 1) / MILBlobStorage.alignment * MILBlobStorage.alignment
      entries.append(
        Entry(metadata: metadata, dataType: dataType, size: size, paddingBits: paddingBits, payload: payload))
      byteCount = metadata + 64 + size
      return UInt64(metadata)
    }

    /// Sends the file's bytes to `sink` in order: the header, then each blob's metadata record (after
    /// zeros up to its aligned offset) and data.
    public func write(to sink: (UnsafeRawBufferPointer) throws -> Void) rethrows {
      var header = [UInt8](repeating: 0, count: 64)
      Self.store32(count, at: 0, in: &header)
      Self.store32(MILBlobStorage.version, at: 4, in: &header)
      try header.withUnsafeBytes(sink)
      var position = 64
      for entry in entries {
        var record = [UInt8](repeating: 0, count: entry.metadata - position + 64)
        let at = entry.metadata - position
        Self.store32(MILBlobStorage.sentinel, at: at, in: &record)
        Self.store32(entry.dataType.rawValue, at: at + 4, in: &record)
        Self.store64(UInt64(entry.size), at: at + 8, in: &record)
        Self.store64(UInt64(entry.metadata + 64), at: at + 16, in: &record)
        Self.store64(UInt64(entry.paddingBits), at: at + 24, in: &record)
        try record.withUnsafeBytes(sink)
        switch entry.payload {
        case .bytes(let data): try data.withUnsafeBytes(sink)
        case .values(let values, let float16): try values.encodedBlocks(float16: float16, sink)
        }
        position = entry.metadata + 64 + entry.size
      }
    }

    private static func store32(_ value: UInt32, at offset: Int, in bytes: inout [UInt8]) {
      for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
    }

    private static func store64(_ value: UInt64, at offset: Int, in bytes: inout [UInt8]) {
      for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
    }
  }

  /// Reads blobs out of a blob file, checking every number against the file's size before use. A file
  /// is read by ranges: the 64-byte header, each blob's 64-byte record and then its data, only the
  /// blobs asked for; nothing is allocated that the file does not hold (a sparse file declaring
  /// gigabytes costs what its blobs take).
  public struct Reader: @unchecked Sendable {
    private enum Storage {
      case memory([UInt8])
      case file(RangedFile)
    }
    private let storage: Storage
    public let path: String
    /// The number of blobs the header declares.
    public private(set) var count: Int
    /// The file's size in bytes.
    public let size: Int

    public init(bytes: [UInt8], path: String) throws {
      try self.init(storage: .memory(bytes), size: bytes.count, path: path)
    }

    /// Opens the regular file at `url` (a FIFO, device or folder is refused without blocking).
    public init(contentsOf url: URL) throws {
      let file: RangedFile
      do { file = try RangedFile(url.path) } catch let failure as RangedFile.Failure {
        throw FormatError(path: url.path, detail: "cannot be read: \(failure.detail)")
      }
      try self.init(storage: .file(file), size: file.size, path: url.path)
    }

    private init(storage: Storage, size: Int, path: String) throws {
      self.storage = storage
      self.size = size
      self.path = path
      guard size >= 64 else { throw FormatError(path: path, detail: "\(size) bytes, shorter than the 64-byte header") }
      count = 0
      let header = try read(offset: 0, count: 64)
      let version = Self.load32(header, 4)
      guard version == MILBlobStorage.version else {
        throw FormatError(path: path, detail: "storage version \(version); only version 2 is defined")
      }
      count = Int(Self.load32(header, 0))
    }

    /// `count` bytes from `offset`, which the caller has checked lie inside the file.
    private func read(offset: Int, count: Int) throws -> [UInt8] {
      switch storage {
      case .memory(let bytes): return Array(bytes[offset..<offset + count])
      case .file(let file):
        do { return try file.read(offset: offset, count: count) } catch let failure as RangedFile.Failure {
          throw FormatError(path: path, detail: "\(count) bytes at \(offset): \(failure.detail)")
        }
      }
    }

    /// The blob whose metadata record is at `offset`; when `expectedBytes` is given (what the value that
    /// refers to the blob needs), a blob of another size is refused before its data is read.
    public func blob(at offset: UInt64, expectedBytes: Int? = nil) throws -> Blob {
      let fileSize = UInt64(size)
      guard offset >= 64, offset % UInt64(MILBlobStorage.alignment) == 0, offset <= fileSize, fileSize - offset >= 64
      else {
        throw FormatError(
          path: path, detail: "offset \(offset) is not an aligned metadata record inside the \(size)-byte file")
      }
      let start = Int(offset)
      let record = try read(offset: start, count: 64)
      guard Self.load32(record, 0) == MILBlobStorage.sentinel else {
        throw FormatError(path: path, detail: "no blob record at offset \(offset) (sentinel missing)")
      }
      let code = Self.load32(record, 4)
      guard let type = BlobDataType(rawValue: code) else {
        throw FormatError(path: path, detail: "blob at \(offset) has unknown data type \(code)")
      }
      let size = Self.load64(record, 8)
      let dataOffset = Self.load64(record, 16)
      let padding = Self.load64(record, 24)
      guard dataOffset >= offset + 64, dataOffset <= fileSize, size <= fileSize - dataOffset else {
        throw FormatError(
          path: path,
          detail: "blob at \(offset) claims \(size) bytes at \(dataOffset), beyond the \(self.size)-byte file")
      }
      // As coremltools' MILBlob StorageReader (mlmodel/src/MILBlob/Blob/StorageReader.cpp): the sentinel, the
      // data type and the data's place in the file are checked; `padding_size_in_bits` only for sub-byte
      // types (fewer than 8, a multiple of the element width when that divides 8, whole elements left);
      // for byte-sized types it is ignored, like the reserved words (writers before iOS 18 left both
      // uninitialised, StorageFormat.hpp), and reported as 0.
      var paddingBits = 0
      if type.bits < 8 {
        let elementBits = UInt64(type.bits)
        // size is at most the file's length (checked above), so size * 8 cannot overflow.
        guard padding < 8, padding <= size * 8, 8 % elementBits != 0 || padding % elementBits == 0,
          (size * 8 - padding) % elementBits == 0
        else {
          throw FormatError(
            path: path, detail: "blob at \(offset) has \(padding) padding bits for \(size) bytes of \(type)")
        }
        paddingBits = Int(padding)
      }
      if let expectedBytes, UInt64(max(expectedBytes, 0)) != size {
        throw FormatError(
          path: path, detail: "blob at \(offset) holds \(size) bytes; the value it is read for needs \(expectedBytes)")
      }
      return Blob(dataType: type, bytes: try read(offset: Int(dataOffset), count: Int(size)), paddingBits: paddingBits)
    }

    static func load32(_ b: [UInt8], _ o: Int) -> UInt32 {
      (0..<4).reduce(0) { $0 | UInt32(b[o + $1]) << (8 * UInt32($1)) }
    }
    static func load64(_ b: [UInt8], _ o: Int) -> UInt64 {
      (0..<8).reduce(0) { $0 | UInt64(b[o + $1]) << (8 * UInt64($1)) }
    }
  }
}

extension MILBlobStorage.FormatError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
