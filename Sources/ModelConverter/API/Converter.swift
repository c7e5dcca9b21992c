import CoreMLFormat
import Foundation
import ModelIR
import ReferenceRuntime

/// Converts a model of any registered source format (see `Frontends`) to Core ML, as coremltools'
/// `convert()` does.
///
/// ```swift
/// let model = try Converter.convert(
///   modelAt: URL(fileURLWithPath: "model_v6.h5"),
///   options: ConversionOptions(
///     inputNames: ["image"], outputNames: ["output"], imageInputNames: ["image"],
///     classLabels: .strings(["Angry", "Disgust", "Fear", "Happy", "Neutral", "Sad", "Surprise"]),
///     imageScale: 1 / 255))
/// try model.write(to: URL(fileURLWithPath: "Emotion.mlmodel"))
/// ```
///
/// The source is found by content. What it already declares (a Core ML model's image inputs, labels,
/// predicted feature name and description) is kept unless the options say otherwise.
public enum Converter {
  /// Converts the model file or package at `url`.
  public static func convert(modelAt url: URL, options: ConversionOptions = ConversionOptions()) throws
    -> ConvertedModel
  {
    let frontend = try Frontends.frontend(for: url)
    return try convert(frontend.importSource(at: url, options: options.sourceOptions), options: options)
  }

  /// What the conversion's passes need to know of the options (`Pipelines.conversion`).
  static func pipelineContext(for options: ConversionOptions, channelScales: [String: [Float]] = [:])
    -> Pipelines.Context
  {
    Pipelines.Context(
      channelScales: channelScales,
      computesInFloat32: options.format == .neuralNetwork || options.resolvedPrecision == .float32,
      allowsNonFinite: options.allowNonFinite)
  }

  /// The passes a conversion runs, in order (`Pipelines.declared`, "conversion").
  static func pipeline(
    for options: ConversionOptions, imageInputs: ImageInputLedger, channelScales: [String: [Float]] = [:]
  ) -> GraphPipeline {
    Pipelines.conversion(pipelineContext(for: options, channelScales: channelScales), imageInputs: imageInputs)
  }

  /// Converts a source already read into the IR (`ModelFrontend.importSource`), so a caller that also
  /// verifies the result reads the source once.
  public static func convert(_ source: ImportedSource, options given: ConversionOptions) throws -> ConvertedModel {
    // A source that declares several sizes (a flexible Core ML model) keeps them, unless the options give
    // that input its sizes.
    var options = given
    var kept: [String] = []
    for (name, flexible) in source.flexibleInputs.sorted(by: { $0.key < $1.key })
    where options.flexibleInputShapes[name] == nil && options.inputShapes[name] == nil {
      options.flexibleInputShapes[name] = flexible
      kept.append("input '\(name)' accepts \(flexible) in the source")
    }
    guard options.flexibleInputShapes.values.contains(where: \.isFlexible) else {
      return try convertAtOneSize(source, options: options)
    }
    do {
      return try FlexibleConversion.convert(source, options: options)
    } catch CoreMLWriterError.fixedSizeLayer(let layer, let detail) where given.flexibleInputShapes.isEmpty {
      // Sizes only the source declared, which a layer cannot keep: the default size, said in a note.
      var model = try convertAtOneSize(source, options: given)
      model.sourceNotes += kept.map {
        "\($0); the converted model takes its default size only: layer '\(layer)' \(detail)"
      }
      return model
    }
  }

  /// The conversion of a source read at one size for each input.
  static func convertAtOneSize(_ source: ImportedSource, options given: ConversionOptions) throws -> ConvertedModel {
    // An ML Program whose values leave float16's range computes in float32 unless a precision was given.
    var options = given
    if options.precision == nil && options.format == .mlProgram
      && !(Float16Range.float32Reasons(in: source.graph) + source.float32Reasons).isEmpty
    {
      options.precision = .float32
    }
    if let problem = options.compression?.problem { throw ConversionError.invalidCompression(problem) }
    // Image inputs: the ones named in the options with their preprocessing, else the source's own.
    // (A name given twice is one image input.)
    if let mean = options.imageMean, !options.imageInputNames.isEmpty {
      let std = options.imageStd ?? mean.map { _ in 1 }
      guard mean.count == std.count, mean.count == 1 || mean.count == 3 else {
        throw ConversionError.invalidImagePreprocessing(
          input: options.imageInputNames[0],
          detail: "\(mean.count) means and \(std.count) standard deviations; give one or three of each")
      }
    }
    let named =
      options.imageInputNames.isEmpty
      ? source.imageInputs
      : Dictionary(
        options.imageInputNames.map { ($0, options.imagePreprocessing) }, uniquingKeysWith: { first, _ in first })
    var graph = source.graph
    // A detector: the decoding after the network, before any pass, so the passes see the whole first stage.
    var detector: DetectorPipeline?
    if let settings = options.detector {
      if let problem = settings.problem { throw ConversionError.invalidDetector(problem) }
      let head: DetectorHead
      do {
        try DetectorHead.checkNotEndToEnd(metadata: source.metadata.userDefined)
        head = try DetectorHead.append(
          to: &graph, decoding: settings.decoding,
          classesWritten: { settings.writtenClasses($0, format: options.format) })
      } catch let failure as DetectorHead.Failure { throw ConversionError.invalidDetector("\(failure)") }
      detector = try DetectorPipeline.make(
        head: head, options: settings,
        labels: options.classLabels
          ?? source.metadata.userDefined["names"].flatMap(DetectorClassNames.parse).map {
            .strings($0)
          })
    }
    for (name, image) in named.sorted(by: { $0.key < $1.key }) {
      let values =
        [image.scale, image.redBias, image.greenBias, image.blueBias, image.grayBias] + (image.channelScales ?? [])
      // Pixels 0-255 must stay finite through the scaler (a scale of 3.4e38 makes every pixel above 1 infinite).
      let peak =
        abs(image.scale) * 255 + [image.redBias, image.greenBias, image.blueBias, image.grayBias].map(abs).reduce(0, +)
      guard values.allSatisfy(\.isFinite), peak.isFinite else {
        let detail =
          "the scale, biases and per-channel factors must be finite numbers that keep pixels 0-255 finite, got \(values)"
        if options.imageInputNames.isEmpty {
          throw ConversionError.invalidSourcePreprocessing(path: source.path, input: name, detail: detail)
        }
        throw ConversionError.invalidImagePreprocessing(input: name, detail: detail)
      }
      guard let id = graph.inputs.first(where: { graph[$0].name == name }), let channels = graph[id].type.shape.last,
        graph[id].type.shape.count == 3
      else { continue }
      if let given = image.normalizationChannels, given != channels {
        throw ConversionError.invalidImagePreprocessing(
          input: name,
          detail:
            "\(given) mean and standard deviation value\(given == 1 ? "" : "s") given for an image of \(channels) channel\(channels == 1 ? "" : "s") (give \(channels == 1 ? "one" : "three, R,G,B"))"
        )
      }
    }
    // Per-channel factors Core ML's scaler cannot hold are computed in the graph (the pipeline's first
    // pass; folded into the first convolution when it takes the input alone); the scaler keeps the rest.
    var channelScales: [String: [Float]] = [:]
    for (name, image) in named {
      guard let factors = image.channelScales, let id = graph.inputs.first(where: { graph[$0].name == name }) else {
        continue
      }
      guard graph[id].type.shape.count == 3, graph[id].type.shape.last == factors.count else {
        throw ConversionError.invalidImagePreprocessing(
          input: name,
          detail:
            "\(factors.count) per-channel factors (standard deviations) for a tensor of shape \(graph[id].type.shape)")
      }
      channelScales[name] = factors
    }
    let ledger = ImageInputLedger(named.mapValues(\.scaler))
    try pipeline(for: options, imageInputs: ledger, channelScales: channelScales).run(&graph)
    var imageInputs = ledger.current
    // Values beyond float16's range found now, not by verify in the written file: a float16 program
    // becomes float32 unless float16 was asked for (then the notes warn).
    // Weights float16 cannot store, in a model whose values all stay within it, keep only their own
    // operations in float32 (mixed precision); asked for, float16 stays strict and the writer names them.
    var float16Reasons = Float16Range.float32Reasons(in: source.graph) + source.float32Reasons
    var float32Operations: [String] = []
    if options.format == .mlProgram && options.resolvedPrecision == .float16 {
      let found = Float16Range.reasons(in: graph, imageInputs: imageInputs, checkingPrecision: float16Reasons.isEmpty)
      if given.precision == nil && float16Reasons.isEmpty && found.values.isEmpty && !found.weights.isEmpty {
        try Pipelines.pipeline("mixedPrecision").run(&graph)
        float32Operations = found.weights
      } else {
        float16Reasons += found.weights + found.values + found.precision
        if given.precision == nil && !float16Reasons.isEmpty {
          options.precision = .float32
          try Pipelines.pipeline("float32Fallback").run(&graph)
        }
      }
    }

    // A classifier: the labels given, else the source's own (with its predicted feature name).
    var classifier =
      detector != nil
      ? nil
      : options.classLabels.map {
        ClassifierSettings(
          labels: $0, predictedFeatureName: options.predictedFeatureName,
          probabilitiesOutput: options.predictedProbabilitiesOutput)
      } ?? source.classifier

    var metadata = source.metadata
    metadata.shortDescription = options.shortDescription ?? metadata.shortDescription
    metadata.author = options.author ?? metadata.author
    metadata.license = options.license ?? metadata.license
    metadata.version = options.version ?? metadata.version
    metadata.userDefined.merge(source.provenance) { _, new in new }
    metadata.userDefined["modelconv.version"] = ModelConverterVersion.current

    // The source's multiarray declarations, but for inputs that became images.
    var declaredArrays = source.declaredArrays.filter { imageInputs[$0.key] == nil }
    // A detector's decoded arrays as its suppression stage takes them: [boxes, classes] and [boxes, 4].
    if let head = detector?.head {
      declaredArrays[DetectorHead.confidenceName] = DeclaredArray(
        shape: [head.anchors, head.writtenClasses], channelsFirst: false)
      declaredArrays[DetectorHead.coordinatesName] = DeclaredArray(shape: [head.anchors, 4], channelsFirst: false)
    }
    var imageOutputs = source.imageOutputs

    // Names the format cannot hold are renamed, and everything keyed by a feature name follows.
    let renames = FeatureNaming.renames(
      inputs: graph.inputs.map { graph[$0].name }, outputs: graph.outputs.map { graph[$0].name }, format: options.format
    )
    try FeatureNaming.apply(renames, to: &graph)
    for rename in renames {
      if let image = imageInputs.removeValue(forKey: rename.from) { imageInputs[rename.to] = image }
      if let declared = declaredArrays.removeValue(forKey: rename.from) { declaredArrays[rename.to] = declared }
      if rename.kind == "output", let space = imageOutputs.removeValue(forKey: rename.from) {
        imageOutputs[rename.to] = space
      }
      if rename.kind == "output", classifier?.probabilitiesOutput == rename.from {
        classifier?.probabilitiesOutput = rename.to
      }
    }
    for name in options.imageOutputNames where imageOutputs[name] == nil {
      imageOutputs[name] = try Self.makeImageOutput(name, in: &graph, preprocessing: options.imagePreprocessing)
    }
    var writerOptions = CoreMLWriterOptions(
      imageInputs: imageInputs, classifier: classifier, precision: options.resolvedPrecision, metadata: metadata,
      target: options.target,
      declaredArrays: declaredArrays)
    writerOptions.compression = options.compression
    writerOptions.imageOutputs = imageOutputs
    var encoded = try CoreMLWriters.writer(for: options.format).encode(graph, options: writerOptions)
    if let detector { encoded = try detector.encode(network: encoded, metadata: metadata) }
    var model = ConvertedModel(
      graph: graph, writerOptions: writerOptions, encoded: encoded, sourceProducerVersion: source.producerVersion)
    model.detector = detector
    model.sourcePaths = source.readPaths
    model.sourceNotes =
      source.notes
      + renames.map {
        "\($0.description) (\(options.format == .mlProgram ? "ML Program feature names are identifiers" : "renamed")): the app uses '\($0.to)'"
      }
    model.renames = renames
    model.float16Reasons = options.format == .mlProgram ? float16Reasons : []
    model.float32Operations = float32Operations
    return model
  }

  /// Output `name` as pixels: the image preprocessing undone, `pixel = value / (scale * channelScale) -
  /// bias / scale` per channel (a batch normalization of mean 0 and variance 1 after the output, which
  /// takes its name), and the colour space the channel count and `isBGR` say.
  static func makeImageOutput(_ name: String, in graph: inout Graph, preprocessing: ImagePreprocessing) throws
    -> ImageColorSpace
  {
    let names = graph.outputs.map { graph[$0].name }
    guard let id = graph.outputs.first(where: { graph[$0].name == name }) else {
      throw ConversionError.invalidImageOutput(
        output: name, detail: "the model's outputs are \(names.map { "'\($0)'" }.joined(separator: ", "))")
    }
    let shape = graph[id].type.shape
    guard shape.count == 3, [1, 3].contains(shape[2]), shape[0] > 0, shape[1] > 0 else {
      throw ConversionError.invalidImageOutput(
        output: name, detail: "its shape \(shape) is not [H, W, 3] or [H, W, 1] (channels last, as the IR holds images)"
      )
    }
    let channels = shape[2]
    let space = preprocessing.colorSpace(channels: channels)
    if let given = preprocessing.normalizationChannels, given != channels {
      throw ConversionError.invalidImageOutput(
        output: name, detail: "the normalization is for \(given) channels, the output has \(channels)")
    }
    guard preprocessing.scale.isFinite, preprocessing.scale != 0 else {
      throw ConversionError.invalidImageOutput(
        output: name, detail: "an image scale of \(preprocessing.scale) cannot be undone")
    }
    let biases = preprocessing.networkBiases(channels: channels)
    let factors =
      preprocessing.channelScales.map { Array($0.prefix(channels)) } ?? [Float](repeating: 1, count: channels)
    let gamma = factors.map { 1 / (preprocessing.scale * $0) }
    let beta = biases.map { -$0 / preprocessing.scale }
    guard gamma.allSatisfy(\.isFinite), beta.allSatisfy(\.isFinite) else {
      throw ConversionError.invalidImageOutput(
        output: name, detail: "the image preprocessing cannot be undone (a zero factor)")
    }
    if gamma.allSatisfy({ $0 == 1 }) && beta.allSatisfy({ $0 == 0 }) { return space }
    let normalization = BatchNormalization(
      gamma: Constant(shape: [channels], values: gamma), beta: Constant(shape: [channels], values: beta),
      mean: .filled(0, shape: [channels]), variance: .filled(1, shape: [channels]), epsilon: 0)
    graph.appendToOutput(id, operation: .batchNormalization(normalization), nodeName: name + "__to_pixels")
    return space
  }
}
