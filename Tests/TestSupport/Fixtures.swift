import Foundation

/// Paths of the fixtures that `Samples/` scripts made with real Keras (shared by every test target).
public enum Fixtures {
  public static let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  public static let root = packageRoot.appendingPathComponent("Samples/Fixtures")
  public static let digits = packageRoot.appendingPathComponent("Samples/Digits")

  /// Keras dialects with a full fixture set.
  public static let dialects = ["tfkeras215", "tfkeras2", "keras3", "legacy224"]

  public static func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }

  /// Every `(dialect, model)` pair that has a reference file.
  public static var models: [String] {
    dialects.flatMap { dialect -> [String] in
      let folder = root.appendingPathComponent(dialect)
      let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
      return files.filter { $0.hasSuffix(".reference.h5") }.sorted()
        .map { "\(dialect)/" + $0.replacingOccurrences(of: ".reference.h5", with: "") }
    }
  }

  /// `count` copies of `bytes`, each with `changes` bytes at or after `from` set to seeded values (a linear
  /// congruential generator from `seed`, drawn in order): damaged files for readers that must refuse, never crash.
  public static func damagedCopies(of bytes: [UInt8], count: Int, changes: Int, seed: UInt64, from: Int = 0)
    -> [[UInt8]]
  {
    var state = seed
    return (0..<count).map { _ in
      var damaged = bytes
      for _ in 0..<changes {
        state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
        damaged[from + Int(state >> 33) % (damaged.count - from)] = UInt8(truncatingIfNeeded: state >> 17)
      }
      return damaged
    }
  }

  /// A fresh temporary directory.
  public static func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelconv-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}
