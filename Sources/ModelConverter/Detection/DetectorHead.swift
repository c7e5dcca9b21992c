import ModelIR
import ReferenceRuntime

/// The first stage of a detector pipeline: the network, then the decoding of its raw output into the two
/// arrays Core ML's non-maximum suppression takes (`DetectorDecoding` says what they hold): `confidence`
/// `[anchors, classes]` and `coordinates` `[anchors, 4]` (centre x, centre y, width, height divided by the
/// input image's width and height).
///
/// The decoding is written as graph nodes after the network's output (a transpose, slices and products),
/// so both writers carry it and every later pass sees it; the reference runtime's `DetectorDecoding` is
/// its oracle.
public struct DetectorHead: Sendable, Equatable {
  /// Names the two decoded outputs take.
  public static let confidenceName = "raw_confidence"
  public static let coordinatesName = "raw_coordinates"

  public var decoding: DetectorDecoding
  public var anchors: Int
  public var classes: Int
  /// The confidence columns written: `classes`, or more when padded with zero confidences
  /// (`DetectorOptions.padsProgramClasses`).
  public var writtenClasses: Int
  /// The input image's size in pixels.
  public var width: Int
  public var height: Int

  public init(
    decoding: DetectorDecoding, anchors: Int, classes: Int, width: Int, height: Int, writtenClasses: Int? = nil
  ) {
    self.decoding = decoding
    self.anchors = anchors
    self.classes = classes
    self.writtenClasses = writtenClasses ?? classes
    self.width = width
    self.height = height
  }

  public enum Failure: Error, Equatable, CustomStringConvertible {
    /// The graph has no single output or image-like input the decoding can use.
    case notADetector(String)

    public var description: String {
      switch self {
      case .notADetector(let detail): return "not a detector this decoding reads: \(detail)"
      }
    }
  }

  /// The layout a raw output of `shape` (unit axes in front allowed) has. With `classes` known (the
  /// labels), the layout that has that many; else `[4 + classes, anchors]` when its rows are not more than
  /// its columns (YOLOv8, YOLO11: anchors outnumber classes but for tiny inputs, where they may be equal),
  /// else `[anchors, 5 + classes]` (YOLOv5's objectness).
  public static func decoding(forOutputShape shape: [Int], classes: Int? = nil) -> DetectorDecoding? {
    let dims = Array(shape.drop { $0 == 1 })
    guard dims.count == 2 else { return nil }
    if let classes {
      if dims[0] == 4 + classes { return .anchorsLast }
      if dims[1] == 5 + classes { return .objectness }
    }
    return dims[0] <= dims[1] ? .anchorsLast : .objectness
  }

  /// Refuses a network whose export already ends in its suppression, as Ultralytics' metadata says
  /// (`end2end: True` for YOLOv10 and YOLO26 heads, `'nms': True` in the export's `args`): its output
  /// rows are finished detections (box corners, score, class), which the decoding would misread.
  public static func checkNotEndToEnd(metadata: [String: String]) throws {
    let endToEnd = metadata["end2end"]?.lowercased() == "true"
    let suppressed = metadata["args"].map { $0.contains("'nms': True") } ?? false
    guard endToEnd || suppressed else { return }
    throw Failure.notADetector(
      "the network already ends in its own suppression (Ultralytics metadata "
        + (endToEnd ? "end2end: True" : "args nms: True")
        + "): its rows are finished detections, not the raw head; export it with nms=False (and end2end=False where the model allows it)"
    )
  }

  /// Appends the decoding after `graph`'s single output, whose input is `[H, W, C]`; the graph's outputs
  /// become `raw_confidence` and `raw_coordinates`; `expectedClasses` (the labels' count) tells the layout
  /// when the shape leaves it open. `classesWritten(classes)` gives the confidence
  /// columns written, the ones past the network's classes zeros.
  public static func append(
    to graph: inout Graph, decoding given: DetectorDecoding? = nil, expectedClasses: Int? = nil,
    classesWritten: (Int) -> Int = { $0 }
  ) throws -> DetectorHead {
    guard graph.outputs.count == 1, let output = graph.outputs.first else {
      throw Failure.notADetector("the network has \(graph.outputs.count) outputs; a YOLO detector has one")
    }
    guard graph.inputs.count == 1, let input = graph.inputs.first, graph[input].type.shape.count == 3 else {
      throw Failure.notADetector("the network needs one image input (height, width, channels)")
    }
    let (height, width) = (graph[input].type.shape[0], graph[input].type.shape[1])
    let shape = graph[output].type.shape
    guard let decoding = given ?? decoding(forOutputShape: shape, classes: expectedClasses) else {
      throw Failure.notADetector("its output has shape \(shape), not [1, rows, columns]")
    }
    let classes: Int
    do { classes = try decoding.classes(inOutputOf: Array(shape.drop { $0 == 1 })) } catch {
      throw Failure.notADetector("\(error)")
    }
    let fields = decoding == .anchorsLast ? 4 : 5
    let rows = Array(shape.drop { $0 == 1 })
    let anchors = decoding == .anchorsLast ? rows[1] : rows[0]

    var builder = GraphBuilder(continuing: graph)
    var table = output
    if rows != shape { table = try builder.add(.reshape(targetShape: rows), name: "detector_rows", inputs: [table]) }
    // Anchors first: one row per anchor, its fields in the columns.
    if decoding == .anchorsLast {
      table = try builder.add(.permute(order: [1, 0]), name: "detector_anchors_first", inputs: [table])
    }
    func columns(_ from: Int, _ to: Int, _ name: String) throws -> ValueID {
      try builder.add(
        .slice(StridedSlice(begin: [0, from], end: [anchors, to], strides: [1, 1])), name: name, inputs: [table])
    }
    let boxes = try columns(0, 4, "detector_boxes")
    let scale: [Float] = [1 / Float(width), 1 / Float(height), 1 / Float(width), 1 / Float(height)]
    let factors = try builder.add(
      .constant(Constant(shape: [4], values: scale)), name: "detector_normalization", inputs: [])
    let coordinates = try builder.add(.elementwise(.multiply), name: coordinatesName, inputs: [boxes, factors])
    var confidence = try columns(fields, fields + classes, "detector_classes")
    if decoding == .objectness {
      let objectness = try columns(4, 5, "detector_objectness")
      confidence = try builder.add(.elementwise(.multiply), name: confidenceName, inputs: [confidence, objectness])
    }
    let written = classesWritten(classes)
    guard written >= classes else {
      throw Failure.notADetector("\(written) confidence columns written for \(classes) classes")
    }
    if written > classes {
      confidence = try builder.add(
        .constantPad(ConstantPadding(before: [0, 0], after: [0, written - classes], value: 0)),
        name: "detector_class_padding", inputs: [confidence])
    }
    var built = builder.build(outputs: [confidence, coordinates])
    try built.claimName(confidenceName, for: confidence)
    try built.claimName(coordinatesName, for: coordinates)
    graph = built
    return DetectorHead(
      decoding: decoding, anchors: anchors, classes: classes, width: width, height: height, writtenClasses: written)
  }
}
