import CoreMLFormat
import Foundation
import ImageFormat
import KerasFormat
import ModelIR
import ReferenceRuntime

/// A model loaded to classify photos: a Keras file, fed pixels preprocessed as it was trained
/// (`ImageModelOptions.preprocessing`), or a converted Core ML model (`.mlmodel` or `.mlpackage`), fed
/// 0-255 pixels that its own image scaler preprocesses, as Core ML does on a device.
public struct ImageModel: Sendable {
  /// What a photo becomes before the network sees it.
  public struct Input: Sendable, Equatable, Codable {
    public var name: String
    public var width: Int
    public var height: Int
    /// `GRAYSCALE`, `RGB` or `BGR`: the channel order the network receives.
    public var colorSpace: String
    /// `network input = scale * pixel + bias[channel]`, biases in the network's channel order.
    public var scale: Float
    public var biases: [Float]
  }

  /// `keras`, `neuralNetwork` or `mlProgram`.
  public let kind: String
  public let path: String
  public let input: Input
  /// One per class, in output order (the class index as text when the model names none).
  public let labels: [String]
  let graph: Graph
  let interpreter: Interpreter
  /// The graph output holding the class scores.
  let scoresOutput: Int
  /// The graph input's shape and whether it is channels-first (`[..., C, H, W]`, Core ML) or `[H, W, C]`.
  let inputShape: [Int]
  let channelsFirst: Bool
  /// Whether the graph applies the scale and biases itself (Core ML image inputs).
  let graphPreprocesses: Bool

  /// Loads a Keras file (`.h5`, `.keras`) or a Core ML model, recognised by content and name.
  public static func load(contentsOf url: URL, options: ImageModelOptions = ImageModelOptions()) throws -> ImageModel {
    // TODO(issue 19): load any ImportedSource (its graph is in the IR's conventions) instead of one loader per format.
    switch try Frontends.frontend(for: url) {
    case is CoreMLFrontend: return try loadCoreML(url, options: options)
    default: return try loadKeras(url, options: options)
    }
  }

  static func loadKeras(_ url: URL, options: ImageModelOptions) throws -> ImageModel {
    let keras = try KerasModelFile(path: url.path)
    let graph = try KerasConverter.importGraph(keras, options: ConversionOptions(inputShapes: options.inputShapes))
    guard graph.inputs.count == 1 else { throw PredictionError.notAnImageModel(path: url.path, detail: "it has \(graph.inputs.count) inputs; a photo fills one") }
    let shape = graph[graph.inputs[0]].type.shape
    guard shape.count == 3, shape[2] == 1 || shape[2] == 3 else {
      throw PredictionError.notAnImageModel(path: url.path, detail: "its input has shape \(shape); a photo needs [H, W, 1] or [H, W, 3]")
    }
    let preprocessing = options.preprocessing ?? ImagePreprocessing()
    let space = shape[2] == 1 ? "GRAYSCALE" : preprocessing.isBGR ? "BGR" : "RGB"
    let input = Input(
      name: graph[graph.inputs[0]].name, width: shape[1], height: shape[0], colorSpace: space, scale: preprocessing.scale,
      biases: preprocessing.networkBiases(channels: shape[2]))
    let width = graph[graph.outputs[0]].type.elementCount
    let labels = try labels(options.labels?.descriptions, count: width, path: url.path)
    return ImageModel(
      kind: "keras", path: url.path, input: input, labels: labels, graph: graph, interpreter: Interpreter(graph: graph), scoresOutput: 0,
      inputShape: shape, channelsFirst: false, graphPreprocesses: false)
  }

  static func loadCoreML(_ url: URL, options: ImageModelOptions) throws -> ImageModel {
    let model = try CoreMLGraphImporter.importModel(contentsOf: url)
    guard model.inputs.count == 1, let first = model.inputs.first else {
      throw PredictionError.notAnImageModel(path: url.path, detail: "it has \(model.inputs.count) inputs; a photo fills one")
    }
    guard let image = first.image else {
      throw PredictionError.notAnImageModel(
        path: url.path, detail: "its input '\(first.name)' is a multiarray, not an image (convert it with an image input to feed photos)")
    }
    let shape = first.shape
    let input = Input(name: first.name, width: shape[shape.count - 1], height: shape[shape.count - 2], colorSpace: image.colorSpace, scale: image.scale, biases: image.biases)
    let index = model.probabilitiesOutput.flatMap { name in model.graph.outputs.firstIndex { model.graph[$0].name == name } } ?? 0
    let width = model.graph[model.graph.outputs[index]].type.elementCount
    let given = options.labels?.descriptions ?? (model.classLabels.isEmpty ? nil : model.classLabels)
    return ImageModel(
      kind: model.spec.modelType == "mlProgram" ? "mlProgram" : "neuralNetwork", path: url.path, input: input,
      labels: try labels(given, count: width, path: url.path), graph: model.graph, interpreter: Interpreter(graph: model.graph),
      scoresOutput: index, inputShape: shape, channelsFirst: true, graphPreprocesses: true)
  }

  static func labels(_ given: [String]?, count: Int, path: String) throws -> [String] {
    guard let given else { return (0..<count).map(String.init) }
    guard given.count == count else { throw PredictionError.labelCountMismatch(path: path, labels: given.count, outputs: count) }
    return given
  }

  /// The network input for a photo: fitted to the input size, in its color space, preprocessed unless
  /// the graph does that itself.
  public func tensor(for photo: RGBImage, cropAndScale: CropAndScale) -> Tensor {
    let fitted = ImageScaling.fit(photo, width: input.width, height: input.height, option: cropAndScale)
    let channels = input.colorSpace == "GRAYSCALE" ? 1 : 3
    let plane = input.width * input.height
    var hwc = [Float](repeating: 0, count: plane * channels)
    if channels == 1 {
      for (i, value) in ImageScaling.grayscale(fitted).enumerated() { hwc[i] = Float(value) }
    } else {
      let order = input.colorSpace == "BGR" ? [2, 1, 0] : [0, 1, 2]
      for i in 0..<plane { for c in 0..<3 { hwc[i * 3 + c] = Float(fitted.pixels[i * 3 + order[c]]) } }
    }
    if !graphPreprocesses {
      for i in hwc.indices { hwc[i] = input.scale * hwc[i] + input.biases[i % channels] }
    }
    guard channelsFirst else { return Tensor(shape: inputShape, values: hwc) }
    var chw = [Float](repeating: 0, count: hwc.count)
    for i in 0..<plane { for c in 0..<channels { chw[c * plane + i] = hwc[i * channels + c] } }
    return Tensor(shape: inputShape, values: chw)
  }

  /// The class scores for a photo, best first.
  public func classify(_ photo: RGBImage, cropAndScale: CropAndScale = .centerCrop) -> Classification {
    let scores = interpreter.run([tensor(for: photo, cropAndScale: cropAndScale)])[scoresOutput].values
    return Classification(labels: labels, scores: scores)
  }
}

/// How to load a model for `ImageModel`.
public struct ImageModelOptions: Sendable, Equatable {
  /// For a Keras file: the preprocessing it was trained with (scale, biases, BGR), as given to `convert`.
  /// Core ML models carry their own.
  public var preprocessing: ImagePreprocessing?
  /// Class names in output order; a Core ML classifier's own labels are used when nil.
  public var labels: ClassLabels?
  /// Fixed sizes for unknown Keras input dimensions (`1,H,W,C`).
  public var inputShapes: [String: [Int]]

  public init(preprocessing: ImagePreprocessing? = nil, labels: ClassLabels? = nil, inputShapes: [String: [Int]] = [:]) {
    self.preprocessing = preprocessing
    self.labels = labels
    self.inputShapes = inputShapes
  }
}

/// Class scores, best first.
public struct Classification: Sendable, Equatable, Codable {
  public struct Entry: Sendable, Equatable, Codable {
    public var label: String
    /// The model's output for the class (a probability when the model ends in a softmax).
    public var probability: Float
  }
  /// Every class, by decreasing score (ties in output order).
  public var ranked: [Entry]
  /// The index of each ranked entry's class in the output.
  public var classIndices: [Int]

  public init(labels: [String], scores: [Float]) {
    let order = scores.indices.sorted { scores[$0] > scores[$1] || (scores[$0] == scores[$1] && $0 < $1) }
    ranked = order.map { Entry(label: labels[$0], probability: scores[$0]) }
    classIndices = order
  }

  /// The best `k` entries.
  public func top(_ k: Int) -> [Entry] { Array(ranked.prefix(k)) }
}

/// Why a model cannot classify photos.
public enum PredictionError: Error, Equatable, CustomStringConvertible {
  case notAnImageModel(path: String, detail: String)
  case labelCountMismatch(path: String, labels: Int, outputs: Int)
  case notALabelledFolder(path: String, detail: String)
  /// No subfolder is named after a label of the model (even ignoring case).
  case noImagesForModelLabels(folder: String, folderLabels: [String], modelLabels: [String])

  public var description: String {
    switch self {
    case .notAnImageModel(let path, let detail): return "\(path): cannot classify photos: \(detail)"
    case .labelCountMismatch(let path, let labels, let outputs): return "\(path): \(labels) labels given for \(outputs) outputs"
    case .notALabelledFolder(let path, let detail): return "\(path) \(detail)"
    case .noImagesForModelLabels(let folder, let folderLabels, let modelLabels):
      return "\(folder): no subfolder is named after a label of the model, so no image can be scored; folders: "
        + folderLabels.prefix(10).joined(separator: ", ") + (folderLabels.count > 10 ? ", ..." : "") + "; model labels: "
        + modelLabels.prefix(10).joined(separator: ", ") + (modelLabels.count > 10 ? ", ..." : "")
        + " (name the folders after the labels, or give the labels with --labels in the model's output order)"
    }
  }
}

extension PredictionError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
