import CProtobufC
import CoreMLCommon
import CoreMLProgramWriter
import CoreMLSpec
import Foundation
import ModelIR

/// Writes an IR graph as a Core ML `.mlmodel`: a `NeuralNetworkClassifier` when labels are given,
/// else a `NeuralNetwork`, using classic rank-5 layers.
public enum CoreMLWriter {
  /// The serialized `Model` protobuf.
  public static func serialize(_ graph: Graph, options: CoreMLWriterOptions) throws -> [UInt8] {
    try serializeWithVersion(graph, options: options).bytes
  }

  /// The serialized `Model` protobuf and the specification version it declares.
  static func serializeWithVersion(_ graph: Graph, options: CoreMLWriterOptions) throws -> (
    bytes: [UInt8], version: Int
  ) {
    let (specification, version, _, _) = try streamed(graph, options: options)
    return (specification.bytes(), version)
  }

  /// The model ready to be packed layer by layer as it is written, and its specification version;
  /// refused when it would be larger than `maximumBytes` (known before any weight is laid out).
  /// `rankN` writes a rank-N network whatever the graph (for tests of the lowering).
  static func streamed(
    _ graph: Graph, options: CoreMLWriterOptions, maximumBytes: Int = CoreMLLimits.maximumSpecificationBytes,
    rankN: Bool = false
  ) throws -> (StreamedSpecification, Int, [String: [Int]], [CompressedTensorReport]) {
    let arena = MessageArena()
    let built = try buildModel(graph, options: options, arena: arena, rankN: rankN)
    let model = built.model
    // The classifier and the plain network hold their layers in the same two fields.
    func streamed<Network>(
      _ network: UnsafeMutablePointer<Network>, count: WritableKeyPath<Network, Int>,
      layers: WritableKeyPath<Network, UnsafeMutablePointer<UnsafeMutablePointer<NNLayer>?>?>
    ) -> StreamedSpecification {
      StreamedSpecification(
        arena: arena, model: model, groups: built.groups,
        packNetwork: {
          // Every protobuf-c message starts with its `ProtobufCMessage` base.
          let message = UnsafeRawPointer(network).assumingMemoryBound(to: ProtobufCMessage.self)
          let size = protobuf_c_message_get_packed_size(message)
          return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
            initialized = size > 0 ? protobuf_c_message_pack(message, buffer.baseAddress!) : 0
          }
        },
        setLayers: { list in
          network.pointee[keyPath: count] = list.count
          network.pointee[keyPath: layers] = arena.pointerArray(list)
        })
    }
    let specification =
      model.pointee.type_case == CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER
      ? streamed(model.pointee.neuralnetworkclassifier!, count: \.n_layers, layers: \.layers)
      : streamed(model.pointee.neuralnetwork!, count: \.n_layers, layers: \.layers)
    guard specification.byteCount <= maximumBytes else {
      throw CoreMLWriterError.specificationTooLarge(
        bytes: specification.byteCount, limit: maximumBytes, float32Weights: options.precision == .float32)
    }
    return (
      specification, Int(model.pointee.specificationversion), ModelDescription.arrayShapes(model),
      built.compressedTensors
    )
  }

  /// Serializes and writes atomically: the destination is replaced only once the new file is complete.
  public static func write(_ graph: Graph, options: CoreMLWriterOptions, to url: URL) throws -> Int {
    let bytes = try serialize(graph, options: options)
    try AtomicFile.write(bytes: bytes, to: url)
    return bytes.count
  }

  static func buildModel(
    _ graph: Graph, options: CoreMLWriterOptions, arena: MessageArena, rankN: Bool = false
  ) throws -> (
    model: UnsafeMutablePointer<CoreML__Specification__Model>, groups: [StreamedSpecification.LayerGroup],
    compressedTensors: [CompressedTensorReport]
  ) {
    try ModelDescription.checkNames(graph)
    let inputNames = graph.inputs.map { graph[$0].name }
    let outputNames = graph.outputs.map { graph[$0].name }
    for name in options.imageInputs.keys.sorted() where !inputNames.contains(name) {
      throw CoreMLWriterError.unknownFeature(kind: "input", name: name, available: inputNames)
    }
    for name in options.imageOutputs.keys.sorted() where !outputNames.contains(name) {
      throw CoreMLWriterError.unknownFeature(kind: "output", name: name, available: outputNames)
    }

    let network =
      try rankN || RankNLowering.isNeeded(graph)
      ? rankNNetwork(graph, options: options, arena: arena) : rank5OrRankNNetwork(graph, options: options, arena: arena)
    let groups = network.groups
    let description = arena.message(core_ml__specification__model_description__init)
    description.pointee.n_input = network.inputs.count
    description.pointee.input = arena.pointerArray(network.inputs)
    var outputs = network.outputs

    let preprocessing = graph.inputs.compactMap {
      id -> UnsafeMutablePointer<CoreML__Specification__NeuralNetworkPreprocessing>? in
      guard let settings = options.imageInputs[graph[id].name] else { return nil }
      return scaler(for: graph[id].name, settings, arena: arena)
    }
    let layers = network.layers
    let model = arena.message(core_ml__specification__model__init)
    model.pointee.specificationversion = network.specificationVersion
    let arrayMapping =
      network.rankN
      ? CORE_ML__SPECIFICATION__NEURAL_NETWORK_MULTI_ARRAY_SHAPE_MAPPING__EXACT_ARRAY_MAPPING
      : CORE_ML__SPECIFICATION__NEURAL_NETWORK_MULTI_ARRAY_SHAPE_MAPPING__RANK5_ARRAY_MAPPING
    let imageMapping =
      network.rankN
      ? CORE_ML__SPECIFICATION__NEURAL_NETWORK_IMAGE_SHAPE_MAPPING__RANK4_IMAGE_MAPPING
      : CORE_ML__SPECIFICATION__NEURAL_NETWORK_IMAGE_SHAPE_MAPPING__RANK5_IMAGE_MAPPING

    if let classifier = options.classifier {
      let index = try ModelDescription.classifierOutputIndex(classifier, graph: graph)
      let probabilities = outputNames[index]
      let isInteger: Bool
      if case .integers = classifier.labels { isInteger = true } else { isInteger = false }
      outputs[index] = ModelDescription.dictionaryFeature(probabilities, integerKeys: isInteger, arena: arena)
      outputs = classifier.placingLabel(
        ModelDescription.labelFeature(classifier.predictedFeatureName, integer: isInteger, arena: arena), in: outputs)
      description.pointee.predictedfeaturename = arena.string(classifier.predictedFeatureName)
      description.pointee.predictedprobabilitiesname = arena.string(probabilities)

      let classifierNetwork = arena.message(core_ml__specification__neural_network_classifier__init)
      classifierNetwork.pointee.n_layers = layers.count
      classifierNetwork.pointee.layers = arena.pointerArray(layers)
      classifierNetwork.pointee.n_preprocessing = preprocessing.count
      classifierNetwork.pointee.preprocessing = arena.pointerArray(preprocessing)
      classifierNetwork.pointee.labelprobabilitylayername = arena.string(probabilities)
      classifierNetwork.pointee.arrayinputshapemapping = arrayMapping
      classifierNetwork.pointee.imageinputshapemapping = imageMapping
      switch classifier.labels {
      case .strings(let labels):
        let vector = arena.message(core_ml__specification__string_vector__init)
        vector.pointee.n_vector = labels.count
        vector.pointee.vector = arena.pointerArray(labels.map(arena.string))
        classifierNetwork.pointee.class_labels_case =
          CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_STRING_CLASS_LABELS
        classifierNetwork.pointee.stringclasslabels = vector
      case .integers(let labels):
        let vector = arena.message(core_ml__specification__int64_vector__init)
        vector.pointee.n_vector = labels.count
        vector.pointee.vector = arena.array(labels)
        classifierNetwork.pointee.class_labels_case =
          CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_INT64_CLASS_LABELS
        classifierNetwork.pointee.int64classlabels = vector
      }
      model.pointee.type_case = CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER
      model.pointee.neuralnetworkclassifier = classifierNetwork
    } else {
      let plainNetwork = arena.message(core_ml__specification__neural_network__init)
      plainNetwork.pointee.n_layers = layers.count
      plainNetwork.pointee.layers = arena.pointerArray(layers)
      plainNetwork.pointee.n_preprocessing = preprocessing.count
      plainNetwork.pointee.preprocessing = arena.pointerArray(preprocessing)
      plainNetwork.pointee.arrayinputshapemapping = arrayMapping
      plainNetwork.pointee.imageinputshapemapping = imageMapping
      model.pointee.type_case = CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK
      model.pointee.neuralnetwork = plainNetwork
    }
    description.pointee.n_output = outputs.count
    description.pointee.output = arena.pointerArray(outputs)
    description.pointee.metadata = ModelDescription.metadata(options.metadata, arena: arena)
    // Flexible input sizes: specification 3 (iOS 12) added them to the description; a network's outputs
    // keep the default size's shapes, as coremltools writes them.
    if let flexibility = options.flexibility, !flexibility.inputs.isEmpty {
      if let target = options.target, target.specificationVersion < 3 {
        throw CoreMLWriterError.targetTooOld(
          target: target.name, needs: 3,
          reason:
            "flexible input sizes (shapeRange, enumeratedShapes, imageSizeRange, enumeratedSizes) need specification 3, iOS 12 / macOS 10.14"
        )
      }
      try ModelDescription.applyFlexibility(flexibility, to: description, clearVariableOutputs: false, arena: arena)
      model.pointee.specificationversion = max(model.pointee.specificationversion, 3)
    }
    model.pointee.description = description
    return (model, groups, network.compressedTensors)
  }

  /// The layers of a network with the features they read and write.
  struct WrittenNetwork {
    var layers: [UnsafeMutablePointer<NNLayer>]
    var groups: [StreamedSpecification.LayerGroup]
    var specificationVersion: Int32
    var inputs: [UnsafeMutablePointer<CoreML__Specification__FeatureDescription>]
    var outputs: [UnsafeMutablePointer<CoreML__Specification__FeatureDescription>]
    /// Rank-N blobs (`EXACT_ARRAY_MAPPING`, `RANK4_IMAGE_MAPPING`) rather than rank-5 ones.
    var rankN: Bool
    /// With weight compression: each layer's main weights, quantized or kept.
    var compressedTensors: [CompressedTensorReport] = []
  }

  /// The rank-5 layers; where they cannot hold the graph (a rank-6 permute, a dense layer on a rank-4
  /// tensor, ...) and the target loads specification 4, the rank-N network, else the rank-5 layers' errors.
  static func rank5OrRankNNetwork(_ graph: Graph, options: CoreMLWriterOptions, arena: MessageArena) throws
    -> WrittenNetwork
  {
    do {
      return try rank5Network(graph, options: options, arena: arena)
    } catch let error as CoreMLWriterError {
      switch error {
      case .unsupportedOperation, .unsupportedOperations: break
      default: throw error
      }
      if let target = options.target, target.specificationVersion < 4 { throw error }
      guard let rankN = try? rankNNetwork(graph, options: options, arena: arena) else { throw error }
      return rankN
    }
  }

  /// The classic rank-5 layers, one group per node.
  static func rank5Network(_ given: Graph, options: CoreMLWriterOptions, arena: MessageArena) throws -> WrittenNetwork {
    // A rank-3 array the source declares channels last ([1, H, W, C] from an NHWC ONNX graph) is declared
    // [H, W, C], its elements in that order: the classic blob holds it as C=H, H=W, W=C, so the value is
    // permuted to [W, C, H] on the way out (and from it on the way in). Otherwise Core ML's [C, H, W].
    var graph = given
    for id in given.inputs where options.imageInputs[given[id].name] == nil && given[id].type.shape.count == 3 {
      if let declared = options.declaredArrays[given[id].name], !declared.channelsFirst, declared.shape.count >= 3 {
        graph.permuteInput(id, order: [1, 2, 0])
      }
    }
    for id in given.outputs where given[id].type.shape.count == 3 {
      if let declared = options.declaredArrays[given[id].name], !declared.channelsFirst, declared.shape.count >= 3 {
        graph.permuteOutput(id, order: [1, 2, 0])
      }
    }
    var emitter = CoreMLLayerEmitter(arena: arena, graph: graph, precision: options.precision)
    emitter.builder.compression = options.compression
    // Each node's layers with the weights they are packed with.
    var groups: [StreamedSpecification.LayerGroup] = []
    // Every layer the classic format cannot express is named at once, not only the first.
    var unsupported: [CoreMLWriterError] = []
    for node in graph.nodes {
      let (firstLayer, firstWeight) = (emitter.layers.count, emitter.deferredWeights.count)
      do { try emitter.emit(node) } catch {
        if let writerError = error as? CoreMLWriterError, case .unsupportedOperation = writerError {
          unsupported.append(writerError)
          continue
        }
        // After a layer that could not be written, a later error may only follow from it.
        if !unsupported.isEmpty { break }
        throw error
      }
      groups.append(
        StreamedSpecification.LayerGroup(
          layers: Array(emitter.layers[firstLayer...]), weights: Array(emitter.deferredWeights[firstWeight...])))
    }
    if unsupported.count == 1 { throw unsupported[0] }
    if unsupported.count > 1 { throw CoreMLWriterError.unsupportedOperations(unsupported) }

    let inputs = try graph.inputs.map { id -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription> in
      // Token ids for an Embedding are one value per time step: Core ML's sequence axis, shape [1].
      let tokens = graph.nodes.contains { node in
        guard case .embedding = node.operation else { return false }
        return node.inputs == [id]
      }
      if tokens && graph[id].type.shape.count == 1 {
        return ModelDescription.arrayFeature(graph[id].name, shape: [1], arena: arena)
      }
      return ModelDescription.optional(
        try inputFeature(graph[id], image: options.imageInputs[graph[id].name], arena: arena), graph[id],
        defaultZero: false)
    }
    // An image output is the [C, H, W] blob of an [H, W, C] value, which Core ML turns into pixels.
    let outputs = try graph.outputs.map { id in
      if let space = options.imageOutputs[graph[id].name] {
        return try ModelDescription.imageOutputFeature(graph[id], colorSpace: space, arena: arena)
      }
      return try arrayFeature(graph[id], arena: arena)
    }
    return WrittenNetwork(
      layers: emitter.layers, groups: groups, specificationVersion: emitter.specificationVersion, inputs: inputs,
      outputs: outputs, rankN: false,
      compressedTensors: emitter.builder.compressionReports)
  }

  /// The rank-N network of `RankNLowering`: features of the ML Program's shapes (`[1] + S`); a classifier's
  /// probabilities, computed `[1, N]`, are reshaped to the `[N]` vector the classifier reads.
  static func rankNNetwork(_ graph: Graph, options: CoreMLWriterOptions, arena: MessageArena) throws -> WrittenNetwork {
    if let name = options.imageOutputs.keys.sorted().first {
      throw CoreMLWriterError.unsupportedOperation(
        layer: name, detail: "an image output of a network of rank-N layers (specification 4) is not written")
    }
    let program = try MLProgramWriter.recordedProgram(graph, options: options)
    let probabilitiesIndex = try options.classifier.map { try ModelDescription.classifierOutputIndex($0, graph: graph) }
    var renamed: [String: String] = [:]
    if let index = probabilitiesIndex {
      renamed[program.outputs[index].name] = program.outputs[index].name + "__batched"
    }
    var lowering = RankNLowering(
      arena: arena, precision: options.precision, renamed: renamed, compression: options.compression)
    try lowering.lower(program)
    var builder = lowering.builder
    var groups = lowering.groups
    if let index = probabilitiesIndex {
      let probabilities = program.outputs[index]
      let (firstLayer, firstWeight) = (builder.layers.count, builder.deferredWeights.count)
      builder.reshapeStatic(
        probabilities.name, input: renamed[probabilities.name]!, output: probabilities.name,
        shape: [probabilities.shape.reduce(1, *)])
      groups.append(
        StreamedSpecification.LayerGroup(
          layers: Array(builder.layers[firstLayer...]), weights: Array(builder.deferredWeights[firstWeight...])))
    }
    let inputs = try zip(graph.inputs, program.inputs).map {
      id, tensor -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription> in
      if let image = options.imageInputs[graph[id].name] {
        return try ModelDescription.imageFeature(graph[id], image: image, arena: arena)
      }
      return ModelDescription.arrayFeature(tensor.name, shape: tensor.shape, arena: arena)
    }
    let outputs = program.outputs.map { ModelDescription.arrayFeature($0.name, shape: $0.shape, arena: arena) }
    return WrittenNetwork(
      layers: builder.layers, groups: groups, specificationVersion: builder.specificationVersion, inputs: inputs,
      outputs: outputs, rankN: true,
      compressedTensors: builder.compressionReports)
  }

  // MARK: Features

  private static func arrayFeature(_ value: Value, arena: MessageArena) throws -> UnsafeMutablePointer<
    CoreML__Specification__FeatureDescription
  > {
    guard let shape = CoreMLLayerEmitter.coreMLShape(value.type.shape) else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: value.name,
        detail:
          "a model input or output of rank \(value.type.shape.count + 1); classic Core ML takes (D,), (T, D) and (H, W, C)"
      )
    }
    return ModelDescription.arrayFeature(value.name, shape: shape, arena: arena)
  }

  static func inputFeature(_ value: Value, image: ImagePreprocessing?, arena: MessageArena) throws
    -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription>
  {
    guard let image else { return try arrayFeature(value, arena: arena) }
    return try ModelDescription.imageFeature(value, image: image, arena: arena)
  }

  private static func scaler(for name: String, _ settings: ImagePreprocessing, arena: MessageArena)
    -> UnsafeMutablePointer<CoreML__Specification__NeuralNetworkPreprocessing>
  {
    let scaler = arena.message(core_ml__specification__neural_network_image_scaler__init)
    scaler.pointee.channelscale = settings.scale
    scaler.pointee.redbias = settings.redBias
    scaler.pointee.greenbias = settings.greenBias
    scaler.pointee.bluebias = settings.blueBias
    scaler.pointee.graybias = settings.grayBias
    let entry = arena.message(core_ml__specification__neural_network_preprocessing__init)
    entry.pointee.featurename = arena.string(name)
    entry.pointee.preprocessor_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_PREPROCESSING__PREPROCESSOR_SCALER
    entry.pointee.scaler = scaler
    return entry
  }

}
