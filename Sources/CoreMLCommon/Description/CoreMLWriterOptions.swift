/// Everything the Core ML writer needs besides the graph.
public struct CoreMLWriterOptions: Sendable, Equatable {
  /// Inputs that become images, by graph input name.
  public var imageInputs: [String: ImagePreprocessing]
  /// Outputs declared as images, by graph output name: an `[H, W, C]` value (C = 1 for GRAYSCALE, else
  /// 3) whose elements Core ML turns into the pixels of an image (a classic network from
  /// specification 1, an ML Program from iOS 16, specification 7).
  public var imageOutputs: [String: ImageColorSpace] = [:]
  /// Makes the model a classifier when set.
  public var classifier: ClassifierSettings?
  public var precision: WeightPrecision
  public var metadata: ModelMetadata
  /// The oldest release the model must load on; nil: the oldest the model's content allows (iOS 15 for
  /// an ML Program). The writer uses the lowest specification version (and opset) the target allows and
  /// refuses what the target cannot load.
  public var target: DeploymentTarget?
  /// Multiarray inputs and outputs declared as a source declared them, by feature name (ML Programs;
  /// a classic network always declares `(C, H, W)` and `(D)`).
  public var declaredArrays: [String: DeclaredArray]
  /// Weight compression (ML Programs); nil stores weights at `precision`.
  public var compression: WeightCompression?
  /// A flexible model's input sizes and the program dimensions they leave unknown (nil: every size fixed).
  public var flexibility: WrittenFlexibility?

  public init(
    imageInputs: [String: ImagePreprocessing] = [:], classifier: ClassifierSettings? = nil,
    precision: WeightPrecision = .float32,
    metadata: ModelMetadata = ModelMetadata(), target: DeploymentTarget? = nil,
    declaredArrays: [String: DeclaredArray] = [:]
  ) {
    self.declaredArrays = declaredArrays
    self.imageInputs = imageInputs
    self.classifier = classifier
    self.precision = precision
    self.metadata = metadata
    self.target = target
  }
}
