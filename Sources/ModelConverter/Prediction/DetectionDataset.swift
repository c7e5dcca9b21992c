import Foundation
import ReferenceRuntime

/// A folder of labelled images laid out as Ultralytics reads a detection dataset: `images/` with the
/// photos (in subfolders or not) and `labels/` beside it with one text file per photo, the same path
/// with `.txt` (`images/val/a.jpg` → `labels/val/a.txt`). Each line of a label file is one object,
/// `class cx cy w h`, the box normalized to the photo; a line with more pairs is a polygon, taken as
/// the box around it (as Ultralytics does). A photo without a label file has no objects. The folder
/// given may also be the `images` folder itself.
public struct DetectionDataset: Sendable, Equatable {
  public struct Item: Sendable, Equatable {
    /// Relative to the `images` folder.
    public var path: String
    public var objects: [LabelledObject]
    /// Whether a label file was found (a photo without one is a background photo).
    public var hasLabelFile: Bool
  }

  /// The `images` folder.
  public let images: URL
  public let labels: URL
  public let items: [Item]
  /// Files in `images` that are not PNG or JPEG by name.
  public let skipped: [String]
  /// Label lines that repeat an earlier line of their file (dropped, as Ultralytics drops them).
  public let duplicateLines: Int

  /// Label files larger than this are refused.
  public static let maximumLabelFileBytes = 16 << 20

  /// Reads the layout and every label file; class indices must be below `classes` (the detector's).
  public init(url: URL, classes: Int) throws {
    let manager = FileManager.default
    func isFolder(_ url: URL) -> Bool {
      var flag: ObjCBool = false
      return manager.fileExists(atPath: url.path, isDirectory: &flag) && flag.boolValue
    }
    let images: URL
    if isFolder(url.appendingPathComponent("images")) {
      images = url.appendingPathComponent("images")
    } else if url.lastPathComponent == "images", isFolder(url) {
      images = url
    } else {
      throw PredictionError.notALabelledFolder(
        path: url.path,
        detail:
          "is not a detection dataset: expected an images/ folder with the photos and a labels/ folder beside it (one 'class cx cy w h' line per object, as Ultralytics lays datasets out)"
      )
    }
    let labels = images.deletingLastPathComponent().appendingPathComponent("labels")
    self.images = images
    self.labels = labels
    var items: [Item] = []
    var skipped: [String] = []
    var duplicates = 0
    let files =
      (manager.enumerator(at: images, includingPropertiesForKeys: nil, options: [.skipsHiddenFiles])?.allObjects
        as? [URL]) ?? []
    let root = images.standardizedFileURL.path
    for file in files.map(\.standardizedFileURL).sorted(by: { $0.path < $1.path }) where !isFolder(file) {
      let relative = String(file.path.dropFirst(root.count + (root.hasSuffix("/") ? 0 : 1)))
      guard LabelledFolder.extensions.contains(file.pathExtension.lowercased()) else {
        skipped.append(relative)
        continue
      }
      let labelFile = labels.appendingPathComponent(relative).deletingPathExtension().appendingPathExtension("txt")
      var objects: [LabelledObject] = []
      let hasLabels = manager.fileExists(atPath: labelFile.path)
      if hasLabels {
        let (read, repeated) = try Self.objects(in: labelFile, classes: classes)
        objects = read
        duplicates += repeated
      }
      items.append(Item(path: relative, objects: objects, hasLabelFile: hasLabels))
    }
    guard !items.isEmpty else {
      throw PredictionError.notALabelledFolder(path: images.path, detail: "has no PNG or JPEG images")
    }
    self.items = items
    self.skipped = skipped
    duplicateLines = duplicates
  }

  /// The objects of one label file, and how many repeated lines were dropped.
  static func objects(in file: URL, classes: Int) throws -> ([LabelledObject], Int) {
    let attributes = try? FileManager.default.attributesOfItem(atPath: file.path)
    if let size = attributes?[.size] as? Int, size > maximumLabelFileBytes {
      throw PredictionError.notALabelledFolder(
        path: file.path,
        detail: "is \(size) bytes, more than the \(maximumLabelFileBytes >> 20) MiB a label file may have")
    }
    guard let data = FileManager.default.contents(atPath: file.path) else {
      throw PredictionError.notALabelledFolder(path: file.path, detail: "cannot be read")
    }
    guard let text = String(data: data, encoding: .utf8) else {
      throw PredictionError.notALabelledFolder(path: file.path, detail: "is not UTF-8 text")
    }
    var objects: [LabelledObject] = []
    var seen = Set<String>()
    var repeated = 0
    for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
      let fields = line.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
      guard !fields.isEmpty else { continue }
      func fail(_ detail: String) -> PredictionError {
        .notALabelledFolder(path: "\(file.path):\(number + 1):", detail: detail)
      }
      guard fields.count >= 5, fields.count % 2 == 1 else {
        throw fail(
          "has \(fields.count) values; a line is 'class cx cy w h' (or a class and polygon points x y ...)")
      }
      guard
        let classIndex = Int(fields[0]) ?? Double(fields[0]).flatMap({ $0 == $0.rounded() ? Int(exactly: $0) : nil })
      else { throw fail("class '\(fields[0])' is not a whole number") }
      guard classIndex >= 0, classIndex < classes else {
        throw fail("class \(classIndex) is not one of the detector's \(classes) classes (0 to \(classes - 1))")
      }
      var values: [Double] = []
      for field in fields.dropFirst() {
        guard let value = Double(field), value.isFinite, value >= 0, value <= 1 else {
          throw fail("'\(field)' is not a coordinate from 0 to 1 (boxes are normalized to the photo)")
        }
        values.append(value)
      }
      let key = fields.joined(separator: " ")
      guard seen.insert(key).inserted else {
        repeated += 1
        continue
      }
      let box: NonMaximumSuppression.Box
      if values.count == 4 {
        box = .init(x: values[0], y: values[1], width: values[2], height: values[3])
      } else {
        let xs = stride(from: 0, to: values.count, by: 2).map { values[$0] }
        let ys = stride(from: 1, to: values.count, by: 2).map { values[$0] }
        let (left, right, top, bottom) = (xs.min() ?? 0, xs.max() ?? 0, ys.min() ?? 0, ys.max() ?? 0)
        box = .init(x: (left + right) / 2, y: (top + bottom) / 2, width: right - left, height: bottom - top)
      }
      objects.append(LabelledObject(classIndex: classIndex, box: box))
    }
    return (objects, repeated)
  }
}
