import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// The `.mlpackage` container, the MIL blob file, deployment targets and emulated float16.
@Suite struct ModelPackageTests {
  // MARK: weight.bin

  /// Apple's worked example of the storage format: two float32[500] blobs have their metadata records
  /// at offsets 64 and 2176 (the first blob's data ends at 128 + 2000 = 2128, aligned up to 64).
  @Test func blobOffsetsFollowTheDocumentedLayout() throws {
    var writer = MILBlobStorage.Writer()
    let first = writer.append(float32: (0..<500).map(Float.init))
    let second = writer.append(float32: (0..<500).map { Float($0) * -0.5 })
    #expect(first == 64)
    #expect(second == 2176)
    #expect(writer.bytes.count == 2176 + 64 + 2000)
    // Header: count 2, version 2.
    #expect(Array(writer.bytes[0..<8]) == [2, 0, 0, 0, 2, 0, 0, 0])
    // Record: sentinel 0xDEADBEEF, data type 2 (float32), 2000 bytes, data at 2240.
    #expect(Array(writer.bytes[2176..<2184]) == [0xEF, 0xBE, 0xAD, 0xDE, 2, 0, 0, 0])

    let reader = try MILBlobStorage.Reader(bytes: writer.bytes, path: "weight.bin")
    #expect(reader.count == 2)
    let blob = try reader.blob(at: second)
    #expect(blob.dataType == .float32)
    let values = blob.bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) }
    #expect(values == (0..<500).map { Float($0) * -0.5 })
  }

  @Test func corruptBlobFilesAreErrors() throws {
    var writer = MILBlobStorage.Writer()
    let offset = writer.append(float16Bits: [0x3C00, 0x4000, 0xC000])
    let good = writer.bytes
    func reading(_ bytes: [UInt8], at offset: UInt64 = 64) -> String? {
      do {
        _ = try MILBlobStorage.Reader(bytes: bytes, path: "w.bin").blob(at: offset)
        return nil
      } catch { return "\(error)" }
    }
    #expect(reading(good, at: offset) == nil)
    #expect(reading(Array(good.prefix(40))) != nil, "shorter than a header")
    var version = good
    version[4] = 1
    #expect(reading(version) != nil)
    var sentinel = good
    sentinel[64] = 0
    #expect(reading(sentinel) != nil)
    var size = good
    size[72] = 0xFF
    size[79] = 0x7F
    #expect(reading(size) != nil, "a size beyond the file")
    var type = good
    type[68] = 99
    #expect(reading(type) != nil)
    #expect(reading(good, at: 65) != nil, "unaligned")
    #expect(reading(good, at: 1 << 40) != nil, "beyond the file")
    #expect(reading(good, at: UInt64.max - 63) != nil)
  }

  /// A blob file laid out by hand from StorageFormat.hpp (header: count u32, version u32, reserved; record:
  /// sentinel u32, mil_dtype u32, sizeInBytes u64, offset u64, padding_size_in_bits u64, 4 reserved u64),
  /// whose padding and reserved words hold garbage, as files written before iOS 18 may: coremltools' reader
  /// ignores padding for byte-sized types, and so does ours; for sub-byte types it still counts.
  @Test func garbagePaddingOfByteSizedBlobsIsIgnored() throws {
    func le(_ value: UInt64, _ count: Int) -> [UInt8] {
      (0..<count).map { UInt8(truncatingIfNeeded: value >> (8 * UInt64($0))) }
    }
    func file(dataType: UInt32, data: [UInt8], padding: UInt64) -> [UInt8] {
      var bytes = le(1, 4) + le(2, 4) + [UInt8](repeating: 0, count: 56)
      bytes += le(0xDEAD_BEEF, 4) + le(UInt64(dataType), 4) + le(UInt64(data.count), 8) + le(128, 8) + le(padding, 8)
      bytes += le(0x0123_4567_89AB_CDEF, 8) + le(UInt64.max, 8) + le(42, 8) + le(7, 8)
      return bytes + data
    }
    // float16 1, 2, -2 (blob code 1); the padding word of the real ECG package's first blob.
    let half: [UInt8] = [0x00, 0x3C, 0x00, 0x40, 0x00, 0xC0]
    let blob = try MILBlobStorage.Reader(bytes: file(dataType: 1, data: half, padding: 13_654_009_360), path: "w.bin")
      .blob(at: 64)
    #expect(blob.dataType == .float16 && blob.bytes == half && blob.paddingBits == 0)
    let float = try MILBlobStorage.Reader(
      bytes: file(dataType: 2, data: le(0x3F80_0000, 4), padding: UInt64.max), path: "w.bin"
    ).blob(at: 64)
    #expect(float.dataType == .float32 && float.bytes == [0, 0, 0x80, 0x3F])
    // uint4 (code 11): 3 values in 2 bytes leave 4 padding bits; 8 or more, or half an element, are errors.
    let nibbles = try MILBlobStorage.Reader(bytes: file(dataType: 11, data: [0x21, 0x03], padding: 4), path: "w.bin")
      .blob(at: 64)
    #expect(nibbles.dataType == .uint4 && nibbles.paddingBits == 4)
    for padding: UInt64 in [8, 13_654_009_360, 2] {
      #expect(throws: MILBlobStorage.FormatError.self, "\(padding)") {
        try MILBlobStorage.Reader(bytes: file(dataType: 11, data: [0x21, 0x03], padding: padding), path: "w.bin").blob(
          at: 64)
      }
    }
    // The other checks stay: data beyond the file, a wrong sentinel, an unknown type.
    var short = file(dataType: 1, data: half, padding: 0)
    short.removeLast()
    #expect(throws: MILBlobStorage.FormatError.self) {
      try MILBlobStorage.Reader(bytes: short, path: "w.bin").blob(at: 64)
    }
    var sentinel = file(dataType: 1, data: half, padding: 0)
    sentinel[67] = 0
    #expect(throws: MILBlobStorage.FormatError.self) {
      try MILBlobStorage.Reader(bytes: sentinel, path: "w.bin").blob(at: 64)
    }
    #expect(throws: MILBlobStorage.FormatError.self) {
      try MILBlobStorage.Reader(bytes: file(dataType: 200, data: half, padding: 0), path: "w.bin").blob(at: 64)
    }
  }

  // MARK: Package folder

  @Test func packageManifestAndContents() throws {
    let folder = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let url = folder.appendingPathComponent("M.mlpackage")
    try ModelPackage.write(model: [1, 2, 3], weights: [4, 5], to: url)
    let manifest =
      try JSONSerialization.jsonObject(with: Data(contentsOf: url.appendingPathComponent("Manifest.json")))
      as! [String: Any]
    #expect(manifest["fileFormatVersion"] as? String == "1.0.0")
    let entries = manifest["itemInfoEntries"] as! [String: [String: String]]
    let root = entries[manifest["rootModelIdentifier"] as! String]!
    #expect(root["path"] == "com.apple.CoreML/model.mlmodel")
    #expect(root["name"] == "model.mlmodel")
    #expect(root["author"] == "com.apple.CoreML")
    #expect(Set(entries.values.map { $0["path"]! }) == ["com.apple.CoreML/model.mlmodel", "com.apple.CoreML/weights"])
    let contents = try ModelPackage.contents(of: url)
    #expect(try Data(contentsOf: contents.modelURL) == Data([1, 2, 3]))
    #expect(try Data(contentsOf: contents.weightsURL!.appendingPathComponent("weight.bin")) == Data([4, 5]))

    // Replacing: the new package is complete, nothing is left beside it.
    try ModelPackage.write(model: [9], weights: nil, to: url)
    #expect(try Data(contentsOf: ModelPackage.contents(of: url).modelURL) == Data([9]))
    #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["M.mlpackage"])
  }

  @Test func packageNeverReplacesOtherThings() throws {
    let folder = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    let file = folder.appendingPathComponent("file.mlpackage")
    try Data([7]).write(to: file)
    #expect(throws: (any Error).self) { try ModelPackage.write(model: [1], weights: nil, to: file) }
    #expect(try Data(contentsOf: file) == Data([7]))
    let plain = folder.appendingPathComponent("photos.mlpackage")
    try FileManager.default.createDirectory(at: plain, withIntermediateDirectories: true)
    try Data([8]).write(to: plain.appendingPathComponent("keep.jpg"))
    #expect(throws: (any Error).self) { try ModelPackage.write(model: [1], weights: nil, to: plain) }
    #expect(try FileManager.default.contentsOfDirectory(atPath: plain.path) == ["keep.jpg"])
    #expect(
      try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == [
        "file.mlpackage", "photos.mlpackage",
      ])
  }

  @Test func manifestsPointingOutsideThePackageAreRefused() throws {
    let folder = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: folder) }
    func manifest(_ object: Any) throws -> Error? {
      let url = folder.appendingPathComponent("P\(UUID().uuidString).mlpackage")
      try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
      try JSONSerialization.data(withJSONObject: object).write(to: url.appendingPathComponent("Manifest.json"))
      do {
        _ = try ModelPackage.contents(of: url)
        return nil
      } catch { return error }
    }
    let item = ["author": "a", "description": "d", "name": "n"]
    #expect(
      try manifest([
        "fileFormatVersion": "1.0.0", "itemInfoEntries": ["x": item.merging(["path": "../../etc/passwd"]) { $1 }],
        "rootModelIdentifier": "x",
      ]) != nil)
    #expect(
      try manifest([
        "fileFormatVersion": "1.0.0", "itemInfoEntries": ["x": item.merging(["path": "/etc/passwd"]) { $1 }],
        "rootModelIdentifier": "x",
      ]) != nil)
    #expect(
      try manifest([
        "fileFormatVersion": "2.0.0", "itemInfoEntries": ["x": item.merging(["path": "a/b"]) { $1 }],
        "rootModelIdentifier": "x",
      ]) != nil)
    #expect(
      try manifest(["fileFormatVersion": "1.0.0", "itemInfoEntries": ["x": item], "rootModelIdentifier": "x"]) != nil,
      "no path")
    #expect(
      try manifest(["fileFormatVersion": "1.0.0", "itemInfoEntries": [:] as [String: Any], "rootModelIdentifier": "x"])
        != nil)
    #expect(try manifest([1, 2]) != nil)
    #expect(
      try manifest([
        "fileFormatVersion": "1.0.0",
        "itemInfoEntries": ["x": item.merging(["path": "com.apple.CoreML/model.mlmodel"]) { $1 }],
        "rootModelIdentifier": "x",
      ]) == nil)
  }

  // MARK: Deployment targets

  /// Apple's table: iOS 13 reads specification 4, iOS 14 5, iOS 15 6 (MIL opset CoreML5), ... iOS 18 9 (CoreML8).
  @Test func deploymentTargets() {
    #expect(DeploymentTarget.parse("iOS15")?.specificationVersion == 6)
    #expect(DeploymentTarget.parse("iOS15")?.opset == "CoreML5")
    #expect(DeploymentTarget.parse("ios18")?.opset == "CoreML8")
    #expect(DeploymentTarget.parse("macOS12")?.specificationVersion == 6)
    #expect(DeploymentTarget.parse("macOS10_15")?.specificationVersion == 4)
    #expect(DeploymentTarget.parse("macOS10.15")?.name == "macOS10.15")
    #expect(DeploymentTarget.parse("watchOS8")?.specificationVersion == 6)
    #expect(DeploymentTarget.parse("tvOS14")?.specificationVersion == 5)
    #expect(DeploymentTarget.parse("iOS14")?.opset == nil)
    #expect(DeploymentTarget.parse("iOS19") == nil)
    #expect(DeploymentTarget.parse("android12") == nil)
    #expect(DeploymentTarget.specificationVersion(forOpset: "CoreML7") == 8)
    #expect(DeploymentTarget.specificationVersion(forOpset: "CoreML9") == nil)
  }

  /// A neural network that needs specification 5 (bilinear upsampling) is refused for iOS 13 and written for iOS 14.
  @Test func neuralNetworkTargetTooOld() throws {
    let source = Fixtures.url("tfkeras215/reshape_ops.h5")
    let error = #expect(throws: CoreMLWriterError.self) {
      try KerasConverter.convert(modelAt: source, options: ConversionOptions(target: .iOS13))
    }
    guard case .targetTooOld(let target, let needs, _) = error else {
      Issue.record("\(String(describing: error))")
      return
    }
    #expect(target == "iOS13")
    #expect(needs == 5)
    let model = try KerasConverter.convert(modelAt: source, options: ConversionOptions(target: .iOS14))
    #expect(model.summary.specificationVersion == 5)
  }

  // MARK: Emulated float16

  /// IEEE 754 binary16: 1/3 rounds to 0x3555 = 0.333251953125; 1 + 2^-11 is a tie that rounds to even
  /// (1.0); 65519 rounds down to 65504 and 65520 (a tie with 65536, beyond the range) to infinity;
  /// 2^-25 is half the smallest subnormal and rounds to 0. A float32 cast stops the rounding.
  @Test func float16ValuesAreRoundedAsTheyAreProduced() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([6]))
    let half = try builder.add(.cast(.float16), name: "to16", inputs: [x])
    let doubled = try builder.add(.activation(.linear(scale: 2, offset: 0)), name: "twice", inputs: [half])
    let back = try builder.add(.cast(.float32), name: "to32", inputs: [doubled])
    let shifted = try builder.add(.activation(.linear(scale: 1, offset: 1.0 / 4096)), name: "shift", inputs: [back])
    let graph = builder.build(outputs: [half, doubled, shifted])
    #expect(graph[doubled].type.dataType == .float16)
    #expect(graph[shifted].type.dataType == .float32)
    let input = Tensor(shape: [6], values: [1.0 / 3, 1 + 1.0 / 2048, 65519, 65520, 0x1p-25, 40000])
    for kernels in [Interpreter.KernelChoice.fast, .direct] {
      let outputs = Interpreter(graph: graph, kernels: kernels).run([input])
      #expect(outputs[0].values == [0.333251953125, 1, 65504, .infinity, 0, 40000])
      #expect(outputs[1].values == [0.66650390625, 2, .infinity, .infinity, 0, .infinity])
      #expect(outputs[2].values[0] == 0.66650390625 + 1.0 / 4096, "float32 after the cast back")
    }
  }
}
