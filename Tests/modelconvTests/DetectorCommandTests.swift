import Foundation
import ModelConverter
import TestSupport
import Testing

/// `predict` and `evaluate` on a detector converted by `convert --detector yolo`, against Ultralytics' own
/// postprocessing and mAP (`Samples/make_detector_fixtures.py`, `Samples/make_map_references.py`).
@Suite(.serialized) struct DetectorCommandTests {
  static let folder = Fixtures.url("onnx/detectors")

  /// The trained shapes detector as a neural network pipeline, converted once.
  static let converted: Result<URL, Error> = Result {
    let output = try Fixtures.temporaryDirectory().appendingPathComponent("Shapes.mlmodel")
    let result = try Modelconv.run([
      "convert", folder.appendingPathComponent("yolov8_shapes.onnx").path, "--detector", "yolo", "--image-input",
      "images", "--image-scale", "1/255", "-o", output.path,
    ])
    guard result.status == 0 else { throw CocoaError(.fileWriteUnknown, userInfo: ["stderr": result.stderr]) }
    return output
  }

  static func json(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  @Test func predictListsUltralyticsDetectionsAndDrawsThem() throws {
    let model = try Self.converted.get()
    let reference = try Self.json(
      String(
        decoding: try Data(contentsOf: Self.folder.appendingPathComponent("yolov8_shapes.detections.json")),
        as: UTF8.self))
    let images = try #require(reference["images"] as? [[String: Any]])
    let photo = Self.folder.appendingPathComponent("images/yolov8_shapes_0.png")
    let annotated = try Fixtures.temporaryDirectory().appendingPathComponent("boxes.png")
    let result = try Modelconv.run(["predict", model.path, photo.path, "--json", "--annotate", annotated.path])
    #expect(result.status == 0, "\(result.stderr)")
    let document = try Self.json(result.stdout)
    #expect(document["schema"] as? String == "modelconv.predict-detection/1")
    let found = try #require(((document["images"] as? [[String: Any]])?.first?["detections"]) as? [[String: Any]])
    // Ultralytics' per-class run at conf 0.25, IoU 0.45 (the pipeline's defaults) on the same photo.
    let runs = try #require(
      images.first { ($0["image"] as? String) == "images/yolov8_shapes_0.png" }?["runs"] as? [[String: Any]])
    let expected = try #require(runs.first { $0["run"] as? String == "per_class" }?["detections"] as? [[String: Any]])
    #expect(found.count == expected.count && !expected.isEmpty)
    for (ours, theirs) in zip(found, expected) {
      #expect(ours["label"] as? String == theirs["name"] as? String)
      let confidence = try #require(ours["confidence"] as? Double)
      #expect(abs(confidence - (try #require(theirs["confidence"] as? Double))) < 1e-4)
    }
    // The annotated photo: the input's size, the first box's left edge drawn over, far corners untouched
    // unless a box reaches them.
    let original = try ImageFile.read(contentsOf: photo)
    let drawn = try ImageFile.read(contentsOf: annotated)
    #expect(drawn.width == original.width && drawn.height == original.height)
    let pixels = try #require(found.first?["pixels"] as? [String: Double])
    let x = Int((pixels["left"] ?? 0).rounded())
    let y = Int(((pixels["top"] ?? 0) + (pixels["height"] ?? 0) / 2).rounded())
    #expect(drawn[x, y] != original[x, y])
    let changed = stride(from: 0, to: drawn.pixels.count, by: 3).filter {
      drawn.pixels[$0..<$0 + 3] != original.pixels[$0..<$0 + 3]
    }
    #expect(changed.count > 100 && changed.count < original.width * original.height / 2)
  }

  @Test func predictRefusesToAnnotateOverItsInputsOrForAClassifier() throws {
    let model = try Self.converted.get()
    let photo = Self.folder.appendingPathComponent("images/yolov8_shapes_1.png")
    let before = try Data(contentsOf: model)
    let over = try Modelconv.run(["predict", model.path, photo.path, "--annotate", model.path])
    #expect(over.status == 64 && over.stderr.contains("would destroy it"))
    #expect(try Data(contentsOf: model) == before)
    let classifier = try Modelconv.run([
      "predict", Fixtures.digits.appendingPathComponent("digits_cnn.h5").path, photo.path, "--annotate", "x.png",
    ])
    #expect(classifier.status == 64 && classifier.stderr.contains("--annotate applies to object detectors"))
  }

  @Test func evaluateReportsUltralyticsMapAndAgreement() throws {
    let model = try Self.converted.get()
    let references = try Self.json(
      String(
        decoding: try Data(contentsOf: Self.folder.appendingPathComponent("shapes_val/map_references.json")),
        as: UTF8.self))
    let run = try #require((references["runs"] as? [[String: Any]])?.first { $0["name"] as? String == "single_label" })
    let result = try Modelconv.run([
      "evaluate", model.path, Self.folder.appendingPathComponent("shapes_val").path, "--map-method", "ultralytics",
      "--against", Self.folder.appendingPathComponent("yolov8_shapes.onnx").path, "--detector", "yolo",
      "--image-scale", "1/255", "--json",
    ])
    #expect(result.status == 0, "\(result.stderr)")
    let report = try Self.json(result.stdout)
    #expect(report["schema"] as? String == "modelconv.evaluate-detection/1")
    let ours = try #require(report["model"] as? [String: Any])
    let theirs = try #require(run["ultralytics"] as? [String: Any])
    #expect(abs((ours["map50to95"] as? Double ?? 0) - (theirs["mAP50-95"] as? Double ?? 1)) < 1e-6)
    #expect(abs((ours["map50"] as? Double ?? 0) - (theirs["mAP50"] as? Double ?? 1)) < 1e-6)
    let agreement = try #require(report["agreement"] as? [String: Any])
    #expect(agreement["missing"] as? Double == 0 && agreement["extra"] as? Double == 0)
  }

  @Test func evaluateNamesTheBadLabelLine() throws {
    let model = try Self.converted.get()
    let root = try Fixtures.temporaryDirectory()
    try FileManager.default.createDirectory(
      at: root.appendingPathComponent("images"), withIntermediateDirectories: true)
    try FileManager.default.createDirectory(
      at: root.appendingPathComponent("labels"), withIntermediateDirectories: true)
    try FileManager.default.copyItem(
      at: Self.folder.appendingPathComponent("images/yolov8_shapes_2.png"),
      to: root.appendingPathComponent("images/a.png"))
    try Data("0 0.5 0.5 0.1 0.1\n7 0.5 0.5 0.1 0.1\n".utf8).write(to: root.appendingPathComponent("labels/a.txt"))
    let result = try Modelconv.run(["evaluate", model.path, root.path])
    #expect(result.status == 65)
    #expect(
      result.stderr.contains("labels/a.txt:2: class 7 is not one of the detector's 3 classes"), "\(result.stderr)")
  }
}
