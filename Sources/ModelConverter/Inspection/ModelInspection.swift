/// What a model file holds, as `modelconv inspect` shows it: its format and version, the OS releases
/// that load it, its inputs and outputs as Xcode shows them, image preprocessing, class labels,
/// metadata, layers with output shapes and parameter counts, and weight storage by type.
///
/// Made by `ModelInspector.inspect(contentsOf:)` from a Keras `.h5` or `.keras` file, a `.mlmodel` or
/// a `.mlpackage`. It encodes to JSON (schema `modelconv.inspect/1`) with every key present (null when a
/// field does not apply).
public struct ModelInspection: Sendable, Equatable, Codable {
  /// The kind of file, recognised by content.
  public enum FileFormat: String, Sendable, Equatable, Codable {
    /// A legacy Keras HDF5 file (`model.save("model.h5")`).
    case kerasHDF5
    /// A Keras 3 `.keras` zip archive.
    case kerasArchive
    /// A Core ML model file.
    case mlmodel
    /// A Core ML package folder.
    case mlpackage
    /// An ONNX model file.
    case onnx
  }

  /// The model's own kind: a Keras model, or the Core ML `Model.Type` case as Apple's Model.proto names it.
  public enum ModelKind: String, Sendable, Equatable, Codable, CaseIterable {
    case kerasSequential, kerasFunctional
    /// An ONNX graph.
    case onnx
    case neuralNetwork, neuralNetworkClassifier, neuralNetworkRegressor, mlProgram
    case pipelineClassifier, pipelineRegressor, pipeline
    case glmRegressor, supportVectorRegressor, treeEnsembleRegressor, bayesianProbitRegressor
    case glmClassifier, supportVectorClassifier, treeEnsembleClassifier, kNearestNeighborsClassifier
    case itemSimilarityRecommender, customModel, linkedModel, classConfidenceThresholding
    case oneHotEncoder, imputer, featureVectorizer, dictVectorizer, scaler, categoricalMapping, normalizer
    case arrayFeatureExtractor, nonMaximumSuppression, identity
    case textClassifier, wordTagger, visionFeaturePrint, soundAnalysisPreprocessing, gazetteer, wordEmbedding
    case audioFeaturePrint, serializedModel
    /// A Core ML type field that Apple's Model.proto does not list, or no type at all.
    case unknown

    /// Whether modelconv can import and run models of this kind.
    public var isNeuralNetwork: Bool {
      [.kerasSequential, .kerasFunctional, .onnx, .neuralNetwork, .neuralNetworkClassifier, .neuralNetworkRegressor, .mlProgram].contains(self)
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

  /// The model's metadata (Core ML's `metadata`; for Keras files only the model name is known).
  public struct Metadata: Sendable, Equatable, Codable {
    public struct Entry: Sendable, Equatable, Codable {
      public var key: String
      public var value: String
    }
    public var name: String?
    public var shortDescription: String?
    public var author: String?
    public var license: String?
    public var version: String?
    /// `userDefined` entries, sorted by key.
    public var userDefined: [Entry]
  }

  /// One layer (Keras), neural-network layer, or ML Program operation other than constants.
  public struct Layer: Sendable, Equatable, Codable {
    public var name: String
    /// The Keras class (`Conv2D`), the neural-network layer type (`convolution`) or the MIL operation (`conv`).
    public var type: String
    /// The output shape without the batch axis for Keras (as `model.summary()` after `None`); for a
    /// neural network, the blob as Core ML lays it out (`[Seq, C, H, W]` under the classic rank-5
    /// mapping, where Seq is 1 for images: `[1, 32, 46, 46]`; the declared rank with batch under exact
    /// mapping); as declared for an ML Program. Nil when it cannot be worked out (see `shapesUnavailable`).
    public var outputShape: [Int]?
    public var parameterCount: Int
  }

  /// Weight values stored in one element type.
  public struct WeightStorage: Sendable, Equatable, Codable {
    /// `float32`, `float16`, `float64`, `int8`, `uint8`, `uint4`, ... (`int8`/`uintN` are quantized or palettized values).
    public var dataType: String
    public var count: Int
    public var bytes: Int
  }

  public var path: String
  public var format: FileFormat
  public var kind: ModelKind
  /// The Keras version that wrote the file, and its backend, when recorded.
  public var kerasVersion: String?
  public var kerasBackend: String?
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
  /// Every stored weight value (Keras: trainable and non-trainable, as `count_params()`).
  public var parameterCount: Int
  public var weights: [WeightStorage]
  /// Core ML pipelines: the models in order, recursively (empty for every other kind).
  public var subModels: [SubModel] = []
  /// ONNX: IR version, producer, operator sets, the operators used and which are not supported.
  public var onnx: ONNXDetails?

  /// What an ONNX file declares beyond the common fields.
  public struct ONNXDetails: Sendable, Equatable, Codable {
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
    public var irVersion: Int
    public var producer: String
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

  /// All weight bytes.
  public var weightBytes: Int { weights.reduce(0) { $0 + $1.bytes } }
}
