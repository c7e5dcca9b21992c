import CoreMLCommon

/// A Swift view of a decoded Core ML model: its description and its neural-network layers or ML Program.
///
/// This is what the reader hands to callers (and tests) instead of protobuf-c structs.
public struct CoreMLModelSpec: Sendable, Equatable {
  /// A model input or output.
  public struct Feature: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
      case multiArray(shape: [Int], dataType: Int)
      case image(width: Int, height: Int, colorSpace: String)
      case dictionary(keyType: String)
      case string
      case int64
      case double
    }
    public var name: String
    public var kind: Kind
    /// Whether the description marks the feature optional (a recurrent layer's state input, as the
    /// Keras converter declared them: Core ML reads zeros when it is not given).
    public var isOptional: Bool
    /// The value an optional array input is filled with when it is not given (`floatDefaultValue`,
    /// `doubleDefaultValue` or `intDefaultValue`, specification 5+); nil when the description sets none.
    public var defaultValue: Double?
    /// An array's sizes as ranges (`shapeRange`), one per dimension; empty when it declares none.
    public var sizeRanges: [CoreMLModelOutline.SizeRange] = []
    /// An array's allowed shapes (`enumeratedShapes`), in file order; empty when it declares none.
    public var enumeratedShapes: [[Int]] = []
    /// An image's allowed sizes: width and height ranges (`imageSizeRange`), or `[width, height]` pairs
    /// (`enumeratedSizes`); empty when it declares none.
    public var imageSizeRanges: [CoreMLModelOutline.SizeRange] = []
    public var enumeratedImageSizes: [[Int]] = []

    public init(name: String, kind: Kind, isOptional: Bool = false, defaultValue: Double? = nil) {
      self.name = name
      self.kind = kind
      self.isOptional = isOptional
      self.defaultValue = defaultValue
    }
  }

  /// A detector pipeline's suppression stage (NonMaximumSuppression.proto), as declared.
  public struct Suppression: Sendable, Equatable {
    public var specificationVersion: Int
    public var iouThreshold: Double
    public var confidenceThreshold: Double
    /// `pickTop.perClass`; nil when no suppression method is set.
    public var perClass: Bool?
    public var stringClassLabels: [String]
    public var int64ClassLabels: [Int64]
    public var confidenceInput: String
    public var coordinatesInput: String
    /// "" when the threshold is fixed.
    public var iouThresholdInput: String
    public var confidenceThresholdInput: String
    public var confidenceOutput: String
    public var coordinatesOutput: String
    /// The stage's own description.
    public var inputs: [Feature]
    public var outputs: [Feature]

    /// The labels as text (integer labels written out).
    public var labels: [String] {
      stringClassLabels.isEmpty ? int64ClassLabels.map(String.init) : stringClassLabels
    }
  }

  /// A pipeline's own description, when the model read is a pipeline of a network and a suppression (the
  /// spec's other fields then describe the network stage).
  public struct Pipeline: Sendable, Equatable {
    public var specificationVersion: Int
    public var inputs: [Feature]
    public var outputs: [Feature]
    /// The stages' names (`Pipeline.names`), empty when the file gives none.
    public var stageNames: [String]
    public var suppression: Suppression
  }

  /// One neural-network layer: its names, and its parameters decoded into typed fields.
  public struct Layer: Sendable, Equatable {
    public var name: String
    /// The oneof case, named as in the proto (`convolution`, `innerProduct`, ...; `activation.<kind>` for an
    /// activation layer), for messages and inspection.
    public var kind: String
    public var inputs: [String]
    public var outputs: [String]
    /// The layer's parameters, typed as in NeuralNetwork.proto: float16 weights widened, quantized values dequantized.
    public var parameters: CoreMLLayerParameters
    /// Whether a weight field was stored as float16.
    public var usesFloat16: Bool = false
    /// The bit width of quantized weights (`rawValue`), or 0 when none are quantized.
    public var quantizationBits: Int = 0

    public init(
      name: String, kind: String, inputs: [String], outputs: [String], parameters: CoreMLLayerParameters,
      usesFloat16: Bool = false,
      quantizationBits: Int = 0
    ) {
      (self.name, self.kind, self.inputs, self.outputs) = (name, kind, inputs, outputs)
      self.parameters = parameters
      self.usesFloat16 = usesFloat16
      self.quantizationBits = quantizationBits
    }

    /// The weight blobs by proto field name, for listings (see `CoreMLLayerParameters.namedWeights`).
    public var namedWeights: [String: [Float]] { parameters.namedWeights }
  }

  /// An image input's scaler: `y = channelScale * x + bias`.
  public struct ImageScaler: Sendable, Equatable {
    public var featureName: String
    public var channelScale: Float
    public var redBias: Float
    public var greenBias: Float
    public var blueBias: Float
    public var grayBias: Float

    public init(
      featureName: String, channelScale: Float, redBias: Float, greenBias: Float, blueBias: Float, grayBias: Float
    ) {
      self.featureName = featureName
      self.channelScale = channelScale
      self.redBias = redBias
      self.greenBias = greenBias
      self.blueBias = blueBias
      self.grayBias = grayBias
    }
  }

  public var specificationVersion: Int
  /// `neuralNetwork`, `neuralNetworkClassifier`, `neuralNetworkRegressor` or `mlProgram`.
  public var modelType: String
  public var inputs: [Feature]
  public var outputs: [Feature]
  public var predictedFeatureName: String
  public var predictedProbabilitiesName: String
  public var layers: [Layer]
  public var preprocessing: [ImageScaler]
  public var stringClassLabels: [String]
  public var int64ClassLabels: [Int64]
  public var labelProbabilityLayerName: String
  /// `EXACT_ARRAY_MAPPING`: multiarray inputs keep their declared rank (else rank-5 `[S, B, C, H, W]`).
  public var exactArrayMapping: Bool
  /// `RANK4_IMAGE_MAPPING`: image inputs are `[B, C, H, W]` (else rank-5).
  public var rank4ImageMapping: Bool
  public var shortDescription: String
  public var author: String
  public var license: String
  public var version: String
  public var userDefined: [String: String]
  /// For `mlProgram` models: the decoded `main` function (nil for neural networks).
  public var program: MILProgram? = nil
  /// For a detector pipeline: the pipeline around this network stage (nil for a model read alone).
  public var pipeline: Pipeline? = nil

  /// Whether the model computes or stores weights in float16 (a neural-network layer's float16 weights,
  /// or an ML Program with float16 tensors).
  public var usesFloat16: Bool { layers.contains(where: \.usesFloat16) || (program?.usesFloat16 ?? false) }

  /// The smallest bit width of quantized or palettized weights, or 0 when there are none.
  public var quantizationBits: Int {
    let bits = layers.map(\.quantizationBits).filter { $0 > 0 } + [program?.quantizationBits ?? 0].filter { $0 > 0 }
    return bits.min() ?? 0
  }

  /// The layer with this name.
  public func layer(named name: String) -> Layer? { layers.first { $0.name == name } }
}
