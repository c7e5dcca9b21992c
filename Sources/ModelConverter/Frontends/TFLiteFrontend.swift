import CoreMLFormat
import Foundation
import ModelFormats
import ModelIR
import TFLiteFormat

/// TensorFlow Lite models (`.tflite`: LiteRT, Teachable Machine, MediaPipe), read by `TFLiteFormat`'s
/// FlatBuffers reader and imported operator by operator (`TFLiteOperatorRegistry`). TFLite is channels
/// last like the IR; the batch axis (1) is dropped inside and kept at the interface, whose arrays keep the
/// shapes the file declares (`[1, 224, 224, 3]`). Inputs and outputs take the names of the model's
/// signature when it has one (`serving_default`), else the tensors' names.
public struct TFLiteFrontend: ModelFrontend {
  public let name = "tflite"
  public let displayName = "TensorFlow Lite"
  public let fileExtensions = ["tflite"]
  public let kinds: Set<ModelFileKind> = [.tensorFlowLite]
  public let summary = """
    A TensorFlow Lite model (.tflite) converts with its channels-last interface kept; float16 and int8
    weights (dynamic-range and float16 quantization) are read as the float32 values they stand for.
    """

  public init() {}

  public func importSource(at url: URL, options: SourceOptions) throws -> ImportedSource {
    if options.architecture != nil {
      throw ConversionError.notApplicable(
        path: url.path, option: "a separate architecture file",
        format: "a TensorFlow Lite model, which holds its own graph")
    }
    if !options.inputShapes.isEmpty {
      throw ConversionError.notApplicable(
        path: url.path, option: "an input shape", format: "a TensorFlow Lite model, which declares its own")
    }
    if !options.settings.isEmpty {
      throw ConversionError.notApplicable(
        path: url.path, option: "another format's reader settings", format: "a TensorFlow Lite model")
    }
    let model = try TFLiteReader.read(contentsOf: url)
    return try Self.source(model, options: options)
  }

  /// The feature names: the signature's (`serving_default`, or the only one) for subgraph 0, else the tensors'.
  static func featureNames(_ model: TFLiteModel) -> (inputs: [String], outputs: [String]) {
    let tensors = model.subgraph.tensors
    var inputs = model.subgraph.inputs.map { tensors[$0].name }
    var outputs = model.subgraph.outputs.map { tensors[$0].name }
    let signatures = model.signatures.filter { $0.subgraph == 0 }
    if let signature = signatures.first(where: { $0.key == "serving_default" }) ?? signatures.first {
      for (name, tensor) in signature.inputs {
        if let index = model.subgraph.inputs.firstIndex(of: tensor) { inputs[index] = name }
      }
      for (name, tensor) in signature.outputs {
        if let index = model.subgraph.outputs.firstIndex(of: tensor) { outputs[index] = name }
      }
    }
    // Names must stay distinct.
    return (
      Set(inputs).count == inputs.count ? inputs : model.subgraph.inputs.map { tensors[$0].name },
      Set(outputs).count == outputs.count ? outputs : model.subgraph.outputs.map { tensors[$0].name }
    )
  }

  static func source(_ model: TFLiteModel, options: SourceOptions) throws -> ImportedSource {
    let imported = try TFLiteGraphImporter.importGraph(model)
    var graph = imported.graph
    var (sourceInputs, sourceOutputs) = featureNames(model)
    sourceInputs += imported.states.map(\.input)
    sourceOutputs += imported.states.map(\.output)
    let newInputs = options.inputNames ?? sourceInputs
    let newOutputs = options.outputNames ?? sourceOutputs
    guard newInputs.count == graph.inputs.count else {
      throw ConversionError.nameCountMismatch(kind: "input", given: newInputs.count, expected: graph.inputs.count)
    }
    guard newOutputs.count == graph.outputs.count else {
      throw ConversionError.nameCountMismatch(kind: "output", given: newOutputs.count, expected: graph.outputs.count)
    }
    let all = zip(graph.inputs, newInputs).map { ($0, $1) } + zip(graph.outputs, newOutputs).map { ($0, $1) }
    for (id, _) in all { try graph.rename(id, to: "\(graph[id].name)__renaming\(id)") }
    for (id, name) in all { try graph.rename(id, to: name) }
    var source = ImportedSource(format: "tflite", modelKind: "tflite", path: model.path, graph: graph)
    source.inputSourceNames = sourceInputs
    // The arrays keep the shapes the file declares, batch axis included (channels last).
    for (id, shape) in Array(zip(graph.inputs, imported.inputShapes)) + Array(zip(graph.outputs, imported.outputShapes))
    {
      let declared = DeclaredArray(shape: shape, channelsFirst: false)
      if declared.fits(graph[id].type.shape) { source.declaredArrays[graph[id].name] = declared }
    }
    source.notes = imported.notes
    source.float32Reasons = imported.float32Reasons
    for (index, input) in model.subgraph.inputs.enumerated() {
      let tensor = model.subgraph.tensors[input]
      if let q = tensor.quantization, tensor.type == .int8 || tensor.type == .uint8 {
        source.notes.append(
          "input '\(newInputs[index])' is \(tensor.type.name) (scale \(q.scales[0]), zero point \(q.zeroPoints[0])) in the file: the converted model takes those integers as float32 values and computes in float32"
        )
      }
    }
    // A full-integer model rounds every operator's output to int8; the converted model computes in float32.
    let tensors = model.subgraph.tensors
    let integerActivations = model.subgraph.operators.contains { op in
      op.outputs.contains { tensors[$0].type == .int8 || tensors[$0].type == .uint8 || tensors[$0].type == .int16 }
    }
    if integerActivations {
      source.tolerance = VerificationTolerance(
        absolute: 1e-5, relative: 1e-3, basis: .quantizedActivations,
        maximumRelativeRMS: min(Float(model.subgraph.operators.count) / 256, 0.25))
      source.notes.append(
        "the model computes with integer activations; the converted model computes in float32 (verify's bound: \(VerificationTolerance.Basis.quantizedActivations))"
      )
    }
    if let description = model.description, !description.isEmpty, description != "MLIR Converted." {
      source.metadata = ModelMetadata(shortDescription: description)
    }
    if let metadata = try TFLiteMetadata.read(model) { Self.apply(metadata, to: &source) }
    source.provenance = [
      "modelconv.source": "tflite", "modelconv.source_tflite_version": String(model.version),
    ]
    // Variables carried from one invocation to the next (a streaming model): an input and an output each.
    let states = imported.states.enumerated().map { index, state in
      let position = model.subgraph.inputs.count + index
      let (input, output) = (newInputs[position], newOutputs[model.subgraph.outputs.count + index])
      let start = state.initial.values.allSatisfy { $0 == 0 } ? "zeros" : "the file's initial values"
      source.notes.append(
        "variable '\(state.variable)' is kept between invocations: input '\(input)' takes its value (\(start) at the start of a stream), output '\(output)' gives the value to pass as '\(input)' to the next prediction"
      )
      return "\(input) <- \(output) (starts at \(start))"
    }
    if !states.isEmpty { source.provenance["modelconv.streaming_states"] = states.joined(separator: "; ") }
    source.streamingStates = imported.states.enumerated().map { index, state in
      StreamingState(
        input: model.subgraph.inputs.count + index, output: model.subgraph.outputs.count + index,
        initial: state.initial.values)
    }
    return source
  }

  /// What the file's TFLite Model Metadata says, as the source's own declarations (kept by a conversion
  /// unless the options say otherwise, each said in a note): the outputs' labels make a classifier, an
  /// image input with its normalization becomes an image input whose preprocessing computes
  /// `(pixel - mean) / std` per channel, and the model's name, description, author, license and version.
  static func apply(_ metadata: TFLiteMetadata, to source: inout ImportedSource) {
    let graph = source.graph
    source.metadata.shortDescription = metadata.description ?? source.metadata.shortDescription
    source.metadata.author = metadata.author
    source.metadata.license = metadata.license
    source.metadata.version = metadata.version
    for (index, output) in metadata.outputs.enumerated() where index < graph.outputs.count {
      let name = graph[graph.outputs[index]].name
      if let missing = output.missingLabelsFile {
        source.notes.append(
          "output '\(name)': the metadata names the labels file '\(missing)', which the file does not hold")
      }
      guard let labels = output.labels, source.classifier == nil else { continue }
      guard graph[graph.outputs[index]].type.elementCount == labels.count else {
        source.notes.append(
          "output '\(name)': the metadata's \(labels.count) labels do not fit its \(graph[graph.outputs[index]].type.elementCount) values; not a classifier"
        )
        continue
      }
      source.classifier = ClassifierSettings(labels: .strings(labels), probabilitiesOutput: name)
      source.notes.append("output '\(name)': \(labels.count) class labels from the file's metadata (a classifier)")
    }
    for (index, input) in metadata.inputs.enumerated() where index < graph.inputs.count {
      let value = graph[graph.inputs[index]]
      let shape = value.type.shape
      guard let space = input.imageColorSpace, shape.count == 3, shape[2] == (space == "GRAYSCALE" ? 1 : 3) else {
        continue
      }
      let channels = shape[2]
      func perChannel(_ values: [Float]?, _ fallback: Float) -> [Float]? {
        guard let values, !values.isEmpty else { return [Float](repeating: fallback, count: channels) }
        if values.count == 1 { return [Float](repeating: values[0], count: channels) }
        return values.count == channels ? values : nil
      }
      guard let mean = perChannel(input.mean, 0), let std = perChannel(input.std, 1),
        std.allSatisfy({ $0.isFinite && $0 != 0 }), mean.allSatisfy(\.isFinite)
      else {
        source.notes.append(
          "input '\(value.name)': the metadata's normalization does not fit its \(channels) channels; not used")
        continue
      }
      // network = (pixel - mean) / std = pixel / std0 - mean / std, with factors std0 / std when they differ.
      let scale = 1 / std[0]
      var preprocessing = ImagePreprocessing(
        colorSpace: channels == 1 ? .grayscale : .rgb, scale: scale,
        networkBiases: zip(mean, std).map { -$0 / $1 })
      if Set(std).count > 1 {
        // Core ML's one scale: the bias in the scaled units, then per-channel factors std0 / std.
        preprocessing = ImagePreprocessing(
          colorSpace: channels == 1 ? .grayscale : .rgb, scale: scale, networkBiases: mean.map { -$0 / std[0] })
        preprocessing.channelScales = std.map { std[0] / $0 }
      }
      source.imageInputs[value.name] = preprocessing
      source.declaresImageInputs = true
      source.notes.append(
        "input '\(value.name)': an \(space) image from the file's metadata, network input = (pixel - \(mean)) / \(std)")
    }
  }
}
