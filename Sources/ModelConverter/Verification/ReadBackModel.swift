import Foundation
import ModelIR
import ReferenceRuntime

/// A converted model as the reader of its format reads it back, independently of the writer that made it
/// (for Core ML: what Apple documents), in the terms verification compares: the graph that runs, each
/// input as the app gives it, the interface the file declares, what its weight storage costs in
/// precision and which rules of its format it breaks.
public struct ReadBackModel: Sendable {
  /// One graph input as the app provides it.
  public struct Input: Sendable, Equatable {
    public var name: String
    /// The graph input's shape (for a classic Core ML network `[C, H, W]`, else the declared rank).
    public var shape: [Int]
    /// For an image input: the graph input holds pixels 0-255 in the network's channel order and the
    /// graph applies this preprocessing itself.
    public var image: ImagePreprocessing?
    /// For an image input: the channel order the network receives.
    public var colorSpace: ImageColorSpace?

    public init(name: String, shape: [Int], image: ImagePreprocessing? = nil, colorSpace: ImageColorSpace? = nil) {
      self.name = name
      self.shape = shape
      self.image = image
      self.colorSpace = colorSpace
    }
  }

  /// The model as it runs.
  public var graph: Graph
  /// One per graph input, in the same order.
  public var inputs: [Input]
  /// The inputs and outputs the file declares, in its order.
  public var declaredInputs: [InterfaceFeature]
  public var declaredOutputs: [InterfaceFeature]
  /// Which of the formats a writer produces it is.
  public var format: ModelFormat
  /// A classifier's predicted label output, or empty.
  public var predictedFeatureName: String
  /// The class labels of a classifier (integer labels as text), else empty.
  public var classLabels: [String]
  /// The graph output holding a classifier's probabilities, if any.
  public var probabilitiesOutput: String?
  /// Every named intermediate value the file computes, by name, to its graph value.
  public var blobs: [String: ValueID]
  /// A channels-first value to the channels-last value it was transposed from around a spatial layer.
  public var channelsLastValues: [ValueID: ValueID]
  /// Whether every value is held in a fixed channels-first rank (Core ML's classic rank-5 mapping:
  /// `[C, H, W]` tensors) rather than in its own rank.
  public var usesChannelsFirstMapping: Bool
  /// The verification rule its weight storage calls for (float32, float16 or n-bit quantized).
  public var tolerance: VerificationTolerance
  /// Whether its weights are quantized, so that each layer is compared from the source's values.
  public var hasQuantizedWeights: Bool
  /// What the format's runtime would refuse or compute differently from this reading.
  public var violations: [SpecificationViolation]
  /// For a detector (a pipeline of this graph and a non-maximum suppression): the suppression as the file
  /// declares it, with the pipeline's interface; nil for a model that is not one.
  public var detector: DetectorStage?
  /// The inputs that accept other sizes, as the file declares them (an array's shape, an image's
  /// `[height, width]`), by name.
  public var flexibleInputs: [String: FlexibleInputShape] = [:]
  /// Inputs whose sequence axis the file leaves to run time (a classic network's rank-5 inputs): any
  /// length runs, without a declaration.
  public var sequenceInputs: Set<String> = []

  /// A detector pipeline's suppression stage, in the reference runtime's terms.
  public struct DetectorStage: Sendable, Equatable {
    /// Thresholds, per class or not, and the rows of the outputs (`NonMaximumSuppression.proto`).
    public var suppression: NonMaximumSuppression
    /// The labels of the confidence columns (integer labels as text); empty when none are given.
    public var labels: [String]
    /// The graph outputs it reads, and the inputs replacing its thresholds ("" for none).
    public var confidenceInput: String
    public var coordinatesInput: String
    public var iouThresholdInput: String
    public var confidenceThresholdInput: String
    public var confidenceOutput: String
    public var coordinatesOutput: String
    /// The pipeline's declared interface (the graph's is its network stage's).
    public var inputs: [InterfaceFeature]
    public var outputs: [InterfaceFeature]

    public init(
      suppression: NonMaximumSuppression, labels: [String], confidenceInput: String, coordinatesInput: String,
      iouThresholdInput: String, confidenceThresholdInput: String, confidenceOutput: String,
      coordinatesOutput: String, inputs: [InterfaceFeature], outputs: [InterfaceFeature]
    ) {
      self.suppression = suppression
      self.labels = labels
      self.confidenceInput = confidenceInput
      self.coordinatesInput = coordinatesInput
      self.iouThresholdInput = iouThresholdInput
      self.confidenceThresholdInput = confidenceThresholdInput
      self.confidenceOutput = confidenceOutput
      self.coordinatesOutput = coordinatesOutput
      self.inputs = inputs
      self.outputs = outputs
    }
  }

  public init(
    graph: Graph, inputs: [Input], declaredInputs: [InterfaceFeature], declaredOutputs: [InterfaceFeature],
    format: ModelFormat,
    predictedFeatureName: String = "", classLabels: [String] = [], probabilitiesOutput: String? = nil,
    blobs: [String: ValueID] = [:],
    channelsLastValues: [ValueID: ValueID] = [:], usesChannelsFirstMapping: Bool,
    tolerance: VerificationTolerance = .float32,
    hasQuantizedWeights: Bool = false, violations: [SpecificationViolation] = []
  ) {
    self.graph = graph
    self.inputs = inputs
    self.declaredInputs = declaredInputs
    self.declaredOutputs = declaredOutputs
    self.format = format
    self.predictedFeatureName = predictedFeatureName
    self.classLabels = classLabels
    self.probabilitiesOutput = probabilitiesOutput
    self.blobs = blobs
    self.channelsLastValues = channelsLastValues
    self.usesChannelsFirstMapping = usesChannelsFirstMapping
    self.tolerance = tolerance
    self.hasQuantizedWeights = hasQuantizedWeights
    self.violations = violations
  }

  /// Whether the file declares output `name` as an image.
  func declaresImageOutput(_ name: String) -> Bool { declaredOutputs.contains { $0.name == name && $0.kind == .image } }
}

/// A frontend that can also read a converted model back for verification: the side `verify` compares
/// a source against. `source` is the graph the converted model was made from, for what the file leaves
/// to run time (the time steps of a sequence input).
public protocol ReadBackReading: Sendable {
  func readBack(at url: URL, source: Graph) throws -> ReadBackModel
  /// The model read with its flexible inputs at other sizes they allow (in the file's terms: an array's
  /// shape, an image's `[height, width]`).
  func readBack(at url: URL, source: Graph, inputSizes: [String: [Int]]) throws -> ReadBackModel
  /// Whether the file is an object detector (a pipeline ending in non-maximum suppression), told
  /// from its description without reading its weights.
  func describesDetector(at url: URL) throws -> Bool
}

extension ReadBackReading {
  public func describesDetector(at url: URL) throws -> Bool { false }
  public func readBack(at url: URL, source: Graph, inputSizes: [String: [Int]]) throws -> ReadBackModel {
    try readBack(at: url, source: source)
  }
}
