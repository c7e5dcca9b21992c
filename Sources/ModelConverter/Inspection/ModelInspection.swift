/// What a model file holds, as `modelconv inspect` shows it: its format and version, the OS releases
/// that load it, its inputs and outputs as Xcode shows them, image preprocessing, class labels,
/// metadata, layers with output shapes and parameter counts, and weight storage by type.
///
/// Made by `ModelInspector.inspect(contentsOf:)` through the frontend that reads the file, which also
/// says how the report names what it holds (`presentation`). It encodes to JSON (schema
/// `modelconv.inspect/2`) with every key present (null when a field does not apply).
public struct ModelInspection: Sendable, Equatable, Codable {
  /// The kind of file, recognised by content, as its frontend names it (`kerasHDF5`, `mlpackage`, `onnx`);
  /// coded as its string (the standard library's coding of a string-backed `RawRepresentable`).
  public struct FileFormat: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
  }

  /// The model's own kind, as its frontend names it (`kerasSequential`; for Core ML the `Model.Type`
  /// case as Apple's Model.proto names it: `neuralNetworkClassifier`, `pipeline`, ...).
  public struct ModelKind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    public var rawValue: String
    public init(rawValue: String) { self.rawValue = rawValue }
    public init(_ rawValue: String) { self.rawValue = rawValue }
    public var description: String { rawValue }
    /// A model type the frontend's format declares but no frontend recognises.
    public static let unknown = ModelKind("unknown")
  }

  /// The tool (and its version and backend) that wrote the file, when the file records it.
  public struct Producer: Sendable, Equatable, Codable {
    public var name: String
    public var version: String?
    public var backend: String?

    public init(name: String, version: String? = nil, backend: String? = nil) {
      self.name = name
      self.version = version
      self.backend = backend
    }
  }

  /// How the report names and shows what the frontend reads, in the format's own words. Not part of the
  /// JSON document, which carries the facts behind it.
  public struct Presentation: Sendable, Equatable {
    /// The `Format` line, as the frontend words it (`Core ML package (.mlpackage), ML Program, ...`).
    public var format: String
    /// Further header lines the format has (`Model`), after the format line.
    public var fields: [(name: String, values: [String])]
    /// What one entry of the layer table is: `layer`, `operation`, `node`.
    public var layerNoun: String
    /// Output shapes have no batch axis and print after a `None` batch (`(None, 8, 8, 1)`).
    public var shapesAfterBatch: Bool
    /// Whether the format says when a model is no classifier (`Labels: none`); a format that keeps no
    /// labels says nothing.
    public var declaresLabels: Bool

    public init(
      format: String, fields: [(name: String, values: [String])] = [], layerNoun: String,
      shapesAfterBatch: Bool = false, declaresLabels: Bool = true
    ) {
      self.format = format
      self.fields = fields
      self.layerNoun = layerNoun
      self.shapesAfterBatch = shapesAfterBatch
      self.declaresLabels = declaresLabels
    }

    public static func == (a: Self, b: Self) -> Bool {
      a.format == b.format && a.fields.map(\.name) == b.fields.map(\.name)
        && a.fields.map(\.values) == b.fields.map(\.values)
        && a.layerNoun == b.layerNoun && a.shapesAfterBatch == b.shapesAfterBatch
        && a.declaresLabels == b.declaresLabels
    }
  }

  /// A model inside a Core ML pipeline, as the pipeline declares it.
  public struct SubModel: Sendable, Equatable, Codable {
    /// The name the pipeline gives it (`Pipeline.names`), when it gives one.
    public var name: String?
    public var kind: ModelKind
    public var specificationVersion: Int
    public var inputs: [ConversionSummary.Feature]
    public var outputs: [ConversionSummary.Feature]
    /// Its class labels, when its type carries them.
    public var labels: [String]
    /// Its own sub-models, when it is a pipeline.
    public var subModels: [SubModel]
    /// Its suppression parameters, when it is a non-maximum suppression model.
    public var suppression: Suppression? = nil
  }

  /// A non-maximum suppression stage (a detector's last): its thresholds, whether boxes are suppressed
  /// only among their own class, and the features it reads and writes.
  public struct Suppression: Sendable, Equatable, Codable {
    public var iouThreshold: Double
    public var confidenceThreshold: Double
    public var perClass: Bool
    public var confidenceInput: String
    public var coordinatesInput: String
    /// Inputs that replace the thresholds at run time ("" when there is none).
    public var iouThresholdInput: String
    public var confidenceThresholdInput: String
    public var confidenceOutput: String
    public var coordinatesOutput: String

    public init(
      iouThreshold: Double, confidenceThreshold: Double, perClass: Bool, confidenceInput: String,
      coordinatesInput: String,
      iouThresholdInput: String = "", confidenceThresholdInput: String = "", confidenceOutput: String,
      coordinatesOutput: String
    ) {
      self.iouThreshold = iouThreshold
      self.confidenceThreshold = confidenceThreshold
      self.perClass = perClass
      self.confidenceInput = confidenceInput
      self.coordinatesInput = coordinatesInput
      self.iouThresholdInput = iouThresholdInput
      self.confidenceThresholdInput = confidenceThresholdInput
      self.confidenceOutput = confidenceOutput
      self.coordinatesOutput = coordinatesOutput
    }

    /// One line for the report: `IoU above 0.45 suppressed per class; confidence below 0.25 dropped`.
    public var summary: String {
      var line =
        "IoU above \(iouThreshold) suppressed \(perClass ? "per class" : "across classes"); confidence below \(confidenceThreshold) dropped"
      let overrides = [("IoU", iouThresholdInput), ("confidence", confidenceThresholdInput)].filter { !$0.1.isEmpty }
      if !overrides.isEmpty {
        line += "; thresholds from inputs " + overrides.map { "\($0.1) (\($0.0))" }.joined(separator: ", ")
      }
      return line
    }
  }

  /// The first release of a platform that loads the model.
  public struct Release: Sendable, Equatable, Codable, CustomStringConvertible {
    /// `iOS`, `macOS`, `tvOS` or `watchOS`.
    public var platform: String
    public var version: String
    public var description: String { "\(platform) \(version)" }
  }

  /// How an image input's pixels become the network input: `scale * pixel + bias` per channel.
  public struct ImageInput: Sendable, Equatable, Codable {
    public var input: String
    public var width: Int
    public var height: Int
    /// `GRAYSCALE`, `RGB` or `BGR`: the channel order the network receives.
    public var colorSpace: String
    public var scale: Float
    /// The biases by color (nil for the channels the color space does not have).
    public var redBias: Float?
    public var greenBias: Float?
    public var blueBias: Float?
    public var grayBias: Float?
  }

  /// The model's metadata (what the format records; some formats record only a name).
  public struct Metadata: Sendable, Equatable, Codable {
    public struct Entry: Sendable, Equatable, Codable {
      public var key: String
      public var value: String

      public init(key: String, value: String) {
        self.key = key
        self.value = value
      }
    }
    public var name: String?
    public var shortDescription: String?
    public var author: String?
    public var license: String?
    public var version: String?
    /// `userDefined` entries, sorted by key.
    public var userDefined: [Entry]

    public init(
      name: String? = nil, shortDescription: String? = nil, author: String? = nil, license: String? = nil,
      version: String? = nil,
      userDefined: [Entry] = []
    ) {
      self.name = name
      self.shortDescription = shortDescription
      self.author = author
      self.license = license
      self.version = version
      self.userDefined = userDefined
    }
  }

  /// One layer, node or operation other than constants, as the format names it.
  public struct Layer: Sendable, Equatable, Codable {
    public var name: String
    /// Its type as the format names it (`Conv2D`, `convolution`, `conv`).
    public var type: String
    /// The output shape as the format states it (without the batch axis where it prints `None`); for a
    /// neural network, the blob as Core ML lays it out (`[Seq, C, H, W]` under the classic rank-5
    /// mapping, where Seq is 1 for images: `[1, 32, 46, 46]`; the declared rank with batch under exact
    /// mapping); as declared for an ML Program. Nil when it cannot be worked out (see `shapesUnavailable`).
    public var outputShape: [Int]?
    public var parameterCount: Int

    public init(name: String, type: String, outputShape: [Int]?, parameterCount: Int) {
      self.name = name
      self.type = type
      self.outputShape = outputShape
      self.parameterCount = parameterCount
    }
  }

  /// Weight values stored in one element type.
  public struct WeightStorage: Sendable, Equatable, Codable {
    /// `float32`, `float16`, `float64`, `int8`, `uint8`, `uint4`, ... (`int8`/`uintN` are quantized or palettized values).
    public var dataType: String
    public var count: Int
    public var bytes: Int

    public init(dataType: String, count: Int, bytes: Int) {
      self.dataType = dataType
      self.count = count
      self.bytes = bytes
    }
  }

  public var path: String
  public var format: FileFormat
  public var kind: ModelKind
  /// Whether modelconv imports and runs models of this kind (a neural network); a Core ML pipeline,
  /// tree ensemble or text classifier is only described.
  public var isRunnable: Bool
  /// The tool that wrote the file, when recorded (the training framework and its backend, an exporter).
  public var producer: Producer?
  /// Core ML: the specification version and, for an ML Program, the MIL opset.
  public var specificationVersion: Int?
  public var opset: String?
  /// Core ML: the first iOS, macOS, tvOS and watchOS releases that load the model.
  public var oldestReleases: [Release]
  public var inputs: [ConversionSummary.Feature]
  public var outputs: [ConversionSummary.Feature]
  public var imageInputs: [ImageInput]
  /// A classifier's labels in output order (empty otherwise).
  public var labels: [String]
  public var metadata: Metadata
  public var layers: [Layer]
  /// Why output shapes are missing, when the model could not be imported to work them out.
  public var shapesUnavailable: String?
  /// Every stored weight value (trainable and non-trainable).
  public var parameterCount: Int
  public var weights: [WeightStorage]
  /// Core ML pipelines: the models in order, recursively (empty for every other kind).
  public var subModels: [SubModel] = []
  /// A non-maximum suppression model's parameters (for a pipeline, see its sub-models).
  public var suppression: Suppression?
  /// For a format of operator graphs with versioned operator sets: its format version, the sets,
  /// the operators used and which are not supported, the declared (possibly symbolic) dimensions.
  public var graphDetails: GraphDetails?
  /// How the text report shows it (not in the JSON document).
  public var presentation: Presentation

  /// What a graph format declares beyond the common fields.
  public struct GraphDetails: Sendable, Equatable, Codable {
    public struct OperatorSet: Sendable, Equatable, Codable {
      /// `ai.onnx` for the default domain.
      public var domain: String
      public var version: Int
    }
    public struct OperatorUse: Sendable, Equatable, Codable {
      public var opType: String
      public var count: Int
      /// Whether the importer has a handler for it at the model's opset.
      public var supported: Bool
    }
    /// A graph input or output with its dimensions as declared: sizes, or symbolic names (`batch`, `N`).
    public struct DeclaredShape: Sendable, Equatable, Codable {
      public var name: String
      public var dimensions: [String]
    }
    /// The file format's own version (such as an IR version).
    public var formatVersion: Int
    public var operatorSets: [OperatorSet]
    public var operators: [OperatorUse]
    public var declaredInputs: [DeclaredShape]
    public var declaredOutputs: [DeclaredShape]
    /// Every operator the importer converts (its registry) with the opsets each handler starts at.
    public var supportedOperators: [SupportedOperator] = []
    public struct SupportedOperator: Sendable, Equatable, Codable {
      public var opType: String
      public var since: [Int]
    }
  }

  enum CodingKeys: String, CodingKey {
    case path, format, kind, isRunnable, producer, specificationVersion, opset, oldestReleases, inputs, outputs,
      imageInputs, labels,
      metadata, layers, shapesUnavailable, parameterCount, weights, subModels, suppression, graphDetails
  }

  public init(
    path: String, format: FileFormat, kind: ModelKind, isRunnable: Bool, presentation: Presentation,
    producer: Producer? = nil,
    specificationVersion: Int? = nil, opset: String? = nil, oldestReleases: [Release] = [],
    inputs: [ConversionSummary.Feature],
    outputs: [ConversionSummary.Feature], imageInputs: [ImageInput] = [], labels: [String] = [], metadata: Metadata,
    layers: [Layer],
    shapesUnavailable: String?, parameterCount: Int, weights: [WeightStorage], subModels: [SubModel] = [],
    graphDetails: GraphDetails? = nil, suppression: Suppression? = nil
  ) {
    self.path = path
    self.format = format
    self.kind = kind
    self.isRunnable = isRunnable
    self.presentation = presentation
    self.producer = producer
    self.specificationVersion = specificationVersion
    self.opset = opset
    self.oldestReleases = oldestReleases
    self.inputs = inputs
    self.outputs = outputs
    self.imageInputs = imageInputs
    self.labels = labels
    self.metadata = metadata
    self.layers = layers
    self.shapesUnavailable = shapesUnavailable
    self.parameterCount = parameterCount
    self.weights = weights
    self.subModels = subModels
    self.graphDetails = graphDetails
    self.suppression = suppression
  }

  /// Equal when the documents are: the presentation is how the text report shows them, not what they say.
  public static func == (a: Self, b: Self) -> Bool {
    a.path == b.path && a.format == b.format && a.kind == b.kind && a.isRunnable == b.isRunnable
      && a.producer == b.producer
      && a.specificationVersion == b.specificationVersion && a.opset == b.opset && a.oldestReleases == b.oldestReleases
      && a.inputs == b.inputs && a.outputs == b.outputs && a.imageInputs == b.imageInputs && a.labels == b.labels
      && a.metadata == b.metadata && a.layers == b.layers && a.shapesUnavailable == b.shapesUnavailable
      && a.parameterCount == b.parameterCount && a.weights == b.weights && a.subModels == b.subModels
      && a.graphDetails == b.graphDetails
  }

  /// Decoded documents carry no presentation: they show as a neutral report.
  public init(from decoder: any Decoder) throws {
    let c = try decoder.container(keyedBy: CodingKeys.self)
    self.init(
      path: try c.decode(String.self, forKey: .path), format: try c.decode(FileFormat.self, forKey: .format),
      kind: try c.decode(ModelKind.self, forKey: .kind), isRunnable: try c.decode(Bool.self, forKey: .isRunnable),
      presentation: Presentation(format: try c.decode(FileFormat.self, forKey: .format).rawValue, layerNoun: "layer"),
      producer: try c.decodeIfPresent(Producer.self, forKey: .producer),
      specificationVersion: try c.decodeIfPresent(Int.self, forKey: .specificationVersion),
      opset: try c.decodeIfPresent(String.self, forKey: .opset),
      oldestReleases: try c.decode([Release].self, forKey: .oldestReleases),
      inputs: try c.decode([ConversionSummary.Feature].self, forKey: .inputs),
      outputs: try c.decode([ConversionSummary.Feature].self, forKey: .outputs),
      imageInputs: try c.decode([ImageInput].self, forKey: .imageInputs),
      labels: try c.decode([String].self, forKey: .labels), metadata: try c.decode(Metadata.self, forKey: .metadata),
      layers: try c.decode([Layer].self, forKey: .layers),
      shapesUnavailable: try c.decodeIfPresent(String.self, forKey: .shapesUnavailable),
      parameterCount: try c.decode(Int.self, forKey: .parameterCount),
      weights: try c.decode([WeightStorage].self, forKey: .weights),
      subModels: try c.decode([SubModel].self, forKey: .subModels),
      graphDetails: try c.decodeIfPresent(GraphDetails.self, forKey: .graphDetails),
      suppression: try c.decodeIfPresent(Suppression.self, forKey: .suppression))
  }

  /// All weight bytes.
  public var weightBytes: Int { weights.reduce(0) { $0 + $1.bytes } }
}
