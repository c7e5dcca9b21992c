import Foundation
import TestSupport
import Testing

@testable import CoreMLReader

/// The MIL operations the importer reads are the registry's keys, and the README's list is that list.
@Suite struct MILOperationRegistryTests {
  @Test func readmeListsExactlyTheRegisteredOperations() throws {
    let readme = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("Docs/CoreML.md"), encoding: .utf8)
    let marker = "ML Program operations read"
    let start = try #require(readme.range(of: marker))
    let paragraph = String(readme[start.upperBound...]).components(separatedBy: "\n\n")[0]
    let listed = paragraph.components(separatedBy: "`").enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
      .filter { !$0.contains("/") && $0 != "MILOperationRegistry" }
    #expect(listed == MILOperationRegistry.supportedOperations)
  }

  /// An operation type outside the registry is refused by name, not skipped.
  @Test func unregisteredOperationIsRefused() throws {
    let directory = try Fixtures.temporaryDirectory()
    let package = directory.appendingPathComponent("digits.mlpackage")
    try FileManager.default.copyItem(at: Fixtures.url("coremltools/digits_cnn_program.mlpackage"), to: package)
    let model = package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel")
    var bytes = [UInt8](try Data(contentsOf: model))
    // Every `relu` operation type becomes `relx` (same length, so the protobuf stays well formed).
    let needle = Array("relu".utf8)
    var replaced = 0
    for start in 0...(bytes.count - needle.count) where Array(bytes[start..<start + needle.count]) == needle {
      bytes[start + 3] = UInt8(ascii: "x")
      replaced += 1
    }
    #expect(replaced >= 1)
    try Data(bytes).write(to: model)
    #expect(!MILOperationRegistry.supportedOperations.contains("relx"))
    do {
      _ = try CoreMLGraphImporter.importModel(contentsOf: package)
      Issue.record("an unknown operation type was imported")
    } catch let error as CoreMLReaderError {
      #expect(error.description.contains("relx") && error.description.contains("not supported"), "\(error)")
    }
  }
}
