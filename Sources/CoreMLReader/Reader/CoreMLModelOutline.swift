import CoreMLCommon
import Foundation

/// What any Core ML model declares, read straight from the protobuf wire format: its model type, description
/// (inputs, outputs, metadata), class labels where the type carries them, and a pipeline's sub-models,
/// recursively. `CoreMLSpecReader` reads neural networks and ML Programs in full; this reads every model type
/// of Apple's `Model.proto` far enough to describe it (nothing is run or imported).
///
/// Field numbers are Apple's (coremltools `mlmodel/format/*.proto`), noted beside each use. Every number and
/// length is checked against the file (`ProtobufWire`); pipelines nest at most `maximumDepth` deep.
public struct CoreMLModelOutline: Sendable, Equatable {
  /// A declared input or output.
  public struct Feature: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
      /// `dataType`: `float32`, `double`, `int32`, `float16`, `int8`, or `unknown`.
      case multiArray(shape: [Int], dataType: String)
      /// `colorSpace`: `GRAYSCALE`, `RGB`, `BGR`, `GRAYSCALE_FLOAT16` or `INVALID`.
      case image(width: Int, height: Int, colorSpace: String)
      /// `keyType`: `int64` or `string` (values are doubles).
      case dictionary(keyType: String)
      /// `elementType`: `int64` or `string`.
      case sequence(elementType: String)
      case state(shape: [Int], dataType: String)
      case string, int64, double
      /// No type, or one this reader does not know.
      case unknown
    }
    public var name: String
    public var kind: Kind
    /// An array's sizes as ranges (`ArrayFeatureType.shapeRange`): lower bound and upper bound, nil for
    /// no limit; empty when the array declares none.
    public var sizeRanges: [SizeRange] = []
    /// Whether the app may leave the feature out (`FeatureType.isOptional`).
    public var isOptional = false
    /// An array's allowed shapes (`enumeratedShapes`); an image's width and height ranges
    /// (`imageSizeRange`) or allowed `[width, height]` sizes (`enumeratedSizes`); empty when none.
    public var enumeratedShapes: [[Int]] = []
    public var imageSizeRanges: [SizeRange] = []
    public var enumeratedImageSizes: [[Int]] = []

    public init(name: String, kind: Kind, sizeRanges: [SizeRange] = [], isOptional: Bool = false) {
      self.name = name
      self.kind = kind
      self.sizeRanges = sizeRanges
      self.isOptional = isOptional
    }
  }

  /// One dimension's allowed sizes (`upper` nil: unbounded), the type the writers declare them with.
  public typealias SizeRange = FeatureFlexibility.SizeRange

  /// A model inside a pipeline, with the name the pipeline gives it (if any).
  public struct SubModel: Sendable, Equatable {
    public var name: String?
    public var model: CoreMLModelOutline
  }

  public var specificationVersion: Int
  /// The `Model.Type` oneof case as Apple's proto names it (`pipelineClassifier`, `glmClassifier`, ...),
  /// `unknown` for a field number Apple's proto does not list, or `none` when the model has no type.
  public var typeName: String
  public var inputs: [Feature] = []
  public var outputs: [Feature] = []
  public var predictedFeatureName = ""
  public var predictedProbabilitiesName = ""
  public var shortDescription = ""
  public var author = ""
  public var license = ""
  public var version = ""
  public var userDefined: [String: String] = [:]
  /// The `ClassLabels` oneof of the model type (for a pipeline classifier, its last sub-model's; for a word
  /// tagger, its tags).
  public var stringClassLabels: [String] = []
  public var int64ClassLabels: [Int64] = []
  public var subModels: [SubModel] = []
  /// A `nonMaximumSuppression` model's parameters (NonMaximumSuppression.proto), else nil.
  public var suppression: Suppression?

  /// What a non-maximum suppression model declares: its thresholds, whether suppression is per class
  /// (`pickTop.perClass`), and which features it reads and writes (names it leaves empty are "").
  public struct Suppression: Sendable, Equatable {
    public var iouThreshold: Double = 0
    public var confidenceThreshold: Double = 0
    public var perClass = false
    public var confidenceInput = ""
    public var coordinatesInput = ""
    public var iouThresholdInput = ""
    public var confidenceThresholdInput = ""
    public var confidenceOutput = ""
    public var coordinatesOutput = ""
  }

  /// How deep pipelines may nest (Apple's own tools write one or two levels).
  public static let maximumDepth = 16

  /// `Model.Type` oneof cases by field number (Model.proto, `message Model`).
  public static let typeNames: [UInt32: String] = [
    200: "pipelineClassifier", 201: "pipelineRegressor", 202: "pipeline",
    300: "glmRegressor", 301: "supportVectorRegressor", 302: "treeEnsembleRegressor", 303: "neuralNetworkRegressor",
    304: "bayesianProbitRegressor",
    400: "glmClassifier", 401: "supportVectorClassifier", 402: "treeEnsembleClassifier", 403: "neuralNetworkClassifier",
    404: "kNearestNeighborsClassifier",
    500: "neuralNetwork", 501: "itemSimilarityRecommender", 502: "mlProgram",
    555: "customModel", 556: "linkedModel", 560: "classConfidenceThresholding",
    600: "oneHotEncoder", 601: "imputer", 602: "featureVectorizer", 603: "dictVectorizer", 604: "scaler",
    606: "categoricalMapping", 607: "normalizer", 609: "arrayFeatureExtractor", 610: "nonMaximumSuppression",
    900: "identity",
    2000: "textClassifier", 2001: "wordTagger", 2002: "visionFeaturePrint", 2003: "soundAnalysisPreprocessing",
    2004: "gazetteer", 2005: "wordEmbedding", 2006: "audioFeaturePrint",
    3000: "serializedModel",
  ]

  /// Where each model type keeps its class labels: the `StringVector` and `Int64Vector` field numbers.
  static let labelFields: [UInt32: (strings: UInt32, integers: UInt32?)] = [
    400: (100, 101),  // GLMClassifier.proto: stringClassLabels = 100, int64ClassLabels = 101
    401: (100, 101),  // SVM.proto, SupportVectorClassifier
    402: (100, 101),  // TreeEnsemble.proto, TreeEnsembleClassifier
    403: (100, 101),  // NeuralNetwork.proto, NeuralNetworkClassifier
    404: (100, 101),  // NearestNeighbors.proto, KNearestNeighborsClassifier
    610: (100, 101),  // NonMaximumSuppression.proto
    2000: (200, nil),  // TextClassifier.proto: stringClassLabels = 200
    2001: (200, nil),  // WordTagger.proto: stringTags = 200
    2004: (200, nil),  // Gazetteer.proto: stringClassLabels = 200
  ]

  /// Reads a `.mlmodel` file or the model of an `.mlpackage` folder.
  public static func read(contentsOf url: URL) throws -> CoreMLModelOutline {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
      throw CoreMLReaderError.unreadable(path: url.path)
    }
    var modelURL = url
    if isDirectory.boolValue {
      do { modelURL = try ModelPackage.contents(of: url).modelURL } catch let error as ModelPackage.FormatError {
        throw CoreMLReaderError.invalidProgram(path: url.path, operation: "package", detail: error.description)
      }
    }
    return try read(CoreMLSpecReader.specificationBytes(at: modelURL, path: url.path), path: url.path)
  }

  /// Reads a serialized `Model`.
  public static func read(_ bytes: [UInt8], path: String = "<memory>") throws -> CoreMLModelOutline {
    var reader = Reader(wire: ProtobufWire(bytes: bytes), path: path)
    return try reader.model(in: 0..<bytes.count, field: "Model", depth: 0)
  }

  private struct Reader {
    let wire: ProtobufWire
    let path: String

    func failure(_ field: String, _ detail: String) -> CoreMLReaderError {
      .invalidField(path: path, field: field, detail: detail)
    }

    func fields(_ range: Range<Int>, _ field: String) throws -> [ProtobufWire.Field] {
      do { return try wire.fields(in: range) } catch let error as ProtobufWire.Failure {
        throw failure(field, error.detail)
      }
    }

    func bytes(_ value: ProtobufWire.Value, _ field: String) throws -> Range<Int> {
      guard case .bytes(let range) = value else { throw failure(field, "expected a length-delimited value") }
      return range
    }

    func integers(_ value: ProtobufWire.Value, _ field: String) throws -> [UInt64] {
      do { return try wire.integers(value) } catch let error as ProtobufWire.Failure {
        throw failure(field, error.detail)
      }
    }

    func text(_ value: ProtobufWire.Value, _ field: String) throws -> String { wire.text(try bytes(value, field)) }

    func varint(_ value: ProtobufWire.Value, _ field: String) throws -> UInt64 {
      guard case .varint(let v) = value else { throw failure(field, "expected a varint") }
      return v
    }

    /// `message Model` (Model.proto): specificationVersion = 1, description = 2, the `Type` oneof (see `typeNames`).
    mutating func model(in range: Range<Int>, field: String, depth: Int) throws -> CoreMLModelOutline {
      guard depth <= CoreMLModelOutline.maximumDepth else {
        throw failure(field, "pipelines nested more than \(CoreMLModelOutline.maximumDepth) deep")
      }
      var outline = CoreMLModelOutline(specificationVersion: 0, typeName: "none")
      var type: (number: UInt32, range: Range<Int>)?
      for f in try fields(range, field) {
        switch f.number {
        case 1:
          outline.specificationVersion = Int(
            Int32(truncatingIfNeeded: try varint(f.value, field + ".specificationVersion")))
        case 2: try describe(&outline, try bytes(f.value, field + ".description"), field + ".description")
        // 10 is isUpdatable; the Type oneof takes 200 and up (the last one given wins, as for any oneof).
        case 200...:
          guard case .bytes(let body) = f.value else { continue }
          type = (f.number, body)
        default: continue
        }
      }
      guard let type else { return outline }
      let name = CoreMLModelOutline.typeNames[type.number] ?? "unknown"
      outline.typeName = name
      let here = "\(field).\(name)"
      switch type.number {
      case 200, 201:
        // PipelineClassifier / PipelineRegressor: Pipeline pipeline = 1.
        for f in try fields(type.range, here) where f.number == 1 {
          outline.subModels = try pipeline(
            try bytes(f.value, here + ".pipeline"), field: here + ".pipeline", depth: depth)
        }
        if type.number == 200, let last = outline.subModels.last?.model {
          outline.stringClassLabels = last.stringClassLabels
          outline.int64ClassLabels = last.int64ClassLabels
        }
      case 202:
        outline.subModels = try pipeline(type.range, field: here, depth: depth)
      case 610:
        outline.suppression = try suppression(type.range, here)
        fallthrough
      default:
        guard let labels = CoreMLModelOutline.labelFields[type.number] else { break }
        for f in try fields(type.range, here) {
          if f.number == labels.strings {
            outline.stringClassLabels = try stringVector(try bytes(f.value, here), here)
            outline.int64ClassLabels = []
          } else if f.number == labels.integers {
            outline.int64ClassLabels = try int64Vector(try bytes(f.value, here), here)
            outline.stringClassLabels = []
          }
        }
      }
      return outline
    }

    /// `message NonMaximumSuppression`: pickTop = 1 (PickTop { bool perClass = 1; }), iouThreshold = 110
    /// and confidenceThreshold = 111 (doubles), the feature names 200-203 (inputs) and 210-211 (outputs).
    func suppression(_ range: Range<Int>, _ field: String) throws -> Suppression {
      var result = Suppression()
      func double(_ value: ProtobufWire.Value, _ name: String) throws -> Double {
        guard case .fixed64(let bits) = value else { throw failure("\(field).\(name)", "expected a double") }
        return Double(bitPattern: bits)
      }
      for f in try fields(range, field) {
        switch f.number {
        case 1:
          for inner in try fields(try bytes(f.value, field + ".pickTop"), field + ".pickTop") where inner.number == 1 {
            result.perClass = try varint(inner.value, field + ".pickTop.perClass") != 0
          }
        case 110: result.iouThreshold = try double(f.value, "iouThreshold")
        case 111: result.confidenceThreshold = try double(f.value, "confidenceThreshold")
        case 200: result.confidenceInput = try text(f.value, field + ".confidenceInputFeatureName")
        case 201: result.coordinatesInput = try text(f.value, field + ".coordinatesInputFeatureName")
        case 202: result.iouThresholdInput = try text(f.value, field + ".iouThresholdInputFeatureName")
        case 203: result.confidenceThresholdInput = try text(f.value, field + ".confidenceThresholdInputFeatureName")
        case 210: result.confidenceOutput = try text(f.value, field + ".confidenceOutputFeatureName")
        case 211: result.coordinatesOutput = try text(f.value, field + ".coordinatesOutputFeatureName")
        default: continue
        }
      }
      return result
    }

    /// `message Pipeline` (Model.proto): repeated Model models = 1; repeated string names = 2.
    mutating func pipeline(_ range: Range<Int>, field: String, depth: Int) throws -> [SubModel] {
      var models: [SubModel] = []
      var names: [String] = []
      for f in try fields(range, field) {
        switch f.number {
        case 1:
          let at = "\(field).models[\(models.count)]"
          models.append(.init(name: nil, model: try model(in: try bytes(f.value, at), field: at, depth: depth + 1)))
        case 2: names.append(try text(f.value, "\(field).names[\(names.count)]"))
        default: continue
        }
      }
      for index in models.indices where index < names.count && !names[index].isEmpty {
        models[index].name = names[index]
      }
      return models
    }

    /// `message StringVector { repeated string vector = 1; }` (DataStructures.proto).
    func stringVector(_ range: Range<Int>, _ field: String) throws -> [String] {
      try fields(range, field).filter { $0.number == 1 }.map { try text($0.value, field) }
    }

    /// `message Int64Vector { repeated int64 vector = 1; }` (DataStructures.proto), packed or not.
    func int64Vector(_ range: Range<Int>, _ field: String) throws -> [Int64] {
      try fields(range, field).filter { $0.number == 1 }.flatMap { try integers($0.value, field) }.map {
        Int64(bitPattern: $0)
      }
    }

    /// `message ModelDescription` (Model.proto): input = 1, output = 10, predictedFeatureName = 11,
    /// predictedProbabilitiesName = 12, metadata = 100.
    func describe(_ outline: inout CoreMLModelOutline, _ range: Range<Int>, _ field: String) throws {
      for f in try fields(range, field) {
        switch f.number {
        case 1: outline.inputs.append(try feature(try bytes(f.value, field), "\(field).input[\(outline.inputs.count)]"))
        case 10:
          outline.outputs.append(try feature(try bytes(f.value, field), "\(field).output[\(outline.outputs.count)]"))
        case 11: outline.predictedFeatureName = try text(f.value, field + ".predictedFeatureName")
        case 12: outline.predictedProbabilitiesName = try text(f.value, field + ".predictedProbabilitiesName")
        case 100: try metadata(&outline, try bytes(f.value, field + ".metadata"), field + ".metadata")
        default: continue
        }
      }
    }

    /// `message Metadata` (Model.proto): shortDescription = 1, versionString = 2, author = 3, license = 4,
    /// map<string, string> userDefined = 100 (entries: key = 1, value = 2).
    func metadata(_ outline: inout CoreMLModelOutline, _ range: Range<Int>, _ field: String) throws {
      for f in try fields(range, field) {
        switch f.number {
        case 1: outline.shortDescription = try text(f.value, field + ".shortDescription")
        case 2: outline.version = try text(f.value, field + ".versionString")
        case 3: outline.author = try text(f.value, field + ".author")
        case 4: outline.license = try text(f.value, field + ".license")
        case 100:
          var key = ""
          var value = ""
          for entry in try fields(try bytes(f.value, field + ".userDefined"), field + ".userDefined") {
            if entry.number == 1 { key = try text(entry.value, field + ".userDefined.key") }
            if entry.number == 2 { value = try text(entry.value, field + ".userDefined.value") }
          }
          outline.userDefined[key] = value
        default: continue
        }
      }
    }

    /// `message FeatureDescription` (Model.proto): name = 1, type = 3 (`message FeatureType`, FeatureTypes.proto:
    /// int64Type = 1, doubleType = 2, stringType = 3, imageType = 4, multiArrayType = 5, dictionaryType = 6,
    /// sequenceType = 7, stateType = 8).
    func feature(_ range: Range<Int>, _ field: String) throws -> Feature {
      var result = Feature(name: "", kind: .unknown)
      for f in try fields(range, field) {
        switch f.number {
        case 1: result.name = try text(f.value, field + ".name")
        case 3:
          let typeField = field + ".type"
          for t in try fields(try bytes(f.value, typeField), typeField) {
            // isOptional = 1000.
            if t.number == 1000 { result.isOptional = try varint(t.value, typeField + ".isOptional") != 0 }
            guard case .bytes(let body) = t.value else { continue }
            switch t.number {
            case 1: result.kind = .int64
            case 2: result.kind = .double
            case 3: result.kind = .string
            case 4:
              result.kind = try image(body, typeField + ".imageType")
              try flexibility(ofImage: body, typeField + ".imageType", into: &result)
            case 5:
              let (shape, dataType) = try array(body, typeField + ".multiArrayType")
              result.kind = .multiArray(shape: shape, dataType: dataType)
              result.sizeRanges = try sizeRanges(body, typeField + ".multiArrayType")
              result.enumeratedShapes = try enumeratedShapes(body, typeField + ".multiArrayType")
            case 6:
              // DictionaryFeatureType: int64KeyType = 1, stringKeyType = 2.
              let keys = try fields(body, typeField + ".dictionaryType").map(\.number)
              result.kind = .dictionary(keyType: keys.last == 1 ? "int64" : "string")
            case 7:
              // SequenceFeatureType: int64Type = 1, stringType = 3 (sizeRange = 101).
              let types = try fields(body, typeField + ".sequenceType").map(\.number).filter { $0 == 1 || $0 == 3 }
              result.kind = .sequence(elementType: types.last == 1 ? "int64" : "string")
            case 8:
              // StateFeatureType: arrayType = 1.
              result.kind = .state(shape: [], dataType: "unknown")
              for s in try fields(body, typeField + ".stateType") where s.number == 1 {
                let (shape, dataType) = try array(
                  try bytes(s.value, typeField + ".stateType.arrayType"), typeField + ".stateType.arrayType")
                result.kind = .state(shape: shape, dataType: dataType)
              }
            default: continue
            }
          }
        default: continue
        }
      }
      return result
    }

    /// `message ImageFeatureType` (FeatureTypes.proto): width = 1, height = 2, colorSpace = 3 (GRAYSCALE 10,
    /// RGB 20, BGR 30, GRAYSCALE_FLOAT16 40).
    func image(_ range: Range<Int>, _ field: String) throws -> Feature.Kind {
      var width = 0
      var height = 0
      var colorSpace = "INVALID"
      for f in try fields(range, field) {
        guard case .varint(let v) = f.value else { continue }
        switch f.number {
        case 1: width = Int(Int64(bitPattern: v))
        case 2: height = Int(Int64(bitPattern: v))
        case 3: colorSpace = [10: "GRAYSCALE", 20: "RGB", 30: "BGR", 40: "GRAYSCALE_FLOAT16"][v] ?? "INVALID"
        default: continue
        }
      }
      return .image(width: width, height: height, colorSpace: colorSpace)
    }

    /// `ArrayFeatureType.shapeRange = 31` (`message ShapeRange`: repeated SizeRange sizeRanges = 1;
    /// `message SizeRange`: uint64 lowerBound = 1, int64 upperBound = 2, negative for no limit).
    func sizeRanges(_ range: Range<Int>, _ field: String) throws -> [SizeRange] {
      var result: [SizeRange] = []
      for f in try fields(range, field) where f.number == 31 {
        for size in try fields(try bytes(f.value, field + ".shapeRange"), field + ".shapeRange") where size.number == 1
        {
          var bounds = SizeRange(lower: 0, upper: 0)
          let sizeField = field + ".shapeRange.sizeRanges"
          for bound in try fields(try bytes(size.value, sizeField), sizeField) {
            let value = Int64(bitPattern: try varint(bound.value, sizeField))
            if bound.number == 1 { bounds.lower = Int(clamping: max(0, value)) }
            if bound.number == 2 { bounds.upper = value < 0 ? nil : Int(clamping: value) }
          }
          result.append(bounds)
        }
      }
      return result
    }

    /// `ArrayFeatureType.enumeratedShapes = 21` (`message EnumeratedShapes`: repeated Shape shapes = 1;
    /// `message Shape`: repeated int64 shape = 1).
    func enumeratedShapes(_ range: Range<Int>, _ field: String) throws -> [[Int]] {
      var result: [[Int]] = []
      let listField = field + ".enumeratedShapes"
      for f in try fields(range, field) where f.number == 21 {
        for shape in try fields(try bytes(f.value, listField), listField) where shape.number == 1 {
          var dims: [Int] = []
          for d in try fields(try bytes(shape.value, listField + ".shapes"), listField + ".shapes") where d.number == 1
          {
            dims += try integers(d.value, listField + ".shapes.shape").map { Int(Int64(bitPattern: $0)) }
          }
          result.append(dims)
        }
      }
      return result
    }

    /// `ImageFeatureType.enumeratedSizes = 21` (repeated ImageSize sizes = 1: uint64 width = 1, height = 2)
    /// and `imageSizeRange = 31` (SizeRange widthRange = 1, heightRange = 2).
    func flexibility(ofImage range: Range<Int>, _ field: String, into feature: inout Feature) throws {
      func bound(_ range: Range<Int>, _ field: String) throws -> SizeRange {
        var bounds = SizeRange(lower: 0, upper: nil)
        for b in try fields(range, field) {
          let value = Int64(bitPattern: try varint(b.value, field))
          if b.number == 1 { bounds.lower = Int(clamping: max(0, value)) }
          if b.number == 2 { bounds.upper = value < 0 ? nil : Int(clamping: value) }
        }
        return bounds
      }
      for f in try fields(range, field) {
        if f.number == 21 {
          let listField = field + ".enumeratedSizes"
          for size in try fields(try bytes(f.value, listField), listField) where size.number == 1 {
            var pair = [0, 0]
            for d in try fields(try bytes(size.value, listField + ".sizes"), listField + ".sizes")
            where d.number == 1 || d.number == 2 {
              pair[Int(d.number) - 1] = Int(clamping: try varint(d.value, listField + ".sizes"))
            }
            feature.enumeratedImageSizes.append(pair)
          }
        } else if f.number == 31 {
          let rangeField = field + ".imageSizeRange"
          var ranges = [SizeRange(lower: 0, upper: nil), SizeRange(lower: 0, upper: nil)]
          for r in try fields(try bytes(f.value, rangeField), rangeField) where r.number == 1 || r.number == 2 {
            ranges[Int(r.number) - 1] = try bound(try bytes(r.value, rangeField), rangeField)
          }
          feature.imageSizeRanges = ranges
        }
      }
    }

    /// `message ArrayFeatureType` (FeatureTypes.proto): repeated int64 shape = 1, dataType = 2 (FLOAT32 65568,
    /// DOUBLE 65600, INT32 131104, INT8 131080, FLOAT16 65552).
    func array(_ range: Range<Int>, _ field: String) throws -> ([Int], String) {
      var shape: [Int] = []
      var dataType = "unknown"
      for f in try fields(range, field) {
        switch f.number {
        case 1: shape += try integers(f.value, field + ".shape").map { Int(Int64(bitPattern: $0)) }
        case 2:
          guard case .varint(let v) = f.value else { continue }
          dataType =
            [65568: "float32", 65600: "double", 131104: "int32", 131080: "int8", 65552: "float16"][v] ?? "unknown"
        default: continue
        }
      }
      return (shape, dataType)
    }
  }
}
