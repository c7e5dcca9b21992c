import CoreMLFormat
import Foundation
import ModelFormats
import ModelIR

/// The result of a conversion: the IR graph and the written Core ML model.
public struct ConvertedModel: Sendable {
  /// The converted graph, with the final input and output names.
  public let graph: Graph
  /// The options the Core ML writer used.
  public internal(set) var writerOptions: CoreMLWriterOptions
  /// The model's files: the specification and, for an ML Program, its weights.
  public internal(set) var encoded: EncodedModel
  /// The serialized `Model` specification (`.mlmodel`, or `model.mlmodel` inside a package), packed on
  /// each use (`write(to:)` streams it to the file instead).
  public var bytes: [UInt8] { encoded.specification }
  /// The format written.
  public var format: ModelFormat { encoded.format }
  /// The version of the tool that wrote the source file, when recorded (Keras' `keras_version`).
  public let sourceProducerVersion: String?
  /// Every file or folder the conversion read (the source, its external data, its architecture file):
  /// `write(to:)` refuses an output that is, lies inside or contains one of them.
  public var sourcePaths: [String] = []

  /// Layers whose values leave float16's range in an ML Program (`Float16Range`), with what was done:
  /// the program computes in float32 (the default for such a model), or, when float16 was asked for,
  /// a warning that it may overflow. Empty for a neural network or a model without such layers.
  public var precisionNotes: [String] {
    guard format == .mlProgram else { return [] }
    let mixed = float32Operations.map { "\($0): its operation computes in float32 within the float16 program" }
    switch writerOptions.precision {
    case .float32: return float16Reasons.map { "\($0): the ML Program computes in float32" }
    case .float16: return mixed + float16Reasons.map { "\($0): float16 was asked for and may overflow to infinity" }
    }
  }

  /// Layers of a float16 ML Program whose weights float16 cannot store, kept in float32 where they are
  /// (`Float32IslandsPass`), with why.
  public var float32Operations: [String] = []

  /// What the source's import decided where the file left something open (`ImportedSource.notes`),
  /// and the features renamed.
  public var sourceNotes: [String] = []
  /// A flexible model's input sizes (`ConversionOptions.flexibleInputShapes`, by the written input names),
  /// and the source shapes the written layers were proved to compute, the default first.
  public var flexibleInputShapes: [String: FlexibleInputShape] = [:]
  public var checkedShapes: [[String: [Int]]] = []
  /// Inputs and outputs whose source names the format cannot hold, with the names written.
  public var renames: [FeatureRename] = []

  /// A detector's decoding and suppression when the model is one (`ConversionOptions.detector`): `graph`
  /// is then the pipeline's first stage and `encoded` the pipeline.
  public var detector: DetectorPipeline?

  /// Why float16 cannot hold this model's values (`Float16Range`), found at conversion.
  public var float16Reasons: [String] = []

  /// What looks wrong about each image input's preprocessing for this model, by input name (see
  /// `ParityReport.preprocessing`): no scale at all, a network input far beyond the pixel range, or a
  /// first BatchNormalization seeing statistics an order of magnitude away from its training ones.
  public var preprocessingWarnings: [String: [String]] {
    var result: [String: [String]] = [:]
    for id in graph.inputs {
      let shape = graph[id].type.shape
      guard let image = writerOptions.imageInputs[graph[id].name], shape.count == 3 else { continue }
      let warnings = PreprocessingAdvisor.warnings(
        graph: graph, input: id, preprocessing: image, colorSpace: image.colorSpace(channels: shape[2]))
      if !warnings.isEmpty { result[graph[id].name] = warnings }
    }
    return result
  }

  /// Writes the `.mlmodel` file or `.mlpackage` folder atomically: an existing model is replaced only
  /// once the new one is complete, and a failure leaves nothing behind.
  /// An output that is, lies inside or contains a file the conversion read is refused
  /// (`SourceProtection.Conflict`, a usage error) before anything is written.
  public func write(to url: URL) throws {
    try SourceProtection.check(output: url.path, sources: sourcePaths)
    try encoded.write(to: url)
  }

  /// A summary for people and pipelines.
  public var summary: ConversionSummary {
    func feature(_ id: ValueID) -> ConversionSummary.Feature {
      let value = graph[id]
      if let image = writerOptions.imageInputs[value.name] {
        let space = image.colorSpace(channels: value.type.shape.last == 1 ? 1 : 3)
        return .init(
          name: value.name,
          type: .init(
            kind: "image", width: value.type.shape[1], height: value.type.shape[0], colorSpace: space.rawValue))
      }
      if let space = writerOptions.imageOutputs[value.name], value.type.shape.count == 3 {
        return .init(
          name: value.name,
          type: .init(
            kind: "image", width: value.type.shape[1], height: value.type.shape[0], colorSpace: space.rawValue))
      }
      // As the written description declares it.
      let shape = encoded.arrayShapes[value.name] ?? value.type.shape
      return .init(name: value.name, type: .init(kind: "multiArray", shape: shape, dataType: "float32"))
    }
    var outputs = graph.outputs.map(feature)
    if let classifier = writerOptions.classifier {
      let probabilities = classifier.probabilitiesOutput ?? outputs[0].name
      let keyType: String
      if case .integers = classifier.labels { keyType = "int64" } else { keyType = "string" }
      outputs = outputs.map {
        $0.name == probabilities
          ? .init(name: $0.name, type: .init(kind: "dictionary", keyType: keyType, valueType: "double")) : $0
      }
      outputs = classifier.placingLabel(
        .init(name: classifier.predictedFeatureName, type: .init(kind: keyType)), in: outputs)
    }
    var modelType: String
    switch (format, writerOptions.classifier == nil) {
    case (.mlProgram, _): modelType = "mlProgram"
    case (.neuralNetwork, true): modelType = "neuralNetwork"
    case (.neuralNetwork, false): modelType = "neuralNetworkClassifier"
    }
    var inputs = graph.inputs.map(feature)
    var labels = writerOptions.classifier?.labels.descriptions ?? []
    // A detector: the pipeline's interface, the suppression's outputs (0 or more rows) and threshold inputs.
    if let detector {
      let nms = detector.suppression
      modelType = "pipeline"
      inputs += [nms.iouThresholdInput, nms.confidenceThresholdInput].map {
        .init(name: $0, type: .init(kind: "double", optional: true))
      }
      outputs = [(nms.confidenceOutput, nms.classes), (nms.coordinatesOutput, 4)].map {
        .init(
          name: $0.0,
          type: .init(
            kind: "multiArray", dataType: "float32", shapeRange: [[0, nms.maximumBoxes ?? -1], [$0.1, $0.1]]))
      }
      labels = detector.labels?.descriptions ?? []
    }
    return ConversionSummary(
      modelType: modelType, format: format, specificationVersion: encoded.specificationVersion,
      precision: writerOptions.precision.rawValue,
      inputs: inputs, outputs: outputs, layerCount: graph.nodes.count,
      parameterCount: graph.parameterCount, labels: labels,
      byteCount: encoded.byteCount,
      compression: writerOptions.compression.map { compression in
        let tensors = encoded.compressedTensors
        return ConversionSummary.Compression(
          method: compression.summary, minimumElements: compression.minimumElements,
          weightBytesBefore: tensors.reduce(0) { $0 + $1.originalBytes },
          weightBytesAfter: tensors.reduce(0) { $0 + $1.writtenBytes },
          compressedCount: tensors.filter { $0.method != nil }.count,
          skippedCount: tensors.filter { $0.skipped != nil }.count, tensors: tensors)
      }, notes: sourceNotes.isEmpty ? nil : sourceNotes, renamed: renames.isEmpty ? nil : renames)
  }
}

/// What a conversion produced, in a form that prints and encodes to JSON.
public struct ConversionSummary: Sendable, Equatable, Codable {
  public struct Feature: Sendable, Equatable, Codable, CustomStringConvertible {
    public var name: String
    public var type: FeatureType

    public init(name: String, type: FeatureType) {
      self.name = name
      self.type = type
    }

    public var description: String { "\(name): \(type)" }
  }

  /// A feature's type as Xcode shows it; fields that do not apply to the kind are nil.
  public struct FeatureType: Sendable, Equatable, Codable, CustomStringConvertible {
    /// `image`, `multiArray`, `dictionary`, `string` or `int64`.
    public var kind: String
    public var width: Int?
    public var height: Int?
    /// `GRAYSCALE`, `RGB` or `BGR` for images.
    public var colorSpace: String?
    public var shape: [Int]?
    /// `float32`, `float16`, `double` or `int32` for arrays.
    public var dataType: String?
    /// For dictionaries: `string` or `int64` keys, `double` values.
    public var keyType: String?
    public var valueType: String?
    /// Whether the app may leave the input out (a detector's threshold overrides); nil when not.
    public var optional: Bool?
    /// An array's allowed sizes per dimension, `[lower, upper]` (upper -1: no limit), when it declares
    /// ranges (a detector's outputs: 0 or more rows).
    public var shapeRange: [[Int]]?
    /// An array's allowed shapes when it declares an enumeration (`enumeratedShapes`); nil when not.
    public var enumeratedShapes: [[Int]]?
    /// An image's allowed widths and heights, `[[lower, upper], [lower, upper]]` (upper -1: no limit),
    /// when it declares a range (`imageSizeRange`); nil when not.
    public var sizeRange: [[Int]]?
    /// An image's allowed sizes, `[width, height]` each, when it declares an enumeration; nil when not.
    public var enumeratedSizes: [[Int]]?

    public init(
      kind: String, width: Int? = nil, height: Int? = nil, colorSpace: String? = nil, shape: [Int]? = nil,
      dataType: String? = nil,
      keyType: String? = nil, valueType: String? = nil, optional: Bool? = nil, shapeRange: [[Int]]? = nil
    ) {
      self.optional = optional
      self.shapeRange = shapeRange
      self.kind = kind
      self.width = width
      self.height = height
      self.colorSpace = colorSpace
      self.shape = shape
      self.dataType = dataType
      self.keyType = keyType
      self.valueType = valueType
    }

    /// Ranges as `0...` (no limit), `1...8` or `3` (one size).
    public static func ranges(_ ranges: [[Int]], separator: String) -> String {
      ranges.map { range in
        guard range.count == 2 else { return "?" }
        if range[1] < 0 { return "\(range[0])..." }
        return range[0] == range[1] ? "\(range[0])" : "\(range[0])...\(range[1])"
      }.joined(separator: separator)
    }

    public var description: String {
      switch kind {
      case "image": return "image \(width ?? 0)x\(height ?? 0) \(colorSpace ?? "")"
      case "multiArray" where shapeRange != nil:
        return "multiArray \(dataType ?? "") [\(Self.ranges(shapeRange ?? [], separator: ", "))]"
      case "multiArray": return "multiArray \(dataType ?? "") \(shape ?? [])"
      case "double" where optional == true: return "double (optional)"
      case "dictionary": return "dictionary \(keyType ?? "") → \(valueType ?? "")"
      default: return kind
      }
    }
  }
  /// `neuralNetwork`, `neuralNetworkClassifier`, `mlProgram` (a classifier when `labels` is not empty), or
  /// `pipeline` for a detector (its labels the classes it detects).
  public var modelType: String
  public var format: ModelFormat
  /// The specification version written; the oldest OS releases that load it follow from it.
  public var specificationVersion: Int
  /// `float32` or `float16`: weight storage, and for an ML Program also its computation.
  public var precision: String
  public var inputs: [Feature]
  public var outputs: [Feature]
  public var layerCount: Int
  public var parameterCount: Int
  public var labels: [String]
  public var byteCount: Int
  /// With weight compression: the weight constants' bytes before and after, and each tensor.
  public var compression: Compression?
  /// What the conversion decided where the source left something open (a batch size of 1, sizes from
  /// the file's metadata, renamed features); absent when nothing was.
  public var notes: [String]?
  /// Inputs and outputs renamed because the format cannot hold their source names; absent when none was.
  public var renamed: [FeatureRename]?

  public struct Compression: Sendable, Equatable, Codable {
    public var method: String
    public var minimumElements: Int
    /// Float weight constants' bytes at the model's precision, and as written (codes, tables, scales).
    public var weightBytesBefore: Int
    public var weightBytesAfter: Int
    public var compressedCount: Int
    public var skippedCount: Int
    public var tensors: [CompressedTensorReport]
  }
}
