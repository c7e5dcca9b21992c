import CProtobufC
import CoreMLSpec
import ModelIR

/// A Core ML `nonMaximumSuppression` model (NonMaximumSuppression.proto): a detector pipeline's last
/// stage, written as its own `.mlmodel` (and as a pipeline's stage by the pipeline writer).
///
/// Its description follows the proto's rules (`[rule NMS-FEATURES]` in Schemas/NonMaximumSuppression.proto):
/// `confidence` (boxes x classes) and `coordinates` (boxes x 4) inputs, optional double inputs that
/// replace the thresholds, and outputs of the same types whose first dimension ranges from 0 to the
/// boxes kept (at most `maximumBoxes`, or unbounded), as Ultralytics' pipelines declare them. The arrays
/// are double, or float32 from specification 5 (iOS 14) on, as Core ML's validator allows.
public enum NonMaximumSuppressionModel {
  public struct Parameters: Sendable, Equatable {
    public var iouThreshold: Double
    public var confidenceThreshold: Double
    public var perClass: Bool
    public var labels: ClassLabels?
    /// Boxes in the input (the detector's anchors), classes per box.
    public var boxes: Int
    public var classes: Int
    /// The most boxes the outputs hold; nil for no limit.
    public var maximumBoxes: Int?
    /// Names of the features: inputs, outputs, and the threshold inputs ("" for none).
    public var confidenceInput = "raw_confidence"
    public var coordinatesInput = "raw_coordinates"
    public var iouThresholdInput = "iouThreshold"
    public var confidenceThresholdInput = "confidenceThreshold"
    public var confidenceOutput = "confidence"
    public var coordinatesOutput = "coordinates"
    /// The arrays' element type: double, or float32 (which needs specification 5) to take a network
    /// stage's float32 outputs as they are.
    public var float32Arrays = false
    /// Shown by Xcode for each feature, by name.
    public var featureDescriptions: [String: String] = [:]

    public init(
      iouThreshold: Double, confidenceThreshold: Double, perClass: Bool, labels: ClassLabels?, boxes: Int, classes: Int,
      maximumBoxes: Int? = nil
    ) {
      self.iouThreshold = iouThreshold
      self.confidenceThreshold = confidenceThreshold
      self.perClass = perClass
      self.labels = labels
      self.boxes = boxes
      self.classes = classes
      self.maximumBoxes = maximumBoxes
    }
  }

  /// The specification version of the model type (iOS 12 / macOS 10.14).
  public static let specificationVersion = 3
  /// The version float32 arrays need (iOS 14 / macOS 11).
  public static let float32SpecificationVersion = 5

  /// The model, packed.
  public static func encode(_ p: Parameters) throws -> EncodedModel {
    guard p.boxes > 0, p.classes > 0, (0...1).contains(p.iouThreshold), p.confidenceThreshold >= 0,
      p.confidenceThreshold.isFinite, p.maximumBoxes.map({ $0 > 0 }) ?? true
    else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: "nonMaximumSuppression",
        detail:
          "needs boxes and classes above 0, an IoU threshold in [0, 1] and a finite confidence threshold >= 0 (got \(p.boxes) boxes, \(p.classes) classes, IoU \(p.iouThreshold), confidence \(p.confidenceThreshold))"
      )
    }
    if let labels = p.labels, labels.count != p.classes {
      throw CoreMLWriterError.unsupportedOperation(
        layer: "nonMaximumSuppression", detail: "\(labels.count) labels for \(p.classes) classes")
    }
    let arena = MessageArena()
    func array(_ name: String, _ shape: [Int], rowsUpTo: Int?? = nil) -> UnsafeMutablePointer<
      CoreML__Specification__FeatureDescription
    > {
      ModelDescription.feature(name, arena: arena) { type in
        let array = arena.message(core_ml__specification__array_feature_type__init)
        // An output's rows are a range only: Core ML's validator takes two dimensions from either the
        // (deprecated) shape or the range, never both.
        if rowsUpTo == nil {
          array.pointee.n_shape = shape.count
          array.pointee.shape = arena.array(shape.map { Int64($0) })
        }
        array.pointee.datatype =
          p.float32Arrays
          ? CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT32
          : CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__DOUBLE
        if case .some(let upper) = rowsUpTo {
          // Rows 0 to the maximum (-1: unbounded); the other dimension fixed.
          let rows = arena.message(core_ml__specification__size_range__init)
          rows.pointee.lowerbound = 0
          rows.pointee.upperbound = Int64(upper ?? -1)
          let columns = arena.message(core_ml__specification__size_range__init)
          columns.pointee.lowerbound = UInt64(shape[1])
          columns.pointee.upperbound = Int64(shape[1])
          let range = arena.message(core_ml__specification__array_feature_type__shape_range__init)
          range.pointee.n_sizeranges = 2
          range.pointee.sizeranges = arena.pointerArray([rows, columns])
          array.pointee.shape_flexibility_case =
            CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE
          array.pointee.shaperange = range
        }
        type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE
        type.pointee.multiarraytype = array
      }
    }
    func double(_ name: String) -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription> {
      let feature = ModelDescription.feature(name, arena: arena) { type in
        type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_DOUBLE_TYPE
        type.pointee.doubletype = arena.message(core_ml__specification__double_feature_type__init)
      }
      feature.pointee.type?.pointee.isoptional = 1
      return feature
    }
    var inputs = [array(p.confidenceInput, [p.boxes, p.classes]), array(p.coordinatesInput, [p.boxes, 4])]
    if !p.iouThresholdInput.isEmpty { inputs.append(double(p.iouThresholdInput)) }
    if !p.confidenceThresholdInput.isEmpty { inputs.append(double(p.confidenceThresholdInput)) }
    let limit: Int?? = .some(p.maximumBoxes)
    let outputs = [
      array(p.confidenceOutput, [0, p.classes], rowsUpTo: limit), array(p.coordinatesOutput, [0, 4], rowsUpTo: limit),
    ]

    for feature in inputs + outputs {
      if let name = feature.pointee.name.map({ String(cString: $0) }), let text = p.featureDescriptions[name] {
        feature.pointee.shortdescription = arena.string(text)
      }
    }
    let description = arena.message(core_ml__specification__model_description__init)
    description.pointee.n_input = inputs.count
    description.pointee.input = arena.pointerArray(inputs)
    description.pointee.n_output = outputs.count
    description.pointee.output = arena.pointerArray(outputs)

    let nms = arena.message(core_ml__specification__non_maximum_suppression__init)
    let pickTop = arena.message(core_ml__specification__non_maximum_suppression__pick_top__init)
    pickTop.pointee.perclass = p.perClass ? 1 : 0
    nms.pointee.suppression_method_case = CORE_ML__SPECIFICATION__NON_MAXIMUM_SUPPRESSION__SUPPRESSION_METHOD_PICK_TOP
    nms.pointee.picktop = pickTop
    nms.pointee.iouthreshold = p.iouThreshold
    nms.pointee.confidencethreshold = p.confidenceThreshold
    nms.pointee.confidenceinputfeaturename = arena.string(p.confidenceInput)
    nms.pointee.coordinatesinputfeaturename = arena.string(p.coordinatesInput)
    nms.pointee.iouthresholdinputfeaturename = arena.string(p.iouThresholdInput)
    nms.pointee.confidencethresholdinputfeaturename = arena.string(p.confidenceThresholdInput)
    nms.pointee.confidenceoutputfeaturename = arena.string(p.confidenceOutput)
    nms.pointee.coordinatesoutputfeaturename = arena.string(p.coordinatesOutput)
    switch p.labels {
    case .strings(let labels)?:
      let vector = arena.message(core_ml__specification__string_vector__init)
      vector.pointee.n_vector = labels.count
      vector.pointee.vector = arena.pointerArray(labels.map { arena.string($0) })
      nms.pointee.class_labels_case = CORE_ML__SPECIFICATION__NON_MAXIMUM_SUPPRESSION__CLASS_LABELS_STRING_CLASS_LABELS
      nms.pointee.stringclasslabels = vector
    case .integers(let labels)?:
      let vector = arena.message(core_ml__specification__int64_vector__init)
      vector.pointee.n_vector = labels.count
      vector.pointee.vector = arena.array(labels)
      nms.pointee.class_labels_case = CORE_ML__SPECIFICATION__NON_MAXIMUM_SUPPRESSION__CLASS_LABELS_INT64_CLASS_LABELS
      nms.pointee.int64classlabels = vector
    case nil: break
    }

    let version = p.float32Arrays ? float32SpecificationVersion : specificationVersion
    let model = arena.message(core_ml__specification__model__init)
    model.pointee.specificationversion = Int32(version)
    model.pointee.description = description
    model.pointee.type_case = CORE_ML__SPECIFICATION__MODEL__TYPE_NON_MAXIMUM_SUPPRESSION
    model.pointee.nonmaximumsuppression = nms
    var bytes = [UInt8](repeating: 0, count: core_ml__specification__model__get_packed_size(model))
    _ = core_ml__specification__model__pack(model, &bytes)
    return EncodedModel(
      format: .neuralNetwork, specification: bytes, weights: nil, specificationVersion: version)
  }
}
