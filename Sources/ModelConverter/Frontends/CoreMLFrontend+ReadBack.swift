import CoreMLFormat
import Foundation
import ModelIR
import ReferenceRuntime

/// The Core ML reader as the converted side of verification: a written `.mlmodel` or `.mlpackage` read
/// back with Apple's documented semantics, its declared interface, its weights' precision and the
/// rules of NeuralNetwork.proto it breaks.
extension CoreMLFrontend: ReadBackReading {
  public func readBack(at url: URL, source: Graph) throws -> ReadBackModel {
    try readBack(at: url, source: source, inputSizes: [:])
  }

  public func readBack(at url: URL, source: Graph, inputSizes: [String: [Int]]) throws -> ReadBackModel {
    // A detector pipeline is read as its network stage, the suppression described beside it.
    let declared = try CoreMLSpecReader.read(contentsOf: url, detectorPipelines: true)
    let spec = inputSizes.isEmpty ? declared : try declared.atSizes(inputSizes, path: url.path)
    let lengths = ParityVerifier.sequenceLengths(of: spec, from: source)
    let model = try CoreMLGraphImporter.importModel(spec, path: url.path, sequenceLengths: lengths)
    var readBack = ReadBackModel(model)
    readBack.detector = spec.pipeline.map(ReadBackModel.DetectorStage.init)
    if spec.modelType != "mlProgram" && !spec.exactArrayMapping { readBack.sequenceInputs = Set(lengths.keys) }
    readBack.flexibleInputs = Self.flexibleInputs(declared)
    return readBack
  }

  public func describesDetector(at url: URL) throws -> Bool {
    let outline = try CoreMLModelOutline.read(contentsOf: url)
    return outline.typeName == "pipeline" && outline.subModels.last?.model.suppression != nil
  }
}

extension ReadBackModel.DetectorStage {
  /// A Core ML detector pipeline's suppression stage as NonMaximumSuppression.proto documents it: boxes
  /// below the confidence threshold dropped, IoU above the threshold suppressed (per class with
  /// `pickTop.perClass`), and the outputs' first dimension saying how many rows come out (a fixed size
  /// pads with zero rows, a range limits them).
  init(_ pipeline: CoreMLModelSpec.Pipeline) {
    let nms = pipeline.suppression
    let reads = Set(nms.inputs.map(\.name))
    var minimum = 0
    var maximum: Int?
    if let output = nms.outputs.first(where: { $0.name == nms.confidenceOutput }) {
      if let rows = output.sizeRanges.first {
        (minimum, maximum) = (rows.lower, rows.upper)
      } else if case .multiArray(let shape, _) = output.kind, shape.count == 2, shape[0] > 0 {
        (minimum, maximum) = (shape[0], shape[0])
      }
    }
    self.init(
      suppression: NonMaximumSuppression(
        iouThreshold: nms.iouThreshold, confidenceThreshold: nms.confidenceThreshold, perClass: nms.perClass ?? false,
        minimumBoxes: minimum, maximumBoxes: maximum),
      labels: nms.labels, confidenceInput: nms.confidenceInput, coordinatesInput: nms.coordinatesInput,
      // A threshold input the suppression's description does not list is not read (Apple's validator
      // allows it): the stored threshold holds.
      iouThresholdInput: reads.contains(nms.iouThresholdInput) ? nms.iouThresholdInput : "",
      confidenceThresholdInput: reads.contains(nms.confidenceThresholdInput) ? nms.confidenceThresholdInput : "",
      confidenceOutput: nms.confidenceOutput, coordinatesOutput: nms.coordinatesOutput,
      inputs: pipeline.inputs.map(InterfaceFeature.init), outputs: pipeline.outputs.map(InterfaceFeature.init))
  }
}

extension ReadBackModel {
  /// A Core ML model imported by the reader, in verification's terms.
  public init(_ model: CoreMLModel) {
    let spec = model.spec
    self.init(
      graph: model.graph,
      inputs: model.inputs.map { Input(name: $0.name, shape: $0.shape, image: $0.image, colorSpace: $0.colorSpace) },
      declaredInputs: spec.inputs.map(InterfaceFeature.init), declaredOutputs: spec.outputs.map(InterfaceFeature.init),
      format: spec.modelType == "mlProgram" ? .mlProgram : .neuralNetwork,
      predictedFeatureName: spec.predictedFeatureName,
      classLabels: model.classLabels, probabilitiesOutput: model.probabilitiesOutput, blobs: model.blobs,
      channelsLastValues: model.channelsLastValues, usesChannelsFirstMapping: model.usesRank5Mapping,
      tolerance: VerificationTolerance.defaults(for: spec), hasQuantizedWeights: spec.quantizationBits > 0,
      violations: CoreMLSpecificationRules.violations(in: spec))
  }
}

extension VerificationTolerance {
  /// The default for a Core ML model's weight storage: neural-network layers and ML Program constants
  /// alike (`CoreMLModelSpec.quantizationBits`, `usesFloat16`).
  public static func defaults(for spec: CoreMLModelSpec) -> VerificationTolerance {
    defaults(quantizationBits: spec.quantizationBits, usesFloat16: spec.usesFloat16)
  }
}

extension ParityVerifier {
  /// The time steps of the Core ML inputs that carry a sequence, by input name: Core ML leaves them to
  /// run time, the source graph (inputs in the same order) fixes them.
  public static func sequenceLengths(of spec: CoreMLModelSpec, from graph: Graph) -> [String: Int] {
    var lengths: [String: Int] = [:]
    for (feature, id) in zip(spec.inputs, graph.inputs) {
      let shape = graph[id].type.shape
      // A classic (C) input holding more values than C carries them along the sequence axis (token ids
      // declared (1), a [T, C] sequence declared (C)), whatever shape the source gives them.
      if !spec.exactArrayMapping, case .multiArray(let declared, _) = feature.kind, declared.count == 1, declared[0] > 0
      {
        let count = graph[id].type.elementCount
        if count > declared[0], count % declared[0] == 0 {
          lengths[feature.name] = count / declared[0]
          continue
        }
      }
      if shape.count == 2 || shape.count == 4 || (shape.count == 1 && Comparison.vocabulary(of: id, in: graph) != nil) {
        lengths[feature.name] = shape[0]
      }
    }
    return lengths
  }

  /// Compares an IR graph with an imported Core ML model.
  public static func verify(
    source: Graph, converted: CoreMLModel, sourceName: String, convertedName: String, options: VerificationOptions
  ) throws -> ParityReport {
    try verify(
      source: source, converted: ReadBackModel(converted), sourceName: sourceName, convertedName: convertedName,
      options: options)
  }
}
