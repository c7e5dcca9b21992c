import Foundation
import KerasFormat
import TestSupport
import Testing

/// Weights stored as plain float32 runs are located by libhdf5 and read by offset by the converter:
/// the values must be exactly what libhdf5 itself reads, and a location or file that does not hold up
/// must be an error, never other numbers.
@Suite struct WeightLocationTests {
  static let models = [
    "keras3/batchnorm.h5", "keras3/conv_variants.h5", "keras3/nested.h5", "tfkeras215/sequential_plain.h5",
    "tfkeras2/depthwise_separable.h5", "legacy224/multi_io_shared.h5", "legacy224/dense_classifier.h5",
  ]

  /// Every dataset a snapshot holds, through libhdf5's own H5Dread.
  static func libhdf5Values(_ snapshot: KerasModelSnapshot) throws -> [String: [String: [Float]]] {
    let file = try HDF5File(path: snapshot.path)
    let root = file.root.group("model_weights") ?? file.root
    var result: [String: [String: [Float]]] = [:]
    for (group, entries) in snapshot.weights {
      for name in entries.keys {
        result[group, default: [:]][name] = try #require(root.group(group)).floatDataset(name).values
      }
    }
    return result
  }

  @Test(arguments: models) func locatedWeightsEqualWhatLibhdf5Reads(model: String) throws {
    let snapshot = try KerasModelSnapshot.read(path: Fixtures.url(model).path)
    let located = snapshot.hasLocatedWeights
    #expect(located, "Keras writes contiguous float32 datasets: \(model)")
    #expect(snapshot.fileIdentity != nil)
    let loaded = try snapshot.loadingLocatedWeights()
    #expect(!loaded.hasLocatedWeights)
    let expected = try Self.libhdf5Values(snapshot)
    var compared = 0
    for (group, entries) in loaded.weights {
      for (name, stored) in entries {
        guard case .values(let shape, let values) = stored else {
          Issue.record("\(group)/\(name) is \(stored)")
          continue
        }
        #expect(values.count == shape.reduce(1, *))
        // Bit for bit: the same stored float32 values, whoever copies them.
        #expect(values.map(\.bitPattern) == expected[group]?[name]?.map(\.bitPattern), "\(group)/\(name)")
        compared += 1
      }
    }
    #expect(compared > 0)
  }

  /// The wire format carries locations and the file identity between the reader child and the converter.
  @Test func locationsSurviveTheWireFormat() throws {
    let snapshot = try KerasModelSnapshot.read(path: Fixtures.url("keras3/conv_variants.h5").path)
    let decoded = try KerasModelSnapshot.decodeForTesting(snapshot.encoded())
    #expect(decoded == snapshot)
    #expect(try decoded.loadingLocatedWeights() == snapshot.loadingLocatedWeights())
  }

  /// A location beyond the end of the file is an unreadable weight (named), not a crash or other values.
  @Test func locationBeyondTheFileIsUnreadable() throws {
    var snapshot = try KerasModelSnapshot.read(path: Fixtures.url("keras3/batchnorm.h5").path)
    let size = try #require(snapshot.fileIdentity?.size)
    let (group, entries) = try #require(
      snapshot.weights.first { $0.value.values.contains { if case .located = $0 { true } else { false } } })
    let (name, stored) = try #require(entries.first { if case .located = $0.value { true } else { false } })
    guard case .located(let shape, _) = stored else {
      Issue.record("not a located weight")
      return
    }
    for offset in [size - 2, size, Int.max - 3, -8] {
      snapshot.weights[group]![name] = .located(shape: shape, offset: offset)
      let loaded = try snapshot.loadingLocatedWeights()
      guard case .unreadable(let detail) = loaded.weights[group]![name]! else {
        Issue.record("offset \(offset) gave \(String(describing: loaded.weights[group]![name]))")
        continue
      }
      #expect(detail.contains(name) && detail.contains("beyond the end of the file"), "\(detail)")
    }
  }

  /// Weights are read by offset after libhdf5 closed the file: a file replaced or modified in between is
  /// refused, whatever its contents.
  @Test func aChangedFileIsRefused() throws {
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("located-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let copy = directory.appendingPathComponent("model.h5")
    try FileManager.default.copyItem(at: Fixtures.url("keras3/batchnorm.h5"), to: copy)
    let snapshot = try KerasModelSnapshot.read(path: copy.path)
    // Same size, same bytes, but written again: a new modification time.
    let bytes = try Data(contentsOf: copy)
    try FileManager.default.removeItem(at: copy)
    try bytes.write(to: copy)
    #expect {
      _ = try snapshot.loadingLocatedWeights()
    } throws: { error in
      guard case KerasReaderError.readerFailed(let path, let detail) = error else { return false }
      return path == copy.path && detail.contains("changed")
    }
    // And a converted model goes through the same check (the tool's reader child hands over locations).
    #expect(throws: KerasReaderError.self) { _ = try KerasModelFile(snapshot: snapshot) }
  }
}
