import CoreMLCommon
import CoreMLReader
import CoreMLTestSupport
import Foundation
import TestSupport
import Testing

/// The Core ML reader on hostile bytes: nesting bounded before protobuf-c recurses, weight files read by
/// the ranges the model declares.
@Suite struct CoreMLReaderHardeningTests {
  /// A `Model` holding an ML Program whose `main` function's block nests `depth` operations, each holding
  /// the next block (`cond`-like): Model.mlProgram(502) > Program.functions(2) entry > Function.block_specializations(3)
  /// entry > Block.operations(3) > Operation.blocks(4) > Block ... Sizes are computed inside out, then the bytes
  /// written outside in, so a deep file costs linear time.
  static func nestedProgram(depth: Int) -> [UInt8] {
    func varintSize(_ value: Int) -> Int {
      var size = 1
      var rest = value >> 7
      while rest > 0 { (size, rest) = (size + 1, rest >> 7) }
      return size
    }
    func field(_ length: Int) -> Int { 1 + varintSize(length) + length }  // one-byte key
    // blockSizes[i]: the block at nesting i (0 is the outermost); the innermost block is empty.
    var blockSizes = [Int](repeating: 0, count: depth + 1)
    for level in stride(from: depth - 1, through: 0, by: -1) {
      let operation = field(blockSizes[level + 1])  // Operation { blocks: Block }
      blockSizes[level] = field(operation)  // Block { operations: Operation }
    }
    let opset = Array("CoreML5".utf8)
    let name = Array("main".utf8)
    let specializationEntry = field(opset.count) + field(blockSizes[0])
    let function = field(specializationEntry)
    let functionEntry = field(name.count) + field(function)
    let program = field(functionEntry)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(program + 16)
    func varint(_ value: Int) {
      var rest = value
      while rest >= 0x80 {
        bytes.append(UInt8(rest & 0x7F) | 0x80)
        rest >>= 7
      }
      bytes.append(UInt8(rest))
    }
    func key(_ number: Int, _ length: Int) {
      varint(number << 3 | 2)
      varint(length)
    }
    bytes += [0x08, 0x07]  // specificationVersion 7
    key(502, program)
    key(2, functionEntry)
    key(1, name.count)
    bytes += name
    key(2, function)
    key(3, specializationEntry)
    key(1, opset.count)
    bytes += opset
    key(2, blockSizes[0])
    for level in 0..<depth {
      key(3, field(blockSizes[level + 1]))
      key(4, blockSizes[level + 1])
    }
    return bytes
  }

  @Test func deepNestingIsRefusedBeforeProtobufCRecurses() throws {
    for depth in [1_000, 100_000] {
      let bytes = Self.nestedProgram(depth: depth)
      #expect(throws: CoreMLReaderError.self) { try CoreMLSpecReader.read(bytes, path: "deep.mlmodel") }
      do {
        _ = try CoreMLSpecReader.read(bytes, path: "deep.mlmodel")
      } catch {
        #expect("\(error)".contains("nested more than"), "\(error)")
        #expect("\(error)".contains("deep.mlmodel"))
      }
    }
    // A few nested blocks are within the bound: whatever else is wrong with the program, it is not its depth.
    do {
      _ = try CoreMLSpecReader.read(Self.nestedProgram(depth: 5), path: "shallow.mlmodel")
    } catch {
      #expect(!"\(error)".contains("nested more than"), "\(error)")
    }
  }

  /// A blob file is read by ranges: a weight file grown to 8 GiB (sparse: no disk used) reads its blobs
  /// without holding the file, and a blob claiming more bytes than the file holds is refused.
  @Test func blobFilesAreReadByRanges() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("blobs-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var writer = MILBlobStorage.Writer()
    let offset = writer.append(float32: [1, 2, 3, 4])
    let url = directory.appendingPathComponent("weight.bin")
    try Data(writer.bytes).write(to: url)
    let handle = try FileHandle(forWritingTo: url)
    try handle.truncate(atOffset: 8 << 30)
    try handle.close()
    let reader = try MILBlobStorage.Reader(contentsOf: url)
    #expect(reader.size == 8 << 30)
    let blob = try reader.blob(at: offset)
    #expect(blob.bytes.count == 16)
    #expect(blob.bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) } == [1, 2, 3, 4])
    // Beyond the written blobs lie zeros: no record there.
    #expect(throws: MILBlobStorage.FormatError.self) { try reader.blob(at: 1 << 30) }
    // A FIFO is refused without blocking.
    let fifo = directory.appendingPathComponent("fifo.bin")
    #expect(mkfifo(fifo.path, 0o600) == 0)
    #expect(throws: MILBlobStorage.FormatError.self) { try MILBlobStorage.Reader(contentsOf: fifo) }
  }

  /// A package whose files resolve outside it (a symbolic link) is refused naming the file, for the model,
  /// the weight file and the Data folder.
  @Test func linksOutOfAPackageAreRefused() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("links-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let original = Fixtures.url("coremltools/digits_cnn_program.mlpackage")
    let outside = directory.appendingPathComponent("outside.mlpackage")
    try FileManager.default.copyItem(at: original, to: outside)
    #expect(throws: Never.self) { try CoreMLSpecReader.read(contentsOf: outside) }
    for (index, item) in ["Data/com.apple.CoreML/model.mlmodel", "Data/com.apple.CoreML/weights/weight.bin", "Data"]
      .enumerated()
    {
      let package = directory.appendingPathComponent("p\(index).mlpackage")
      try FileManager.default.copyItem(at: original, to: package)
      let link = package.appendingPathComponent(item)
      try FileManager.default.removeItem(at: link)
      try FileManager.default.createSymbolicLink(at: link, withDestinationURL: outside.appendingPathComponent(item))
      do {
        _ = try CoreMLSpecReader.read(contentsOf: package)
        Issue.record("\(item): a link out of the package was followed")
      } catch {
        #expect("\(error)".contains("outside the package"), "\(item): \(error)")
      }
    }
  }

  /// A string with a NUL inside is refused (protobuf-c would hand it on cut at the NUL).
  @Test func stringsWithANulAreRefused() throws {
    // Model { description (2) { input (1) { name (1): "in\0put" } } }
    let name: [UInt8] = Array("in".utf8) + [0] + Array("put".utf8)
    let feature: [UInt8] = [0x0A, UInt8(name.count)] + name
    let description: [UInt8] = [0x0A, UInt8(feature.count)] + feature
    let model: [UInt8] = [0x08, 0x04, 0x12, UInt8(description.count)] + description
    do {
      _ = try CoreMLSpecReader.read(model, path: "nul.mlmodel")
      Issue.record("a name with a NUL was read")
    } catch {
      #expect("\(error)".contains("NUL"), "\(error)")
    }
  }
}
