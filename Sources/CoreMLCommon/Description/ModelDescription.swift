import CProtobufC
import CoreMLSpec
import ModelIR

/// The parts of a Core ML model description both writers build the same way: the naming rule, the
/// classifier checks, feature types (arrays, images, the classifier's dictionary and label) and metadata.
package enum ModelDescription {
  /// The naming rule, applied here before anything is written: a layer, input or output name may not
  /// contain a control character (Unicode category Cc: U+0000-U+001F, U+007F-U+009F: NUL, newline,
  /// tab, escape, ...). Core ML's C strings end at a NUL, so `a\0x` and `a\0y` become one blob and
  /// the model computes something else than Keras; such names are refused rather than rewritten, so
  /// the converted model keeps the Keras names users look up.
  package static func checkNames(_ graph: Graph) throws {
    func bad(_ name: String) -> Bool {
      name.isEmpty || name.unicodeScalars.contains { $0.properties.generalCategory == .control }
    }
    for id in graph.inputs where bad(graph[id].name) {
      throw CoreMLWriterError.invalidName(kind: "input", name: graph[id].name, layer: nil)
    }
    for node in graph.nodes {
      let layer = node.origin?.name ?? node.name
      if bad(node.name) || bad(layer) {
        throw CoreMLWriterError.invalidName(kind: "layer", name: bad(layer) ? layer : node.name, layer: nil)
      }
      let output = graph[node.output].name
      if bad(output) {
        throw CoreMLWriterError.invalidName(
          kind: graph.outputs.contains(node.output) ? "output" : "tensor", name: output, layer: layer)
      }
    }
  }

  /// Checks a classifier's settings against the graph (the probability output exists and is as wide as the
  /// labels, the predicted feature name is free and not empty, labels are unique and not empty) and returns
  /// the index of the probability output. Both writers use it.
  package static func classifierOutputIndex(_ classifier: ClassifierSettings, graph: Graph) throws -> Int {
    let inputNames = graph.inputs.map { graph[$0].name }
    let outputNames = graph.outputs.map { graph[$0].name }
    let probabilities = classifier.probabilitiesOutput ?? outputNames[0]
    guard let index = outputNames.firstIndex(of: probabilities) else {
      throw CoreMLWriterError.unknownFeature(kind: "output", name: probabilities, available: outputNames)
    }
    let width = graph[graph.outputs[index]].type.elementCount
    guard classifier.labels.count == width else {
      throw CoreMLWriterError.labelCountMismatch(labels: classifier.labels.count, output: probabilities, width: width)
    }
    guard !outputNames.contains(classifier.predictedFeatureName), !inputNames.contains(classifier.predictedFeatureName)
    else {
      let kind = inputNames.contains(classifier.predictedFeatureName) ? "an input" : "an output"
      throw CoreMLWriterError.invalidOption(
        "the predicted feature name '\(classifier.predictedFeatureName)' is already \(kind) name")
    }
    guard !classifier.predictedFeatureName.isEmpty else {
      throw CoreMLWriterError.invalidOption("the predicted feature name is empty")
    }
    // Labels are the keys of the probability dictionary: each must be there once.
    var seen = Set<String>()
    for label in classifier.labels.descriptions where label.isEmpty || !seen.insert(label).inserted {
      throw CoreMLWriterError.invalidOption(
        label.isEmpty ? "a class label is empty" : "class label '\(label)' appears twice")
    }
    return index
  }

  package static func feature(
    _ name: String, arena: MessageArena, _ configure: (UnsafeMutablePointer<CoreML__Specification__FeatureType>) -> Void
  ) -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription> {
    let feature = arena.message(core_ml__specification__feature_description__init)
    feature.pointee.name = arena.string(name)
    let type = arena.message(core_ml__specification__feature_type__init)
    configure(type)
    feature.pointee.type = type
    return feature
  }

  /// The declared shape of each multiarray input and output of a model's description, by name.
  package static func arrayShapes(_ model: UnsafeMutablePointer<CoreML__Specification__Model>) -> [String: [Int]] {
    guard let description = model.pointee.description?.pointee else { return [:] }
    var shapes: [String: [Int]] = [:]
    for (features, count) in [(description.input, description.n_input), (description.output, description.n_output)] {
      for index in 0..<count {
        guard let feature = features?[index]?.pointee, let name = feature.name, let type = feature.type?.pointee,
          type.type_case == CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE,
          let array = type.multiarraytype?.pointee
        else { continue }
        shapes[String(cString: name)] = (0..<array.n_shape).map { Int(array.shape[$0]) }
      }
    }
    return shapes
  }

  package static func arrayFeature(_ name: String, shape: [Int], arena: MessageArena) -> UnsafeMutablePointer<
    CoreML__Specification__FeatureDescription
  > {
    feature(name, arena: arena) { type in
      let array = arena.message(core_ml__specification__array_feature_type__init)
      array.pointee.n_shape = shape.count
      array.pointee.shape = arena.array(shape.map { Int64($0) })
      array.pointee.datatype = CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__ARRAY_DATA_TYPE__FLOAT32
      type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE
      type.pointee.multiarraytype = array
    }
  }

  /// Marks an input the graph declares optional (`Value.isOptional`): the app may leave it out. With
  /// `defaultZero` the array also carries `floatDefaultValue` 0 (as coremltools writes an ML Program's
  /// optional input; specification 5+), else Core ML's recurrent layers read a missing state as zeros.
  @discardableResult
  package static func optional(
    _ feature: UnsafeMutablePointer<CoreML__Specification__FeatureDescription>, _ value: Value, defaultZero: Bool
  ) -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription> {
    guard value.isOptional, let type = feature.pointee.type else { return feature }
    type.pointee.isoptional = 1
    if defaultZero, type.pointee.type_case == CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE,
      let array = type.pointee.multiarraytype
    {
      array.pointee.default_optional_value_case =
        CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__DEFAULT_OPTIONAL_VALUE_FLOAT_DEFAULT_VALUE
      array.pointee.floatdefaultvalue = 0
    }
    return feature
  }

  package static func imageFeature(_ value: Value, image: ImagePreprocessing, arena: MessageArena) throws
    -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription>
  {
    let shape = value.type.shape
    guard shape.count == 3, shape[2] == 1 || shape[2] == 3 else {
      throw CoreMLWriterError.invalidImageInput(name: value.name, shape: shape)
    }
    return feature(value.name, arena: arena) { type in
      let imageType = arena.message(core_ml__specification__image_feature_type__init)
      imageType.pointee.height = Int64(shape[0])
      imageType.pointee.width = Int64(shape[1])
      imageType.pointee.colorspace =
        shape[2] == 1
        ? CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__GRAYSCALE
        : image.isBGR
          ? CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__BGR
          : CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__RGB
      type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE
      type.pointee.imagetype = imageType
    }
  }

  /// An image output: `value` is `[H, W, C]`, C matching the colour space's channels.
  package static func imageOutputFeature(_ value: Value, colorSpace: ImageColorSpace, arena: MessageArena) throws
    -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription>
  {
    guard value.type.shape.count == 3, value.type.shape[2] == colorSpace.channels else {
      throw CoreMLWriterError.invalidOption(
        "output '\(value.name)' of shape \(value.type.shape) cannot be a \(colorSpace.rawValue) image ([height, width, \(colorSpace.channels)] can)"
      )
    }
    return try imageFeature(value, image: ImagePreprocessing(isBGR: colorSpace == .bgr), arena: arena)
  }

  package static func dictionaryFeature(_ name: String, integerKeys: Bool, arena: MessageArena) -> UnsafeMutablePointer<
    CoreML__Specification__FeatureDescription
  > {
    feature(name, arena: arena) { type in
      let dictionary = arena.message(core_ml__specification__dictionary_feature_type__init)
      if integerKeys {
        dictionary.pointee.key_type_case = CORE_ML__SPECIFICATION__DICTIONARY_FEATURE_TYPE__KEY_TYPE_INT64_KEY_TYPE
        dictionary.pointee.int64keytype = arena.message(core_ml__specification__int64_feature_type__init)
      } else {
        dictionary.pointee.key_type_case = CORE_ML__SPECIFICATION__DICTIONARY_FEATURE_TYPE__KEY_TYPE_STRING_KEY_TYPE
        dictionary.pointee.stringkeytype = arena.message(core_ml__specification__string_feature_type__init)
      }
      type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_DICTIONARY_TYPE
      type.pointee.dictionarytype = dictionary
    }
  }

  package static func labelFeature(_ name: String, integer: Bool, arena: MessageArena) -> UnsafeMutablePointer<
    CoreML__Specification__FeatureDescription
  > {
    feature(name, arena: arena) { type in
      if integer {
        type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_INT64_TYPE
        type.pointee.int64type = arena.message(core_ml__specification__int64_feature_type__init)
      } else {
        type.pointee.type_case = CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_STRING_TYPE
        type.pointee.stringtype = arena.message(core_ml__specification__string_feature_type__init)
      }
    }
  }

  package static func metadata(_ metadata: ModelMetadata, arena: MessageArena) -> UnsafeMutablePointer<
    CoreML__Specification__Metadata
  > {
    let message = arena.message(core_ml__specification__metadata__init)
    if let text = metadata.shortDescription { message.pointee.shortdescription = arena.string(text) }
    if let text = metadata.version { message.pointee.versionstring = arena.string(text) }
    if let text = metadata.author { message.pointee.author = arena.string(text) }
    if let text = metadata.license { message.pointee.license = arena.string(text) }
    let entries = metadata.userDefined.sorted { $0.key < $1.key }.map { key, value in
      let entry = arena.message(core_ml__specification__metadata__user_defined_entry__init)
      entry.pointee.key = arena.string(key)
      entry.pointee.value = arena.string(value)
      return entry
    }
    message.pointee.n_userdefined = entries.count
    message.pointee.userdefined = arena.pointerArray(entries)
    return message
  }
}
