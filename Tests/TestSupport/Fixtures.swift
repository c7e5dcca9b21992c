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

  /// A fresh temporary directory.
  public static func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelconv-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}
