import CoreMLFormat
import Foundation

extension CoreMLFrontend {
  /// A Core ML model that is not a neural network or ML Program (a pipeline, GLM, tree ensemble, text
  /// classifier, scaler, ...): described from its declaration (`CoreMLModelOutline`), with no layers,
  /// parameters or weights and no import into the IR (modelconv does not run these).
  static func inspectModelType(_ url: URL) throws -> ModelInspection {
    let outline = try CoreMLModelOutline.read(contentsOf: url)
    var isDirectory: ObjCBool = false
    _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)
    func text(_ value: String) -> String? { value.isEmpty ? nil : value }
    let format = isDirectory.boolValue ? "mlpackage" : "mlmodel"
    let kind = kind(outline.typeName)
    return ModelInspection(
      path: url.path, format: .init(format), kind: kind, isRunnable: false,
      presentation: presentation(
        format: format, kind: kind.rawValue, specificationVersion: outline.specificationVersion, opset: nil,
        layerNoun: "layer"),
      specificationVersion: outline.specificationVersion, opset: nil,
      oldestReleases: DeploymentTarget.oldestReleases(forSpecificationVersion: outline.specificationVersion).map {
        .init(platform: $0.platform, version: $0.version)
      },
      inputs: outline.inputs.map(feature), outputs: outline.outputs.map(feature), imageInputs: [],
      labels: labels(outline),
      metadata: .init(
        name: nil, shortDescription: text(outline.shortDescription), author: text(outline.author),
        license: text(outline.license),
        version: text(outline.version),
        userDefined: outline.userDefined.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: $0.value) }),
      layers: [], shapesUnavailable: nil, parameterCount: 0, weights: [], subModels: outline.subModels.map(subModel),
      suppression: outline.suppression.map(suppression))
  }

  /// Every `Model.Type` case Apple's Model.proto lists, as it names them.
  static let modelTypeNames: Set<String> = [
    "neuralNetwork", "neuralNetworkClassifier", "neuralNetworkRegressor", "mlProgram", "pipelineClassifier",
    "pipelineRegressor", "pipeline",
    "glmRegressor", "supportVectorRegressor", "treeEnsembleRegressor", "bayesianProbitRegressor", "glmClassifier",
    "supportVectorClassifier",
    "treeEnsembleClassifier", "kNearestNeighborsClassifier", "itemSimilarityRecommender", "customModel", "linkedModel",
    "classConfidenceThresholding", "oneHotEncoder", "imputer", "featureVectorizer", "dictVectorizer", "scaler",
    "categoricalMapping",
    "normalizer", "arrayFeatureExtractor", "nonMaximumSuppression", "identity", "textClassifier", "wordTagger",
    "visionFeaturePrint",
    "soundAnalysisPreprocessing", "gazetteer", "wordEmbedding", "audioFeaturePrint", "serializedModel",
  ]

  static func kind(_ typeName: String) -> ModelInspection.ModelKind {
    modelTypeNames.contains(typeName) ? .init(typeName) : .unknown
  }

  /// The model's class labels; a pipeline's are its last model's (a detector's suppression stage).
  static func labels(_ outline: CoreMLModelOutline) -> [String] {
    let own = outline.stringClassLabels.isEmpty ? outline.int64ClassLabels.map(String.init) : outline.stringClassLabels
    guard own.isEmpty, outline.typeName.hasPrefix("pipeline"), let last = outline.subModels.last else { return own }
    return labels(last.model)
  }

  static func subModel(_ sub: CoreMLModelOutline.SubModel) -> ModelInspection.SubModel {
    .init(
      name: sub.name, kind: kind(sub.model.typeName), specificationVersion: sub.model.specificationVersion,
      inputs: sub.model.inputs.map(feature), outputs: sub.model.outputs.map(feature), labels: labels(sub.model),
      subModels: sub.model.subModels.map(subModel), suppression: sub.model.suppression.map(suppression))
  }

  static func suppression(_ nms: CoreMLModelOutline.Suppression) -> ModelInspection.Suppression {
    .init(
      iouThreshold: nms.iouThreshold, confidenceThreshold: nms.confidenceThreshold, perClass: nms.perClass,
      confidenceInput: nms.confidenceInput, coordinatesInput: nms.coordinatesInput,
      iouThresholdInput: nms.iouThresholdInput,
      confidenceThresholdInput: nms.confidenceThresholdInput, confidenceOutput: nms.confidenceOutput,
      coordinatesOutput: nms.coordinatesOutput)
  }

  /// A declared feature, in the same terms as `feature(_:)` for neural networks (plus sequences and states).
  static func feature(_ feature: CoreMLModelOutline.Feature) -> ConversionSummary.Feature {
    let type: ConversionSummary.FeatureType
    switch feature.kind {
    case .multiArray(let shape, let dataType):
      type = .init(
        kind: "multiArray", shape: shape.isEmpty && !feature.sizeRanges.isEmpty ? nil : shape, dataType: dataType,
        shapeRange: feature.sizeRanges.isEmpty ? nil : feature.sizeRanges.map { [$0.lower, $0.upper ?? -1] })
    case .image(let width, let height, let colorSpace):
      type = .init(kind: "image", width: width, height: height, colorSpace: colorSpace)
    case .dictionary(let keyType): type = .init(kind: "dictionary", keyType: keyType, valueType: "double")
    case .sequence(let elementType): type = .init(kind: "sequence", valueType: elementType)
    case .state(let shape, let dataType): type = .init(kind: "state", shape: shape, dataType: dataType)
    case .string: type = .init(kind: "string")
    case .int64: type = .init(kind: "int64")
    case .double: type = .init(kind: "double")
    case .unknown: type = .init(kind: "unknown")
    }
    return .init(
      name: feature.name,
      type: described(
        type, enumeratedShapes: feature.enumeratedShapes, imageSizeRanges: feature.imageSizeRanges,
        enumeratedImageSizes: feature.enumeratedImageSizes, isOptional: feature.isOptional))
  }
}

extension ModelInspection.FileFormat {
  /// A Core ML model file and a Core ML package folder.
  public static let mlmodel = Self("mlmodel")
  public static let mlpackage = Self("mlpackage")
}
