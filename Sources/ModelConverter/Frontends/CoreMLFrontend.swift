import CoreMLFormat
import Foundation
import ModelFormats
import ModelIR

/// Core ML models as a source: classic neural networks (`.mlmodel`, or inside an `.mlpackage`) and ML
/// Programs, read by `CoreMLGraphImporter` and `MILProgramImporter`.
///
/// The importers keep Core ML's layout at the model's edges (channels first, batch axes where the
/// description has them) and apply an image input's scaler inside the graph. As a source, the model
/// is brought to the IR's conventions by `SourceLayout`: each input becomes the tensor after its
/// image scaler in channels-last form, followed by the transpose back to Core ML's layout (which meets
/// the importer's own transpose before the first spatial layer and cancels in the pass pipeline), and
/// the scaler itself becomes the source's image preprocessing, kept by a conversion.
public struct CoreMLFrontend: ModelFrontend {
  public let name = "coreml"
  public let displayName = "Core ML"
  public let fileExtensions = ["mlmodel", "mlpackage"]
  public let kinds: Set<ModelFileKind> = [.coreMLModel, .coreMLPackage]
  public let summary = """
    A Core ML model is a source too: a neural network becomes an ML Program (or the other way where
    classic layers can express every operation), and keeps its image inputs, labels and description
    unless options replace them.
    """

  public init() {}

  public func importSource(at url: URL, options: SourceOptions) throws -> ImportedSource {
    // A Core ML model declares its shapes and holds its own weights and layers.
    if options.architecture != nil {
      throw ConversionError.notApplicable(
        path: url.path, option: "a separate architecture file", format: "a Core ML model")
    }

    // (Turning unknown layers into custom layers does not apply either: a Core ML model's custom layers
    // are read as they are. `verify` asks for it for every source, so it is not refused.)
    if !options.settings.isEmpty {
      throw ConversionError.notApplicable(
        path: url.path, option: "another format's reader settings", format: "a Core ML model")
    }
    let declared = try CoreMLSpecReader.read(contentsOf: url)
    let spec = try Self.atSizes(declared, options.inputShapes, path: url.path)
    let model = try CoreMLGraphImporter.importModel(spec, path: url.path)
    var source = try Self.source(model, path: url.path, options: options)
    source.flexibleInputs = Self.flexibleInputs(declared)
    return source
  }

  /// The model with flexible inputs at other sizes they allow: an array's declared shape, an image's
  /// `[height, width]`. A model declares its own sizes: a shape for an input with one size is refused.
  static func atSizes(_ spec: CoreMLModelSpec, _ shapes: [String: [Int]], path: String) throws -> CoreMLModelSpec {
    guard !shapes.isEmpty else { return spec }
    for name in shapes.keys.sorted() where spec.inputs.first(where: { $0.name == name })?.allowedSizes == nil {
      throw ConversionError.notApplicable(
        path: path, option: "a shape for input '\(name)'",
        format: "a Core ML model input of one size (a model declares its own; only a flexible input takes another)")
    }
    do { return try spec.atSizes(shapes, path: path) } catch let error as CoreMLReaderError {
      throw ConversionError.invalidInputShape(input: shapes.keys.sorted().joined(separator: ", "), detail: "\(error)")
    }
  }

  /// The inputs that accept other sizes, in the terms `SourceOptions.inputShapes` takes for them.
  static func flexibleInputs(_ spec: CoreMLModelSpec) -> [String: FlexibleInputShape] {
    var result: [String: FlexibleInputShape] = [:]
    for feature in spec.inputs {
      guard let allowed = feature.allowedSizes else { continue }
      if let enumerated = allowed.enumerated {
        var flexible = FlexibleInputShape(enumerated: enumerated)
        flexible.defaultShape = allowed.defaultSize
        result[feature.name] = flexible
      } else if let ranges = allowed.ranges {
        result[feature.name] = FlexibleInputShape(
          ranges: ranges.map { .init(lower: $0.lower, upper: $0.upper) }, defaultShape: allowed.defaultSize)
      }
    }
    return result
  }

  public func inspect(at url: URL, options: SourceOptions) throws -> ModelInspection {
    try Self.inspectCoreML(url)
  }

  /// An imported Core ML model as a source in the IR's conventions.
  static func source(_ model: CoreMLModel, path: String, options: SourceOptions) throws -> ImportedSource {
    var (graph, forms) = try SourceLayout.canonicalGraph(model, path: path)
    let inputNames = graph.inputs.map { graph[$0].name }
    let outputNames = graph.outputs.map { graph[$0].name }
    let newInputs = options.inputNames ?? inputNames
    let newOutputs = options.outputNames ?? outputNames
    guard newInputs.count == inputNames.count else {
      throw ConversionError.nameCountMismatch(kind: "input", given: newInputs.count, expected: inputNames.count)
    }
    guard newOutputs.count == outputNames.count else {
      throw ConversionError.nameCountMismatch(kind: "output", given: newOutputs.count, expected: outputNames.count)
    }
    // Renamed in two steps, so that swapping two names does not clash half way.
    let all = zip(graph.inputs, newInputs).map { ($0, $1) } + zip(graph.outputs, newOutputs).map { ($0, $1) }
    for (id, _) in all { try graph.rename(id, to: "\(graph[id].name)__renaming\(id)") }
    for (id, name) in all { try graph.rename(id, to: name) }
    let renamed = Dictionary(
      zip(inputNames + outputNames, newInputs + newOutputs).map { ($0, $1) }, uniquingKeysWith: { first, _ in first })

    let spec = model.spec
    var source = ImportedSource(
      format: "coreml", modelKind: spec.modelType == "mlProgram" ? "mlProgram" : "neuralNetwork", path: path,
      graph: graph)
    source.inputSourceNames = inputNames
    source.declaresImageInputs = true
    for name in model.zeroStateInputs.sorted()
    where !graph.inputs.contains(where: { graph[$0].name == (renamed[name] ?? name) }) {
      source.notes.append(
        "optional input '\(name)' (a recurrent layer's initial state) is not kept: the converted model always starts from zeros, and verify reports the changed interface"
      )
    }
    func declared(_ feature: CoreMLModelSpec.Feature) -> InterfaceFeature {
      var declared = InterfaceFeature(feature)
      declared.name = renamed[feature.name] ?? feature.name
      return declared
    }
    source.declaredInterface = SourceInterface(
      inputs: spec.inputs.map(declared), outputs: spec.outputs.map(declared), declaresKinds: true)
    // Multiarrays keep the shapes the source declared (a classic network's (C, H, W) and (D)).
    for feature in spec.inputs + spec.outputs {
      guard case .multiArray(let shape, _) = feature.kind, let form = forms[feature.name],
        let name = renamed[feature.name],
        let id = (graph.inputs + graph.outputs).first(where: { graph[$0].name == name })
      else { continue }
      var channelsFirst = false
      if case .channelsFirst = form { channelsFirst = true }
      // A description that leaves the shape out (coremltools' classic outputs) gives the shape the
      // network computes there, in Core ML's own layout: the app receives that array.
      let computed = (model.graph.inputs + model.graph.outputs).first { model.graph[$0].name == feature.name }.map {
        model.graph[$0].type.shape
      }
      let declared = DeclaredArray(shape: shape.isEmpty ? computed ?? shape : shape, channelsFirst: channelsFirst)
      if declared.fits(graph[id].type.shape) { source.declaredArrays[name] = declared }
    }
    for input in model.inputs {
      guard let image = input.image, let name = renamed[input.name] else { continue }
      source.imageInputs[name] = image
    }
    for feature in spec.outputs {
      guard case .image(_, _, let colorSpace) = feature.kind, let name = renamed[feature.name] else { continue }
      guard let space = ImageColorSpace(rawValue: colorSpace) else {
        throw CoreMLReaderError.invalidNetwork(
          path: path,
          detail:
            "output '\(feature.name)' is an image in colour space \(colorSpace), which is not converted (RGB, BGR and GRAYSCALE are)"
        )
      }
      source.imageOutputs[name] = space
    }
    if !model.classLabels.isEmpty, let probabilities = model.probabilitiesOutput {
      let labels: ClassLabels =
        spec.stringClassLabels.isEmpty ? .integers(spec.int64ClassLabels) : .strings(spec.stringClassLabels)
      let predicted = spec.predictedFeatureName.isEmpty ? "classLabel" : spec.predictedFeatureName
      source.classifier = ClassifierSettings(
        labels: labels, predictedFeatureName: predicted, probabilitiesOutput: renamed[probabilities] ?? probabilities)
      // The label stays where the source declares it among the outputs.
      source.classifier?.labelPosition = spec.outputs.firstIndex { $0.name == predicted }
    }
    func text(_ value: String) -> String? { value.isEmpty ? nil : value }
    source.metadata = ModelMetadata(
      shortDescription: text(spec.shortDescription), author: text(spec.author), license: text(spec.license),
      version: text(spec.version),
      userDefined: spec.userDefined)
    let tolerance = VerificationTolerance.defaults(for: spec)
    if tolerance.maximumRelativeRMS != nil { source.tolerance = tolerance }
    source.provenance = [
      "modelconv.source": "coreml",
      "modelconv.source_model_type": spec.modelType,
      "modelconv.source_specification_version": String(spec.specificationVersion),
    ]
    return source
  }
}
