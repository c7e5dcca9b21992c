import Foundation
import ModelConverter
import ModelFormats

/// `predict` and `evaluate` with an object detector: a converted pipeline, or a source network with `--detector`.
extension PredictCommand {
  /// Whether the command runs a detector: `--detector` given, or the model is a detector pipeline.
  static func isDetector(_ path: String, _ parsed: ParsedArguments) throws -> Bool {
    if parsed.isGiven(Options.detector) { return true }
    return try ObjectDetector.isDetector(at: URL(fileURLWithPath: path))
  }

  /// Refuses the detector-only options for a model that is no detector.
  static func refuseDetectorOptions(_ parsed: ParsedArguments, model: String) throws {
    let only = Options.detectorSettings + [Options.annotate, Options.mapMethod]
    if let given = only.first(where: { parsed.isDeclared($0) && parsed.isGiven($0) }) {
      throw UsageError(
        message:
          "\(given.key) applies to object detectors: \(model) is not a detector pipeline (give --detector yolo to run a source network as one)"
      )
    }
  }

  /// The detector with the command's options: a pipeline as it is (its own thresholds; only they may
  /// be replaced), a source network decoded and suppressed as `--detector` and its settings say.
  static func loadDetector(_ path: String, _ parsed: ParsedArguments) throws -> ObjectDetector {
    let url = URL(fileURLWithPath: path)
    var options = ObjectDetectorOptions()
    options.labels = try parsed.classLabels()
    options.inputShapes = try parsed.inputShapes()
    if try ObjectDetector.isDetector(at: url) {
      if let fixed = [Options.agnosticNMS, Options.maxDetections].first(where: parsed.isGiven) {
        throw UsageError(
          message:
            "\(fixed.key) cannot change \(path): a detector pipeline's suppression is part of the model (only its thresholds are inputs); convert it again to change it"
        )
      }
    } else {
      options.detector = try ConvertCommand.detector(parsed)
      options.preprocessing = try ImagePreprocessingOptions.preprocessing(parsed)
    }
    return try ObjectDetector.load(contentsOf: url, options: options)
  }

  static func runDetector(_ parsed: ParsedArguments) throws -> ExitCode {
    let modelPath = parsed.positionals[0]
    let paths = Array(parsed.positionals.dropFirst())
    let annotate = parsed.value(Options.annotate)
    if let annotate, paths.count == 1 {
      try ConvertCommand.checkOutput(annotate, inputs: parsed.positionals + labelsFiles(parsed))
    }
    let detector = try loadDetector(modelPath, parsed)
    if detector.kind == "pipeline", Options.imagePreprocessing.contains(where: parsed.isGiven) {
      Console.warning(
        "\(modelPath) applies its own image preprocessing; --image-scale and the bias options are ignored")
    }
    let thresholds = try ConvertCommand.detectorThresholds(parsed)
    let iou = thresholds.iou ?? detector.suppression.iouThreshold
    let confidence = thresholds.confidence ?? detector.suppression.confidenceThreshold
    var images: [JSONValue] = []
    var lines: [String] = []
    var failed = false
    var written = Set<String>()
    for (index, path) in paths.enumerated() {
      do {
        let photo = try ImageFile.read(contentsOf: URL(fileURLWithPath: path))
        let objects = try detector.detect(photo, iouThreshold: iou, confidenceThreshold: confidence)
        if let annotate {
          let target = paths.count == 1 ? annotate : try annotationPath(in: annotate, for: path, index, &written)
          if paths.count > 1 {
            try ConvertCommand.checkOutput(target, inputs: parsed.positionals + labelsFiles(parsed))
          }
          guard let png = ImageFile.pngData(ObjectDetector.annotated(photo, with: objects)) else {
            throw OutputError(path: target, reason: "the annotated photo could not be encoded as PNG")
          }
          try writeOutput(png, to: target)
        }
        images.append(
          .object([("path", .string(path)), ("error", .null), ("detections", .array(objects.map(detectionJSON)))]))
        lines.append("\(path): \(objects.count) object\(objects.count == 1 ? "" : "s")")
        for object in objects {
          let p = object.pixels
          lines.append(
            "  \(object.label) \(String(format: "%.1f%%", object.confidence * 100)) at "
              + String(format: "%.0f,%.0f %.0fx%.0f px", p[0], p[1], p[2], p[3]))
        }
      } catch let error as UsageError {
        throw error
      } catch let error as OutputError {
        throw error
      } catch {
        failed = true
        Console.error(String(describing: error))
        images.append(.object([("path", .string(path)), ("error", .string("\(error)")), ("detections", .null)]))
      }
    }
    if parsed.flag(Options.json) {
      Console.out(
        JSONValue.object([
          ("schema", .string("modelconv.predict-detection/1")),
          ("detector", detectorJSON(detector, iou: iou, confidence: confidence)),
          ("images", .array(images)),
        ]).rendered)
    } else {
      let rule = detector.suppression.perClass ? "per class" : "across classes"
      Console.out(
        (["\(modelPath): \(classCount(detector)), IoU threshold \(iou) (\(rule)), confidence threshold \(confidence)"]
          + lines).joined(separator: "\n"))
    }
    return failed ? .failure : .success
  }

  /// "3 classes", or "3 classes (80 columns, 77 of them padding)".
  static func classCount(_ detector: ObjectDetector) -> String {
    let padding = detector.paddingClasses
    let named = detector.labels.count - padding
    return "\(named) class\(named == 1 ? "" : "es")"
      + (padding > 0 ? " (\(detector.labels.count) columns, \(padding) of them padding)" : "")
  }

  static func labelsFiles(_ parsed: ParsedArguments) -> [String] {
    [parsed.value(Options.labelsFile)].compactMap { $0 }
  }

  /// `FOLDER/<photo name>.png` for one of several photos (the folder made when missing; a name taken by an
  /// earlier photo gets the photo's position).
  static func annotationPath(in folder: String, for photo: String, _ index: Int, _ taken: inout Set<String>) throws
    -> String
  {
    var isFolder: ObjCBool = false
    if FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder) {
      guard isFolder.boolValue else {
        throw UsageError(message: "--annotate \(folder) must be a folder when several photos are given")
      }
    } else {
      do { try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true) } catch {
        throw OutputError(path: folder, reason: (error as NSError).localizedDescription)
      }
    }
    let stem = URL(fileURLWithPath: photo).deletingPathExtension().lastPathComponent
    var name = stem + ".png"
    if taken.contains(name) { name = "\(stem)-\(index + 1).png" }
    taken.insert(name)
    return URL(fileURLWithPath: folder).appendingPathComponent(name).path
  }

  static func detectionJSON(_ object: DetectedObject) -> JSONValue {
    .object([
      ("label", .string(object.label)), ("classIndex", .number(Double(object.classIndex))),
      ("confidence", .number(object.confidence)),
      (
        "box",
        .object(zip(["x", "y", "width", "height"], object.box).map { ($0, JSONValue.number($1)) })
      ),
      (
        "pixels",
        .object(zip(["left", "top", "width", "height"], object.pixels).map { ($0, JSONValue.number($1)) })
      ),
    ])
  }

  static func detectorJSON(_ detector: ObjectDetector, iou: Double, confidence: Double) -> JSONValue {
    .object([
      ("path", .string(detector.path)), ("kind", .string(detector.kind)),
      ("width", .number(Double(detector.width))), ("height", .number(Double(detector.height))),
      ("labels", .array(detector.labels.map { .string($0) })), ("iouThreshold", .number(iou)),
      ("confidenceThreshold", .number(confidence)), ("perClass", .bool(detector.suppression.perClass)),
      ("maximumDetections", detector.suppression.maximumBoxes.map { .number(Double($0)) } ?? .null),
    ])
  }
}
