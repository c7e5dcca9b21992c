import Foundation
import ModelConverter
import TestSupport
import Testing

/// Detection datasets in Ultralytics' layout: `images/` and `labels/` side by side, a line per object.
@Suite struct DetectionDatasetTests {
  static func dataset(labels: [String: String], images: [String]) throws -> URL {
    let root = try Fixtures.temporaryDirectory()
    let png = try Data(contentsOf: Fixtures.url("onnx/detectors/shapes_val/images/shapes_40000.png"))
    for image in images {
      let url = root.appendingPathComponent("images/" + image)
      try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try png.write(to: url)
    }
    for (path, text) in labels {
      let url = root.appendingPathComponent("labels/" + path)
      try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
      try Data(text.utf8).write(to: url)
    }
    return root
  }

  @Test func readsBoxesPolygonsAndBackgroundPhotos() throws {
    let root = try Self.dataset(
      labels: [
        "val/a.txt": "0 0.5 0.5 0.2 0.4\n\n2 0.1 0.1 0.3 0.1 0.2 0.5\n0 0.5 0.5 0.2 0.4\n",
        "val/notes.txt": "not a photo's labels",
      ],
      images: ["val/a.png", "val/b.png", "val/readme.md"])
    let dataset = try DetectionDataset(url: root, classes: 3)
    #expect(dataset.items.map(\.path) == ["val/a.png", "val/b.png"])
    #expect(dataset.skipped == ["val/readme.md"])
    #expect(dataset.duplicateLines == 1)
    let objects = dataset.items[0].objects
    #expect(objects.count == 2)
    #expect(objects[0].classIndex == 0 && objects[0].box == .init(x: 0.5, y: 0.5, width: 0.2, height: 0.4))
    // Polygon (0.1, 0.1), (0.3, 0.1), (0.2, 0.5): the box around it.
    #expect(objects[1].classIndex == 2)
    #expect(abs(objects[1].box.x - 0.2) < 1e-12 && abs(objects[1].box.y - 0.3) < 1e-12)
    #expect(abs(objects[1].box.width - 0.2) < 1e-12 && abs(objects[1].box.height - 0.4) < 1e-12)
    #expect(dataset.items[1].objects.isEmpty && !dataset.items[1].hasLabelFile)
    // The images folder itself names the same dataset.
    #expect(try DetectionDataset(url: root.appendingPathComponent("images"), classes: 3).items == dataset.items)
  }

  @Test(arguments: [
    ("3 0.5 0.5 0.1 0.1", "a.txt:1: class 3 is not one of the detector's 3 classes"),
    ("0 0.5 0.5 0.1", "a.txt:1: has 4 values"),
    ("0 0.5 0.5 0.1 0.1\n1 0.5 1.5 0.1 0.1", "a.txt:2: '1.5' is not a coordinate from 0 to 1"),
    ("0 0.5 nan 0.1 0.1", "a.txt:1: 'nan' is not a coordinate"),
    ("x 0.5 0.5 0.1 0.1", "a.txt:1: class 'x' is not a whole number"),
  ])
  func refusesBadLabelLinesNamingFileAndLine(_ text: String, _ message: String) throws {
    let root = try Self.dataset(labels: ["a.txt": text], images: ["a.png"])
    let error = #expect(throws: PredictionError.self) { try DetectionDataset(url: root, classes: 3) }
    #expect(error.map { "\($0)".contains(message) } == true, "\(String(describing: error))")
  }

  @Test func aFolderWithoutImagesIsRefused() throws {
    let root = try Fixtures.temporaryDirectory()
    let error = #expect(throws: PredictionError.self) { try DetectionDataset(url: root, classes: 3) }
    #expect(error.map { "\($0)".contains("expected an images/ folder") } == true)
  }
}
