import Foundation
import ImageFormat
import ModelFormats
import ModelIR
import ReferenceRuntime

/// A model loaded to classify photos: a source file, fed pixels preprocessed as it was trained
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
    /// Per-channel factors after the bias (a std per channel), in the network's channel order; nil for none.
    public var channelScales: [Float]?
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
  /// The graph input's shape, `[H, W, C]`.
  let inputShape: [Int]
  /// The tensors one classification holds at most (`RuntimeMemory`, from the declared shapes), with what
  /// the runtime's kernels keep for the thread that runs it.
  public let bytesPerImage: Int
  /// Whether the preprocessing comes from the options (a source format without image inputs, such as
  /// a format without image inputs) rather than from the model itself.
  public let takesPreprocessingOptions: Bool
  /// A flexible image input (a Core ML model that declares several sizes): the `[height, width]` sizes it
  /// allows; nil when it has one size. `classifyAtNearestSize` runs each photo at the allowed size nearest
  /// its own.
  public internal(set) var allowedSizes: FlexibleInputShape?
  /// The model read at another allowed `[height, width]`.
  var atSize: (@Sendable ([Int]) throws -> ImageModel)?
  let sized = SizedModels()

  /// Loads a model of any registered source format, recognised by content.
  public static func load(contentsOf url: URL, options: ImageModelOptions = ImageModelOptions()) throws -> ImageModel {
    let frontend = try Frontends.frontend(for: url)
    let source = try frontend.importSource(at: url, options: SourceOptions(inputShapes: options.inputShapes))
    var model = try load(source, options: options)
    // Sizes in the source's terms: an image's [height, width].
    if let flexible = source.flexibleInputs[model.input.name], flexible.defaultShape.count == 2 {
      model.allowedSizes = flexible
      let name = model.input.name
      model.atSize = { size in
        var shapes = options.inputShapes
        shapes[name] = size
        return try load(frontend.importSource(at: url, options: SourceOptions(inputShapes: shapes)), options: options)
      }
    }
    return model
  }

  /// The allowed `[height, width]` nearest a photo's: a range clamps each side into its bounds; of enumerated
  /// sizes, the one whose height and width differ least in total (the first on a tie).
  public static func nearestSize(_ allowed: FlexibleInputShape, height: Int, width: Int) -> [Int] {
    switch allowed.kind {
    case .ranges(let ranges):
      return zip(ranges, [height, width]).map { range, size in
        min(max(size, range.lower), range.upper ?? Int.max)
      }
    case .enumerated(let sizes):
      return sizes.min { abs($0[0] - height) + abs($0[1] - width) < abs($1[0] - height) + abs($1[1] - width) }
        ?? allowed.defaultShape
    }
  }

  /// The class scores for a photo at the allowed size nearest its own (a flexible model), else as `classify`.
  public func classifyAtNearestSize(_ photo: RGBImage, cropAndScale: CropAndScale = .centerCrop) throws
    -> Classification
  {
    guard let allowedSizes, let atSize else { return classify(photo, cropAndScale: cropAndScale) }
    let size = Self.nearestSize(allowedSizes, height: photo.height, width: photo.width)
    if size == [input.height, input.width] { return classify(photo, cropAndScale: cropAndScale) }
    return try sized.model(size, make: atSize).classify(photo, cropAndScale: cropAndScale)
  }

  /// A source read into the IR as a photo classifier: its one `[H, W, 1]` or `[H, W, 3]` input gets the
  /// source's own image preprocessing, or for a format without image inputs the one given.
  public static func load(_ source: ImportedSource, options: ImageModelOptions = ImageModelOptions()) throws
    -> ImageModel
  {
    // The passes only remove work (transposes a Core ML source's edges add and its importer undoes).
    var graph = source.graph
    try Pipelines.runtime.run(&graph)
    let path = source.path
    guard graph.inputs.count == 1 else {
      throw PredictionError.notAnImageModel(
        path: path, detail: "it has \(graph.inputs.count) inputs; a photo fills one")
    }
    let name = graph[graph.inputs[0]].name
    let shape = graph[graph.inputs[0]].type.shape
    let preprocessing: ImagePreprocessing
    if source.declaresImageInputs {
      guard let declared = source.imageInputs[name] else {
        throw PredictionError.notAnImageModel(
          path: path,
          detail: "its input '\(name)' is a multiarray, not an image (convert it with an image input to feed photos)")
      }
      preprocessing = declared
    } else {
      preprocessing = options.preprocessing ?? ImagePreprocessing()
    }
    guard shape.count == 3, shape[2] == 1 || shape[2] == 3 else {
      throw PredictionError.notAnImageModel(
        path: path, detail: "its input has shape \(shape); a photo needs [H, W, 1] or [H, W, 3]")
    }
    let input = Input(
      name: name, width: shape[1], height: shape[0], colorSpace: preprocessing.colorSpace(channels: shape[2]).rawValue,
      scale: preprocessing.scale,
      biases: preprocessing.networkBiases(channels: shape[2]), channelScales: preprocessing.channelScales)
    let index =
      source.classifier?.probabilitiesOutput.flatMap { name in graph.outputs.firstIndex { graph[$0].name == name } }
      ?? 0
    let width = graph[graph.outputs[index]].type.elementCount
    let interpreter = Interpreter(graph: graph)
    let bytes = RuntimeMemory.saturating(
      RuntimeMemory.tensorBytes(in: graph).total.addingReportingOverflow(interpreter.kernelBytesPerThread))
    let limit = RuntimeMemory.defaultLimit
    guard bytes <= limit else { throw PredictionError.exceedsMemory(path: path, bytesPerImage: bytes, limit: limit) }
    // Each score gets a label (its index when none is given): a model of millions of outputs is not a classifier.
    guard width <= maxClasses else {
      throw PredictionError.notAnImageModel(
        path: path, detail: "its output has \(width) values; a classifier's scores have at most \(maxClasses)")
    }
    let labels = try labels(
      options.labels?.descriptions ?? source.classifier?.labels.descriptions, count: width, path: path)
    return ImageModel(
      kind: source.modelKind, path: path, input: input, labels: labels, graph: graph, interpreter: interpreter,
      scoresOutput: index, inputShape: shape, bytesPerImage: bytes,
      takesPreprocessingOptions: !source.declaresImageInputs)
  }

  /// The most classes a photo classifier may have (ImageNet-21k has 21 841).
  public static let maxClasses = 1 << 20

  static func labels(_ given: [String]?, count: Int, path: String) throws -> [String] {
    guard let given else { return (0..<count).map(String.init) }
    guard given.count == count else {
      throw PredictionError.labelCountMismatch(path: path, labels: given.count, outputs: count)
    }
    return given
  }

  /// The network input for a photo: fitted to the input size, in its color space, preprocessed.
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
    let factors = input.channelScales ?? [Float](repeating: 1, count: channels)
    for i in hwc.indices { hwc[i] = (input.scale * hwc[i] + input.biases[i % channels]) * factors[i % channels] }
    return Tensor(shape: inputShape, values: hwc)
  }

  /// The class scores for a photo, best first.
  public func classify(_ photo: RGBImage, cropAndScale: CropAndScale = .centerCrop) -> Classification {
    let scores = interpreter.run([tensor(for: photo, cropAndScale: cropAndScale)])[scoresOutput].values
    return Classification(labels: labels, scores: scores)
  }
}

/// How to load a model for `ImageModel`.
public struct ImageModelOptions: Sendable, Equatable {
  /// For a source without image inputs: the preprocessing it was trained with (scale, biases, BGR), as given to `convert`.
  /// Core ML models carry their own.
  public var preprocessing: ImagePreprocessing?
  /// Class names in output order; a Core ML classifier's own labels are used when nil.
  public var labels: ClassLabels?
  /// Fixed sizes for unknown input dimensions (`1,H,W,C`).
  public var inputShapes: [String: [Int]]

  public init(preprocessing: ImagePreprocessing? = nil, labels: ClassLabels? = nil, inputShapes: [String: [Int]] = [:])
  {
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
  /// One classification's tensors (every value of the model, from its declared shapes) exceed the memory the process may use.
  case exceedsMemory(path: String, bytesPerImage: Int, limit: Int)

  public var description: String {
    switch self {
    case .notAnImageModel(let path, let detail): return "\(path): cannot classify photos: \(detail)"
    case .labelCountMismatch(let path, let labels, let outputs):
      return "\(path): \(labels) labels given for \(outputs) outputs"
    case .notALabelledFolder(let path, let detail): return "\(path) \(detail)"
    case .exceedsMemory(let path, let bytes, let limit):
      return
        "\(path): cannot classify photos: one image needs \(RuntimeMemory.describe(bytes)) of tensors and kernel buffers (every value of the model, from its declared input shape), more than the \(RuntimeMemory.describe(limit)) that may be used (half of the memory this process may have)"
    case .noImagesForModelLabels(let folder, let folderLabels, let modelLabels):
      return "\(folder): no subfolder is named after a label of the model, so no image can be scored; folders: "
        + folderLabels.prefix(10).joined(separator: ", ") + (folderLabels.count > 10 ? ", ..." : "")
        + "; model labels: "
        + modelLabels.prefix(10).joined(separator: ", ") + (modelLabels.count > 10 ? ", ..." : "")
        + " (name the folders after the labels, or give the labels in the model's output order)"
    }
  }
}

extension PredictionError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension PredictionError: KindedError {
  public var kind: ErrorKind { .badModel }
}

/// The models of a flexible input read at other sizes, kept for the photos that follow (at most 8).
final class SizedModels: @unchecked Sendable {
  private let lock = NSLock()
  private var models: [[Int]: ImageModel] = [:]

  func model(_ size: [Int], make: ([Int]) throws -> ImageModel) throws -> ImageModel {
    lock.lock()
    if let model = models[size] {
      lock.unlock()
      return model
    }
    lock.unlock()
    let model = try make(size)
    lock.lock()
    defer { lock.unlock() }
    if models.count >= 8, let first = models.keys.first { models[first] = nil }
    models[size] = model
    return model
  }
}
