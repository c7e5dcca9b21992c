import CProtobufC
import CoreMLCommon
import CoreMLSpec
import Foundation
import ModelFormats

/// Decodes `.mlmodel` bytes with protoc-c's generated reader into a `CoreMLModelSpec`.
public enum CoreMLSpecReader {
  /// Decodes a serialized `Model`.
  ///
  /// - Parameter weightsURL: for an ML Program, the package folder holding `weight.bin`; an ML Program read
  ///   without one (a bare `.mlmodel` file) is an error, since its weights live outside the file.
  /// - Parameter detectorPipelines: whether a pipeline of a network and a non-maximum suppression is read
  ///   (its network stage, `CoreMLModelSpec.pipeline` describing the rest) rather than refused by name.
  public static func read(
    _ bytes: [UInt8], path: String = "<memory>", weightsURL: URL? = nil, detectorPipelines: Bool = false
  ) throws -> CoreMLModelSpec {
    try checkNesting(bytes, path: path)
    guard
      let model = bytes.withUnsafeBufferPointer({ core_ml__specification__model__unpack(nil, $0.count, $0.baseAddress) }
      )
    else {
      throw CoreMLReaderError.malformed(path: path)
    }
    defer { core_ml__specification__model__free_unpacked(model, nil) }
    guard detectorPipelines, model.pointee.type_case == CORE_ML__SPECIFICATION__MODEL__TYPE_PIPELINE else {
      return try read(model.pointee, path: path, weightsURL: weightsURL)
    }
    return try detectorPipeline(model.pointee, path: path, weightsURL: weightsURL)
  }

  /// A pipeline of a neural network or ML Program followed by a non-maximum suppression (a detector, as
  /// Vision runs it): the network stage read as a model of its own, the suppression and the pipeline's
  /// description kept beside it. Other pipelines are refused by name.
  static func detectorPipeline(_ m: CoreML__Specification__Model, path: String, weightsURL: URL?) throws
    -> CoreMLModelSpec
  {
    let models = m.pipeline.map { buffer($0.pointee.models, $0.pointee.n_models) } ?? []
    let networks: Set<UInt32> = [
      CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK.rawValue,
      CORE_ML__SPECIFICATION__MODEL__TYPE_ML_PROGRAM.rawValue,
    ]
    guard models.count == 2, let network = models[0], let nms = models[1],
      networks.contains(network.pointee.type_case.rawValue),
      nms.pointee.type_case == CORE_ML__SPECIFICATION__MODEL__TYPE_NON_MAXIMUM_SUPPRESSION,
      let parameters = nms.pointee.nonmaximumsuppression?.pointee
    else {
      throw CoreMLReaderError.unsupportedModelType(
        path: path, type: "pipeline (other than a neural network or ML Program followed by non-maximum suppression)")
    }
    // The network stage is not a pipeline (checked above): no further nesting.
    var spec = try read(network.pointee, path: path, weightsURL: weightsURL)
    func features(_ model: CoreML__Specification__Model) -> (
      inputs: [CoreMLModelSpec.Feature], outputs: [CoreMLModelSpec.Feature]
    ) {
      guard let description = model.description?.pointee else { return ([], []) }
      return (
        buffer(description.input, description.n_input).compactMap { $0.map(feature) },
        buffer(description.output, description.n_output).compactMap { $0.map(feature) }
      )
    }
    let (nmsInputs, nmsOutputs) = features(nms.pointee)
    var suppression = CoreMLModelSpec.Suppression(
      specificationVersion: Int(nms.pointee.specificationversion), iouThreshold: parameters.iouthreshold,
      confidenceThreshold: parameters.confidencethreshold, perClass: nil, stringClassLabels: [], int64ClassLabels: [],
      confidenceInput: text(parameters.confidenceinputfeaturename),
      coordinatesInput: text(parameters.coordinatesinputfeaturename),
      iouThresholdInput: text(parameters.iouthresholdinputfeaturename),
      confidenceThresholdInput: text(parameters.confidencethresholdinputfeaturename),
      confidenceOutput: text(parameters.confidenceoutputfeaturename),
      coordinatesOutput: text(parameters.coordinatesoutputfeaturename), inputs: nmsInputs, outputs: nmsOutputs)
    if parameters.suppression_method_case
      == CORE_ML__SPECIFICATION__NON_MAXIMUM_SUPPRESSION__SUPPRESSION_METHOD_PICK_TOP,
      let pickTop = parameters.picktop?.pointee
    {
      suppression.perClass = pickTop.perclass != 0
    }
    switch parameters.class_labels_case {
    case CORE_ML__SPECIFICATION__NON_MAXIMUM_SUPPRESSION__CLASS_LABELS_STRING_CLASS_LABELS:
      if let vector = parameters.stringclasslabels?.pointee {
        suppression.stringClassLabels = buffer(vector.vector, vector.n_vector).map { text($0) }
      }
    case CORE_ML__SPECIFICATION__NON_MAXIMUM_SUPPRESSION__CLASS_LABELS_INT64_CLASS_LABELS:
      if let vector = parameters.int64classlabels?.pointee {
        suppression.int64ClassLabels = buffer(vector.vector, vector.n_vector)
      }
    default: break
    }
    let (inputs, outputs) = features(m)
    let names = m.pipeline.map { buffer($0.pointee.names, $0.pointee.n_names).map { text($0) } } ?? []
    spec.pipeline = CoreMLModelSpec.Pipeline(
      specificationVersion: Int(m.specificationversion), inputs: inputs, outputs: outputs, stageNames: names,
      suppression: suppression)
    // The pipeline's metadata is the model's.
    if let metadata = m.description?.pointee.metadata?.pointee {
      for entry in buffer(metadata.userdefined, metadata.n_userdefined) {
        if let entry { spec.userDefined[text(entry.pointee.key)] = text(entry.pointee.value) }
      }
    }
    return spec
  }

  /// A model that is not a pipeline.
  static func read(_ m: CoreML__Specification__Model, path: String, weightsURL: URL?) throws -> CoreMLModelSpec {
    var spec = CoreMLModelSpec(
      specificationVersion: Int(m.specificationversion), modelType: "", inputs: [], outputs: [],
      predictedFeatureName: "", predictedProbabilitiesName: "", layers: [], preprocessing: [],
      stringClassLabels: [], int64ClassLabels: [], labelProbabilityLayerName: "", exactArrayMapping: false,
      rank4ImageMapping: false,
      shortDescription: "", author: "", license: "", version: "", userDefined: [:])
    if let description = m.description?.pointee {
      spec.inputs = buffer(description.input, description.n_input).compactMap { $0.map(feature) }
      spec.outputs = buffer(description.output, description.n_output).compactMap { $0.map(feature) }
      // Arrays of at most 16 axes, as MIL's tensor types (a program written for a higher rank could not hold it).
      for feature in spec.inputs + spec.outputs {
        if case .multiArray(let shape, _) = feature.kind, shape.count > 16 {
          throw CoreMLReaderError.invalidField(
            path: path, field: "description.\(feature.name)",
            detail: "an array of rank \(shape.count); at most 16 axes are read")
        }
      }
      spec.predictedFeatureName = text(description.predictedfeaturename)
      spec.predictedProbabilitiesName = text(description.predictedprobabilitiesname)
      if let metadata = description.metadata?.pointee {
        spec.shortDescription = text(metadata.shortdescription)
        spec.author = text(metadata.author)
        spec.license = text(metadata.license)
        spec.version = text(metadata.versionstring)
        for entry in buffer(metadata.userdefined, metadata.n_userdefined) {
          if let entry { spec.userDefined[text(entry.pointee.key)] = text(entry.pointee.value) }
        }
      }
    }

    func network(
      _ layers: UnsafeMutablePointer<UnsafeMutablePointer<NNLayer>?>?, _ layerCount: Int,
      _ preprocessing: UnsafeMutablePointer<UnsafeMutablePointer<CoreML__Specification__NeuralNetworkPreprocessing>?>?,
      _ preprocessingCount: Int, arrayMapping: UInt32, imageMapping: UInt32
    ) throws {
      spec.layers = try buffer(layers, layerCount).compactMap { try $0.map { try layer($0, path: path) } }
      spec.preprocessing = buffer(preprocessing, preprocessingCount).compactMap { $0.flatMap(scaler) }
      spec.exactArrayMapping = arrayMapping == 1
      spec.rank4ImageMapping = imageMapping == 1
    }
    switch m.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER:
      let n = m.neuralnetworkclassifier.pointee
      spec.modelType = "neuralNetworkClassifier"
      try network(
        n.layers, n.n_layers, n.preprocessing, n.n_preprocessing, arrayMapping: n.arrayinputshapemapping.rawValue,
        imageMapping: n.imageinputshapemapping.rawValue)
      spec.labelProbabilityLayerName = text(n.labelprobabilitylayername)
      switch n.class_labels_case {
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_STRING_CLASS_LABELS:
        let vector = n.stringclasslabels.pointee
        spec.stringClassLabels = buffer(vector.vector, vector.n_vector).map { text($0) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_INT64_CLASS_LABELS:
        let vector = n.int64classlabels.pointee
        spec.int64ClassLabels = buffer(vector.vector, vector.n_vector)
      default: break
      }
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK:
      let n = m.neuralnetwork.pointee
      spec.modelType = "neuralNetwork"
      try network(
        n.layers, n.n_layers, n.preprocessing, n.n_preprocessing, arrayMapping: n.arrayinputshapemapping.rawValue,
        imageMapping: n.imageinputshapemapping.rawValue)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR:
      let n = m.neuralnetworkregressor.pointee
      spec.modelType = "neuralNetworkRegressor"
      try network(
        n.layers, n.n_layers, n.preprocessing, n.n_preprocessing, arrayMapping: n.arrayinputshapemapping.rawValue,
        imageMapping: n.imageinputshapemapping.rawValue)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_ML_PROGRAM:
      guard let weightsURL else {
        throw CoreMLReaderError.invalidProgram(
          path: path, operation: "program",
          detail: "an ML Program must be read from its .mlpackage folder (its weights live beside the model file)")
      }
      guard let program = m.mlprogram?.pointee else { throw CoreMLReaderError.malformed(path: path) }
      spec.modelType = "mlProgram"
      // Program tensors keep their declared rank, batch included, like a neural network's exact mapping.
      spec.exactArrayMapping = true
      spec.rank4ImageMapping = true
      var decoder = MILProgramDecoder(path: path, weightsURL: weightsURL)
      let decoded = try decoder.decode(program)
      spec.program = decoded
      if let classify = decoded.operations.first(where: { $0.type == "classify" }),
        case .value(let classes)? = classify.inputs["classes"]?.first
      {
        if classes.type.dataType == .string {
          spec.stringClassLabels = classes.strings
        } else {
          spec.int64ClassLabels = classes.integers
        }
      } else if let classify = decoded.operations.first(where: { $0.type == "classify" }),
        case .name(let name)? = classify.inputs["classes"]?.first,
        let classes = decoded.producer(of: name)?.value
      {
        if classes.type.dataType == .string {
          spec.stringClassLabels = classes.strings
        } else {
          spec.int64ClassLabels = classes.integers
        }
      }
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NON_MAXIMUM_SUPPRESSION:
      // A detector's last stage: described (CoreMLModelOutline), not converted or run as a network.
      throw CoreMLReaderError.unsupportedModelType(path: path, type: "nonMaximumSuppression")
    case CORE_ML__SPECIFICATION__MODEL__TYPE_PIPELINE_CLASSIFIER:
      throw CoreMLReaderError.unsupportedModelType(path: path, type: "pipelineClassifier")
    case CORE_ML__SPECIFICATION__MODEL__TYPE_PIPELINE_REGRESSOR:
      throw CoreMLReaderError.unsupportedModelType(path: path, type: "pipelineRegressor")
    case CORE_ML__SPECIFICATION__MODEL__TYPE_PIPELINE:
      throw CoreMLReaderError.unsupportedModelType(path: path, type: "pipeline")
    default:
      // Model types our schema leaves out arrive as unknown fields; their field number names them.
      let tags = buffer(m.base.unknown_fields, Int(m.base.n_unknown_fields)).map(\.tag)
      let type = tags.lazy.compactMap { modelTypeNames[$0] }.first ?? "model without a neural network"
      throw CoreMLReaderError.unsupportedModelType(path: path, type: type)
    }
    return spec
  }

  /// Refuses bytes whose messages nest deeper than `ProtobufNesting.maximumDepth` (or whose wire data
  /// is malformed) before protobuf-c, which recurses without a limit, unpacks them.
  static func checkNesting(_ bytes: [UInt8], path: String) throws {
    do {
      try bytes.withUnsafeBufferPointer { buffer in
        try withUnsafePointer(to: core_ml__specification__model__descriptor) { descriptor in
          try ProtobufNesting(bytes: buffer).check(0..<buffer.count, descriptor: descriptor)
        }
      }
    } catch ProtobufNesting.Failure.malformed {
      throw CoreMLReaderError.malformed(path: path)
    } catch ProtobufNesting.Failure.nulInString(let field) {
      throw CoreMLReaderError.invalidField(path: path, field: field, detail: "the text holds a NUL character")
    } catch ProtobufNesting.Failure.tooDeep {
      throw CoreMLReaderError.invalidField(
        path: path, field: "Model",
        detail:
          "messages are nested more than \(ProtobufNesting.defaultDepth) deep (blocks inside operations, layers inside loops, models inside pipelines); Core ML's own parser refuses such files too"
      )
    }
  }

  /// Reads and decodes a `.mlmodel` file, or the model inside an `.mlpackage` folder (found through its
  /// `Manifest.json`; an ML Program's weights are read from the package's weights folder).
  public static func read(contentsOf url: URL, detectorPipelines: Bool = false) throws -> CoreMLModelSpec {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
      throw CoreMLReaderError.unreadable(path: url.path)
    }
    guard isDirectory.boolValue else {
      return try read(specificationBytes(at: url, path: url.path), path: url.path, detectorPipelines: detectorPipelines)
    }
    let contents: ModelPackage.Contents
    do { contents = try ModelPackage.contents(of: url) } catch let error as ModelPackage.FormatError {
      throw CoreMLReaderError.invalidProgram(path: url.path, operation: "package", detail: error.description)
    }
    return try read(
      specificationBytes(at: contents.modelURL, path: url.path), path: url.path, weightsURL: contents.weightsURL,
      detectorPipelines: detectorPipelines)
  }

  /// The bytes of a serialized `Model` file, refused before reading when the file is larger than one
  /// protobuf message may be (`CoreMLLimits.maximumSpecificationBytes`), which Core ML cannot load either.
  static func specificationBytes(at url: URL, path: String) throws -> [UInt8] {
    let file: RangedFile
    do { file = try RangedFile(url.path) } catch { throw CoreMLReaderError.unreadable(path: url.path) }
    if file.size > CoreMLLimits.maximumSpecificationBytes {
      throw CoreMLReaderError.invalidField(
        path: path, field: "Model",
        detail:
          "the specification is \(file.size) bytes, more than the \(CoreMLLimits.maximumSpecificationBytes) bytes one protobuf message may hold (Core ML cannot load it either)"
      )
    }
    do { return try file.readAll(limit: CoreMLLimits.maximumSpecificationBytes) } catch {
      throw CoreMLReaderError.unreadable(path: url.path)
    }
  }

  /// `Model.Type` oneof cases by field number, for naming models the reader does not handle.
  static var modelTypeNames: [UInt32: String] { CoreMLModelOutline.typeNames }

  // MARK: Helpers

  static func buffer<T>(_ pointer: UnsafeMutablePointer<T>?, _ count: Int) -> [T] {
    guard let pointer, count > 0 else { return [] }
    return Array(UnsafeBufferPointer(start: pointer, count: count))
  }

  static func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

  static func ints(_ pointer: UnsafeMutablePointer<UInt64>?, _ count: Int) -> [Int] {
    buffer(pointer, count).map { Int(clamping: $0) }
  }

  private static func feature(_ pointer: UnsafeMutablePointer<CoreML__Specification__FeatureDescription>)
    -> CoreMLModelSpec.Feature
  {
    let description = pointer.pointee
    let name = text(description.name)
    guard let type = description.type?.pointee else { return .init(name: name, kind: .double) }
    var feature = kind(of: type, name: name)
    feature.isOptional = type.isoptional != 0
    if type.type_case == CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE,
      let array = type.multiarraytype?.pointee
    {
      if array.shape_flexibility_case == CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE,
        let range = array.shaperange?.pointee
      {
        feature.sizeRanges = buffer(range.sizeranges, range.n_sizeranges).compactMap { size in
          size.map {
            CoreMLModelOutline.SizeRange(
              lower: Int(clamping: $0.pointee.lowerbound),
              upper: $0.pointee.upperbound < 0 ? nil : Int(clamping: $0.pointee.upperbound))
          }
        }
      }
      if array.shape_flexibility_case
        == CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_ENUMERATED_SHAPES,
        let shapes = array.enumeratedshapes?.pointee
      {
        feature.enumeratedShapes = buffer(shapes.shapes, shapes.n_shapes).compactMap { shape in
          shape.map { buffer($0.pointee.shape, $0.pointee.n_shape).map { Int(clamping: $0) } }
        }
      }
      switch array.default_optional_value_case {
      case CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__DEFAULT_OPTIONAL_VALUE_FLOAT_DEFAULT_VALUE:
        feature.defaultValue = Double(array.floatdefaultvalue)
      case CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__DEFAULT_OPTIONAL_VALUE_DOUBLE_DEFAULT_VALUE:
        feature.defaultValue = array.doubledefaultvalue
      case CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__DEFAULT_OPTIONAL_VALUE_INT_DEFAULT_VALUE:
        feature.defaultValue = Double(array.intdefaultvalue)
      default: break
      }
    }
    if type.type_case == CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE, let image = type.imagetype?.pointee {
      func range(_ size: UnsafeMutablePointer<CoreML__Specification__SizeRange>?) -> CoreMLModelOutline.SizeRange {
        guard let size = size?.pointee else { return .init(lower: 0, upper: nil) }
        return .init(
          lower: Int(clamping: size.lowerbound), upper: size.upperbound < 0 ? nil : Int(clamping: size.upperbound))
      }
      switch image.size_flexibility_case {
      case CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_IMAGE_SIZE_RANGE:
        if let ranges = image.imagesizerange?.pointee {
          feature.imageSizeRanges = [range(ranges.widthrange), range(ranges.heightrange)]
        }
      case CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_ENUMERATED_SIZES:
        if let sizes = image.enumeratedsizes?.pointee {
          feature.enumeratedImageSizes = buffer(sizes.sizes, sizes.n_sizes).compactMap { size in
            size.map { [Int(clamping: $0.pointee.width), Int(clamping: $0.pointee.height)] }
          }
        }
      default: break
      }
    }
    return feature
  }

  private static func kind(of type: CoreML__Specification__FeatureType, name: String) -> CoreMLModelSpec.Feature {
    switch type.type_case {
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE:
      let array = type.multiarraytype.pointee
      return .init(
        name: name,
        kind: .multiArray(
          shape: buffer(array.shape, array.n_shape).map { Int($0) }, dataType: Int(array.datatype.rawValue)))
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE:
      let image = type.imagetype.pointee
      let spaces: [UInt32: String] = [10: "GRAYSCALE", 20: "RGB", 30: "BGR", 40: "GRAYSCALE_FLOAT16"]
      return .init(
        name: name,
        kind: .image(
          width: Int(clamping: image.width), height: Int(clamping: image.height),
          colorSpace: spaces[image.colorspace.rawValue] ?? "INVALID"))
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_DICTIONARY_TYPE:
      let keyType =
        type.dictionarytype.pointee.key_type_case
          == CORE_ML__SPECIFICATION__DICTIONARY_FEATURE_TYPE__KEY_TYPE_INT64_KEY_TYPE ? "int64" : "string"
      return .init(name: name, kind: .dictionary(keyType: keyType))
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_STRING_TYPE: return .init(name: name, kind: .string)
    case CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_INT64_TYPE: return .init(name: name, kind: .int64)
    default: return .init(name: name, kind: .double)
    }
  }

  private static func scaler(_ pointer: UnsafeMutablePointer<CoreML__Specification__NeuralNetworkPreprocessing>)
    -> CoreMLModelSpec.ImageScaler?
  {
    guard pointer.pointee.preprocessor_case == CORE_ML__SPECIFICATION__NEURAL_NETWORK_PREPROCESSING__PREPROCESSOR_SCALER
    else { return nil }
    let scaler = pointer.pointee.scaler.pointee
    return .init(
      featureName: text(pointer.pointee.featurename), channelScale: scaler.channelscale, redBias: scaler.redbias,
      greenBias: scaler.greenbias, blueBias: scaler.bluebias, grayBias: scaler.graybias)
  }
}
