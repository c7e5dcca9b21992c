import Foundation

/// A folder of images laid out as Create ML and Turi Create read it: one subfolder per label.
public struct LabelledFolder: Sendable, Equatable {
  public struct Item: Sendable, Equatable {
    /// Relative to the folder (`cat/1.jpg`).
    public var path: String
    public var label: String
  }

  public let url: URL
  /// Labels in name order (the subfolders that hold images).
  public let labels: [String]
  /// Every PNG or JPEG image (by extension, case-insensitive), sorted by path.
  public let items: [Item]
  /// Files that are not PNG or JPEG by name, and files directly in the folder, which have no label.
  public let skipped: [String]

  static let extensions: Set<String> = ["png", "jpg", "jpeg"]

  /// Lists the folder; hidden files are ignored, symbolic links followed.
  public init(url: URL) throws {
    self.url = url
    let manager = FileManager.default
    var isDirectory: ObjCBool = false
    guard manager.fileExists(atPath: url.path, isDirectory: &isDirectory), isDirectory.boolValue else {
      throw PredictionError.notALabelledFolder(path: url.path, detail: "is not a folder")
    }
    var labels: [String] = []
    var items: [Item] = []
    var skipped: [String] = []
    for name in try manager.contentsOfDirectory(atPath: url.path).sorted() where !name.hasPrefix(".") {
      let child = url.appendingPathComponent(name)
      guard manager.fileExists(atPath: child.path, isDirectory: &isDirectory), isDirectory.boolValue else {
        skipped.append(name)
        continue
      }
      var found = false
      let files =
        (manager.enumerator(at: child, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])?.allObjects
          as? [URL]) ?? []
      for file in files.sorted(by: { $0.path < $1.path }) {
        guard manager.fileExists(atPath: file.path, isDirectory: &isDirectory), !isDirectory.boolValue else { continue }
        let relative = String(file.path.dropFirst(url.path.count + (url.path.hasSuffix("/") ? 0 : 1)))
        if Self.extensions.contains(file.pathExtension.lowercased()) {
          items.append(Item(path: relative, label: name))
          found = true
        } else {
          skipped.append(relative)
        }
      }
      if found { labels.append(name) }
    }
    guard !items.isEmpty else {
      throw PredictionError.notALabelledFolder(
        path: url.path, detail: "has no PNG or JPEG images in label subfolders (expected FOLDER/<label>/<image>.jpg)")
    }
    self.labels = labels
    self.items = items
    self.skipped = skipped
  }
}
