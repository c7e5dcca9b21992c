import Foundation
import ImageFormat
import ModelFormats
import ModelIR
import ReferenceRuntime

/// A detector loaded to find objects in photos: a converted detector pipeline (`.mlmodel` or
/// `.mlpackage` written by `convert --detector`, or any network + non-maximum suppression pipeline),
/// run as Vision runs it (0-255 pixels into the network stage's own image preprocessing, then the
/// suppression as NonMaximumSuppression.proto documents it), or a source detector network with the
/// decoding and suppression `DetectorOptions` describe.
public struct ObjectDetector: Sendable {
  /// `pipeline` for a Core ML detector, else the source's kind (`onnx`, ...).
  public let kind: String
  public let path: String
  /// The network's input size.
  public let width: Int
  public let height: Int
  /// One per confidence column (its index as text when the model names none).
  public let labels: [String]
  /// The trailing labels named `unused_N` (the columns `convert` pads an ML Program detector's classes
  /// with: their confidence is always zero).
  public var paddingClasses: Int { labels.reversed().prefix { $0.hasPrefix("unused_") }.count }
  /// The suppression run after the network (its thresholds the defaults `detect` may replace).
  public let suppression: NonMaximumSuppression
  let interpreter: Interpreter
  let inputShape: [Int]
  /// Pixels to network input: for a source, the preprocessing it was trained with; for a Core ML
  /// pipeline, none (its graph holds its image scaler), only the channel order.
  let preprocessing: ImagePreprocessing?
  let colorSpace: ImageColorSpace
  let confidenceOutput: Int
  let coordinatesOutput: Int
  let columns: Int

  /// Whether the file is a converted detector (a pipeline ending in non-maximum suppression) that
  /// `load` reads as it is, told from its description; a source network is never one by itself.
  public static func isDetector(at url: URL) throws -> Bool {
    guard let reader = try Frontends.frontend(for: url) as? any ReadBackReading else { return false }
    return try reader.describesDetector(at: url)
  }

  /// Loads a detector: a Core ML detector pipeline as it is, or a source network with `options`.
  public static func load(contentsOf url: URL, options: ObjectDetectorOptions = ObjectDetectorOptions()) throws
    -> ObjectDetector
  {
    let frontend = try Frontends.frontend(for: url)
    if let reader = frontend as? any ReadBackReading {
      let empty = GraphBuilder().build(outputs: [])
      let model = try reader.readBack(at: url, source: empty)
      guard let stage = model.detector else {
        throw PredictionError.notAnImageModel(
          path: url.path, detail: "it is not a detector (a pipeline ending in non-maximum suppression)")
      }
      return try pipeline(model, stage: stage, path: url.path, labels: options.labels)
    }
    let source = try frontend.importSource(at: url, options: SourceOptions(inputShapes: options.inputShapes))
    return try load(source, options: options)
  }

  /// A source detector network, decoded (`DetectorHead`) and suppressed with `options.detector`.
  public static func load(_ source: ImportedSource, options: ObjectDetectorOptions = ObjectDetectorOptions()) throws
    -> ObjectDetector
  {
    var graph = source.graph
    let settings = options.detector ?? DetectorOptions()
    let names =
      options.labels?.descriptions ?? source.metadata.userDefined["names"].flatMap(DetectorClassNames.parse)
    let head: DetectorHead
    do {
      try DetectorHead.checkNotEndToEnd(metadata: source.metadata.userDefined)
      head = try DetectorHead.append(to: &graph, decoding: settings.decoding, expectedClasses: names?.count)
    } catch {
      throw PredictionError.notAnImageModel(path: source.path, detail: "\(error)")
    }
    try Pipelines.runtime.run(&graph)
    let preprocessing =
      source.imageInputs[graph[graph.inputs[0]].name] ?? options.preprocessing ?? ImagePreprocessing()
    let shape = graph[graph.inputs[0]].type.shape
    return ObjectDetector(
      kind: source.modelKind, path: source.path, width: head.width, height: head.height,
      labels: try ImageModel.labels(names, count: head.classes, path: source.path),
      suppression: NonMaximumSuppression(
        iouThreshold: settings.iouThreshold, confidenceThreshold: settings.confidenceThreshold,
        perClass: !settings.agnostic, maximumBoxes: settings.maximumDetections),
      interpreter: Interpreter(graph: graph), inputShape: shape, preprocessing: preprocessing,
      colorSpace: preprocessing.colorSpace(channels: shape.last ?? 3), confidenceOutput: 0, coordinatesOutput: 1,
      columns: head.classes)
  }

  static func pipeline(_ model: ReadBackModel, stage: ReadBackModel.DetectorStage, path: String, labels: ClassLabels?)
    throws -> ObjectDetector
  {
    // As for a classifier: the runtime's rewrites only remove work (the transposes around the stage's
    // channels-first spatial layers).
    var graph = model.graph
    try Pipelines.runtime.run(&graph)
    // Core ML's image arrives channels first: [C, H, W], or [1, C, H, W] in a program or exact mapping.
    guard graph.inputs.count == 1, let input = model.inputs.first, input.image != nil,
      let space = input.colorSpace, input.shape.count == 3 || (input.shape.count == 4 && input.shape[0] == 1)
    else {
      throw PredictionError.notAnImageModel(
        path: path, detail: "its network stage does not take one image (inputs \(model.inputs))")
    }
    let outputs = graph.outputs.map { graph[$0].name }
    guard let confidence = outputs.firstIndex(of: stage.confidenceInput),
      let coordinates = outputs.firstIndex(of: stage.coordinatesInput)
    else {
      throw PredictionError.notAnImageModel(
        path: path,
        detail: "its suppression reads \(stage.confidenceInput) and \(stage.coordinatesInput), outputs \(outputs)")
    }
    let shape = graph[graph.outputs[confidence]].type.shape
    let columns = shape.last ?? 0
    guard columns > 0, graph[graph.outputs[coordinates]].type.elementCount == 4 * (shape.dropLast().reduce(1, *)) else {
      throw PredictionError.notAnImageModel(
        path: path, detail: "its network stage's outputs are not [boxes, classes] and [boxes, 4]")
    }
    let chw = Array(input.shape.suffix(3))
    let (height, width) = (chw[1], chw[2])
    let names = labels?.descriptions ?? (stage.labels.isEmpty ? nil : stage.labels)
    return ObjectDetector(
      kind: "pipeline", path: path, width: width, height: height,
      labels: try ImageModel.labels(names, count: columns, path: path), suppression: stage.suppression,
      interpreter: Interpreter(graph: graph), inputShape: input.shape, preprocessing: nil, colorSpace: space,
      confidenceOutput: confidence, coordinatesOutput: coordinates, columns: columns)
  }

  /// The network input for a photo, stretched to the input size (Vision's `scaleFill`, as Ultralytics'
  /// iOS app runs its detectors, so boxes map back to the photo by its own width and height).
  func tensor(for photo: RGBImage) -> Tensor {
    let fitted = ImageScaling.fit(photo, width: width, height: height, option: .scaleFill)
    let plane = width * height
    let gray = colorSpace == .grayscale
    let channels = gray ? 1 : 3
    var pixels = [Float](repeating: 0, count: plane * channels)
    if gray {
      for (i, value) in ImageScaling.grayscale(fitted).enumerated() { pixels[i] = Float(value) }
    } else {
      let order = colorSpace == .bgr ? [2, 1, 0] : [0, 1, 2]
      for i in 0..<plane { for c in 0..<3 { pixels[i * 3 + c] = Float(fitted.pixels[i * 3 + order[c]]) } }
    }
    if let preprocessing {
      let biases = preprocessing.networkBiases(channels: channels)
      let factors = preprocessing.channelScales ?? [Float](repeating: 1, count: channels)
      for i in pixels.indices {
        pixels[i] = (preprocessing.scale * pixels[i] + biases[i % channels]) * factors[i % channels]
      }
      return Tensor(shape: inputShape, values: pixels)
    }
    // A Core ML stage takes its pixels channels first.
    var chw = [Float](repeating: 0, count: pixels.count)
    for i in 0..<plane { for c in 0..<channels { chw[c * plane + i] = pixels[i * channels + c] } }
    return Tensor(shape: inputShape, values: chw)
  }

  /// The objects in a photo, most confident first; thresholds given replace the model's (as the
  /// pipeline's optional threshold inputs do).
  public func detect(_ photo: RGBImage, iouThreshold: Double? = nil, confidenceThreshold: Double? = nil) throws
    -> [DetectedObject]
  {
    let outputs = interpreter.run([tensor(for: photo)])
    let found = try Detection.detections(
      confidence: outputs[confidenceOutput].values.map(Double.init),
      coordinates: outputs[coordinatesOutput].values.map(Double.init), classes: columns, suppression: suppression,
      iouThreshold: iouThreshold, confidenceThreshold: confidenceThreshold)
    return found.map {
      DetectedObject($0, label: labels[$0.classIndex], photoWidth: photo.width, photoHeight: photo.height)
    }
  }

  /// The photo with each detection's box drawn in its class's colour and labelled with its label and
  /// confidence (`predict --annotate`).
  public static func annotated(_ photo: RGBImage, with objects: [DetectedObject]) -> RGBImage {
    ImageAnnotation.annotate(
      photo,
      boxes: objects.reversed().map {
        ImageAnnotation.Box(
          left: $0.pixels[0], top: $0.pixels[1], width: $0.pixels[2], height: $0.pixels[3],
          label: $0.label + String(format: " %.0f%%", $0.confidence * 100), colorIndex: $0.classIndex)
      })
  }
}

/// How to load a source network as an `ObjectDetector` (a Core ML pipeline carries its own settings).
public struct ObjectDetectorOptions: Sendable, Equatable {
  public var detector: DetectorOptions?
  /// For a source without image inputs: the preprocessing it was trained with.
  public var preprocessing: ImagePreprocessing?
  /// Class names in confidence order; the model's own when nil.
  public var labels: ClassLabels?
  public var inputShapes: [String: [Int]]

  public init(
    detector: DetectorOptions? = nil, preprocessing: ImagePreprocessing? = nil, labels: ClassLabels? = nil,
    inputShapes: [String: [Int]] = [:]
  ) {
    self.detector = detector
    self.preprocessing = preprocessing
    self.labels = labels
    self.inputShapes = inputShapes
  }
}

/// One object found in a photo.
public struct DetectedObject: Sendable, Equatable, Codable {
  public var label: String
  public var classIndex: Int
  public var confidence: Double
  /// Centre x, centre y, width, height divided by the photo's width and height (Vision's bounding box,
  /// but with y measured from the top).
  public var box: [Double]
  /// Left, top, width, height in the photo's pixels.
  public var pixels: [Double]

  init(_ detection: Detection, label: String, photoWidth: Int, photoHeight: Int) {
    self.label = label
    classIndex = detection.classIndex
    confidence = detection.confidence
    let b = detection.box
    box = [b.x, b.y, b.width, b.height]
    let (w, h) = (Double(photoWidth), Double(photoHeight))
    pixels = [(b.x - b.width / 2) * w, (b.y - b.height / 2) * h, b.width * w, b.height * h]
  }
}
