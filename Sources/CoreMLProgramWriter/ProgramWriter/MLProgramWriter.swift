import CProtobufC
import CoreMLCommon
import CoreMLSpec
import Foundation
import ModelIR

/// Writes an IR graph as an ML Program (`.mlpackage`): one MIL function `main` in the target's opset,
/// its weights in `weight.bin`.
///
/// Layout: MIL tensors carry a batch axis of 1 (IR shape `S` is `[1] + S`); spatial operations run
/// channels-first and the emitter transposes only where a consumer needs the other layout. Inputs and
/// outputs are `[1] + S` float32 (images `[1, C, H, W]` fed by Core ML), whatever the precision: a float16
/// program casts its inputs to float16 (after an image's scale and bias) and its outputs back to float32.
public struct MLProgramWriter: CoreMLModelWriter {
  public init() {}
  public var format: ModelFormat { .mlProgram }

  public func encode(_ graph: Graph, options given: CoreMLWriterOptions) throws -> EncodedModel {
    var options = given
    var oldest = options.compression?.oldestTarget ?? .iOS15
    // An image output is the float32 [1, C, H, W] tensor of its [H, W, C] value (iOS 16, specification 7).
    for (name, _) in options.imageOutputs {
      guard let id = graph.outputs.first(where: { graph[$0].name == name }) else {
        throw CoreMLWriterError.unknownFeature(
          kind: "output", name: name, available: graph.outputs.map { graph[$0].name })
      }
      let shape = graph[id].type.shape
      guard shape.count == 3 else {
        throw CoreMLWriterError.invalidOption(
          "output '\(name)' of shape \(shape) cannot be an image ([height, width, channels] can)")
      }
      options.declaredArrays[name] = DeclaredArray(shape: [1, shape[2], shape[0], shape[1]], channelsFirst: true)
      if oldest.specificationVersion < DeploymentTarget.iOS16.specificationVersion { oldest = .iOS16 }
    }
    if let target = options.target, !options.imageOutputs.isEmpty,
      target.specificationVersion < DeploymentTarget.iOS16.specificationVersion
    {
      throw CoreMLWriterError.targetTooOld(
        target: target.name, needs: DeploymentTarget.iOS16.specificationVersion,
        reason: "an ML Program with an image output needs iOS 16 / macOS 13")
    }
    let target = options.target ?? oldest
    guard let opset = target.opset else {
      throw CoreMLWriterError.targetTooOld(
        target: target.name, needs: DeploymentTarget.iOS15.specificationVersion,
        reason: "an ML Program needs iOS 15 / macOS 12")
    }
    if let compression = options.compression,
      target.specificationVersion < compression.oldestTarget.specificationVersion
    {
      throw CoreMLWriterError.targetTooOld(
        target: target.name, needs: compression.oldestTarget.specificationVersion,
        reason: "\(compression.summary) weights (constexpr operations) need iOS 16 / macOS 13")
    }
    let arena = MessageArena()
    let builder = MILBuilder(arena: arena)
    builder.compression = options.compression
    let model = try buildModel(graph, options: options, target: target, opset: opset, builder: builder)
    var bytes = [UInt8](repeating: 0, count: core_ml__specification__model__get_packed_size(model))
    _ = core_ml__specification__model__pack(model, &bytes)
    var encoded = EncodedModel(
      format: .mlProgram, specification: bytes, blobs: builder.blobs, specificationVersion: target.specificationVersion)
    encoded.arrayShapes = ModelDescription.arrayShapes(model)
    encoded.compressedTensors = builder.compressionReports
    return encoded
  }

  /// Feature names are names of program values, so they must be MIL identifiers.
  static func checkFeatureName(_ name: String, kind: String) throws {
    guard MILIdentifier.isValid(name) else {
      throw CoreMLWriterError.invalidOption(
        "\(kind) name '\(name)' is not valid in an ML Program: feature names must be identifiers (a letter or underscore, then letters, digits, underscores or '@'); rename the \(kind)"
      )
    }
  }

  /// The MIL value name of each IR value (by IR value name), for tools that match the program's values
  /// with the graph's (layer-by-layer verification): the value that first holds the result, in the layout
  /// it was computed in (`[1] + S`, or channels-first `[1, C] + S.dropLast()` after spatial operations).
  /// Inputs and outputs keep their feature names (an output computed channels-first or in float16 is first
  /// held by a derived value, and the feature is its float32 `[1] + S` copy); a classifier's probability
  /// tensor (the input of `classify`, whose dictionary output carries the feature name) is listed under a
  /// derived name ending in `_probabilities`.
  public static func valueNames(_ graph: Graph, options: CoreMLWriterOptions) throws -> [String: String] {
    let probabilitiesIndex = try options.classifier.map { try ModelDescription.classifierOutputIndex($0, graph: graph) }
    let names = reserveNames(
      graph, options: options, probabilitiesIndex: probabilitiesIndex, builder: MILBuilder(arena: MessageArena()))
    var result: [String: String] = [:]
    for (id, name) in names { result[graph[id].name] = name }
    return result
  }

  /// Claims the feature names, then gives every other value a unique identifier made from its name, in
  /// graph order, before any operation is written (so derived names never take them).
  static func reserveNames(_ graph: Graph, options: CoreMLWriterOptions, probabilitiesIndex: Int?, builder: MILBuilder)
    -> [ValueID: String]
  {
    var names: [ValueID: String] = [:]
    for id in graph.inputs + graph.outputs { builder.claim(graph[id].name) }
    if let classifier = options.classifier { builder.claim(classifier.predictedFeatureName) }
    for id in graph.inputs { names[id] = graph[id].name }
    for (index, id) in graph.outputs.enumerated() {
      // A feature declared in another shape is computed under a name of its own, then reshaped to the feature.
      let declared = options.declaredArrays[graph[id].name]
      let reshaped = declared.map { $0.channelsFirst || $0.shape != [1] + graph[id].type.shape } ?? false
      names[id] =
        index == probabilitiesIndex || reshaped
        ? builder.uniqueName(graph[id].name + (reshaped ? "_value" : "_probabilities")) : graph[id].name
    }
    for node in graph.nodes where names[node.output] == nil {
      names[node.output] = builder.uniqueName(graph[node.output].name)
    }
    return names
  }

  /// The declaration asked for feature `name` (an IR value of `shape`), checked to carry that value.
  static func declaredArray(_ name: String, shape: [Int], options: CoreMLWriterOptions) throws -> DeclaredArray? {
    guard let declared = options.declaredArrays[name] else { return nil }
    guard declared.fits(shape) else {
      throw CoreMLWriterError.invalidOption(
        "'\(name)' cannot be declared as \(declared.shape)\(declared.channelsFirst ? " (channels first)" : ""): the graph computes it as \(shape)"
      )
    }
    return declared
  }

  func buildModel(
    _ graph: Graph, options: CoreMLWriterOptions, target: DeploymentTarget, opset: String, builder: MILBuilder
  ) throws -> UnsafeMutablePointer<CoreML__Specification__Model> {
    let arena = builder.arena
    try ModelDescription.checkNames(graph)
    let inputNames = graph.inputs.map { graph[$0].name }
    let outputNames = graph.outputs.map { graph[$0].name }
    for name in options.imageInputs.keys.sorted() where !inputNames.contains(name) {
      throw CoreMLWriterError.unknownFeature(kind: "input", name: name, available: inputNames)
    }
    for name in inputNames { try Self.checkFeatureName(name, kind: "input") }
    for name in outputNames { try Self.checkFeatureName(name, kind: "output") }
    guard Set(inputNames + outputNames).count == inputNames.count + outputNames.count else {
      throw CoreMLWriterError.invalidOption(
        "an ML Program needs distinct input and output names; rename the outputs that repeat an input name")
    }
    var probabilitiesIndex: Int?
    if let classifier = options.classifier {
      probabilitiesIndex = try ModelDescription.classifierOutputIndex(classifier, graph: graph)
      try Self.checkFeatureName(classifier.predictedFeatureName, kind: "predicted feature")
    }

    let computeType: MILElementType = options.precision == .float16 ? .fp16 : .fp32
    var emitter = MILEmitter(builder: builder, graph: graph, computeType: computeType)
    emitter.recurrentTakesFloat16 = target.specificationVersion >= DeploymentTarget.iOS17.specificationVersion
    emitter.names = Self.reserveNames(graph, options: options, probabilitiesIndex: probabilitiesIndex, builder: builder)
    for (index, id) in graph.outputs.enumerated() where index != probabilitiesIndex {
      emitter.featureOutputs.insert(id)
    }

    // Function inputs, image preprocessing and the casts into the compute precision.
    var functionInputs: [UnsafeMutablePointer<CoreML__Specification__MILSpec__NamedValueType>] = []
    for id in graph.inputs {
      let value = graph[id]
      let shape = value.type.shape
      if let image = options.imageInputs[value.name] {
        guard shape.count == 3, shape[2] == 1 || shape[2] == 3 else {
          throw CoreMLWriterError.invalidImageInput(name: value.name, shape: shape)
        }
        let milShape = MILLayout.channelsFirst.shape(shape)
        functionInputs.append(builder.namedType(value.name, builder.tensorType(.fp32, milShape)))
        var x = MILTensor(name: value.name, dataType: .fp32, shape: milShape)
        if image.scale != 1 {
          x = try builder.op(
            "mul", [("x", .tensor(x)), ("y", .scalar(image.scale, .fp32))], name: value.name + "__scaled",
            dataType: .fp32, shape: milShape)
        }
        let biases =
          shape[2] == 1
          ? [image.grayBias]
          : image.isBGR
            ? [image.blueBias, image.greenBias, image.redBias] : [image.redBias, image.greenBias, image.blueBias]
        if biases.contains(where: { $0 != 0 }) {
          x = try builder.op(
            "add", [("x", .tensor(x)), ("y", .floats(biases, shape: [1, shape[2], 1, 1], .fp32))],
            name: value.name + "__biased", dataType: .fp32, shape: milShape)
        }
        if computeType == .fp16 {
          x = try builder.op(
            "cast", [("x", .tensor(x)), ("dtype", .string("fp16"))], name: value.name + "_to_fp16", dataType: .fp16,
            shape: milShape)
        }
        emitter.define(id, .channelsFirst, x)
      } else {
        let declared = try Self.declaredArray(value.name, shape: shape, options: options)
        let milShape = declared?.shape ?? [1] + shape
        functionInputs.append(builder.namedType(value.name, builder.tensorType(.fp32, milShape)))
        var x = MILTensor(name: value.name, dataType: .fp32, shape: milShape)
        // Token ids stay float32 until their embedding casts them to integers (float16 holds ids up to 2048 only).
        let onlyEmbeddings = graph.nodes.filter { $0.inputs.contains(id) }.allSatisfy {
          if case .embedding = $0.operation { return true } else { return false }
        }
        if computeType == .fp16 && !onlyEmbeddings {
          x = try builder.op(
            "cast", [("x", .tensor(x)), ("dtype", .string("fp16"))], name: value.name + "_to_fp16", dataType: .fp16,
            shape: milShape)
        }
        // A declared array: its elements in the layout it holds them in, reshaped to that layout's shape.
        let layout: MILLayout = declared?.channelsFirst == true ? .channelsFirst : .natural
        if layout.shape(shape) != milShape {
          x = try builder.op(
            "reshape", [("x", .tensor(x)), ("shape", .ints(layout.shape(shape)))], name: value.name + "__declared",
            dataType: x.dataType, shape: layout.shape(shape))
        }
        emitter.define(id, layout, x)
      }
    }

    for node in graph.nodes { try emitter.emit(node) }

    // Outputs: float32 [1] + S values named after the features; a classifier ends in classify.
    builder.currentLayer = ""
    var blockOutputs: [String] = []
    for (index, id) in graph.outputs.enumerated() {
      let name = graph[id].name
      let isFeature = index != probabilitiesIndex
      var x: MILTensor
      if isFeature, let declared = try Self.declaredArray(name, shape: graph[id].type.shape, options: options) {
        let source = try emitter.tensor(id, declared.channelsFirst ? .channelsFirst : .natural)
        let exact = source.dataType == .fp32
        x =
          source.shape == declared.shape
          ? source
          : try builder.op(
            "reshape", [("x", .tensor(source)), ("shape", .ints(declared.shape))],
            name: exact ? name : (emitter.names[id] ?? name) + "_declared",
            exactName: exact, dataType: source.dataType, shape: declared.shape)
      } else if let natural = emitter.values[id]?[.natural] {
        x = natural
      } else {
        // Back to [1] + S; the transpose is the output itself when nothing else follows.
        let (source, _) = try emitter.tensor(id)
        let exact = isFeature && source.dataType == .fp32
        let rank = graph[id].type.shape.count
        x = try builder.op(
          "transpose", [("x", .tensor(source)), ("perm", .ints(MILLayout.natural.permutation(rank: rank)))],
          name: exact ? name : (emitter.names[id] ?? name) + "_nhwc", exactName: exact, dataType: source.dataType,
          shape: [1] + graph[id].type.shape)
      }
      let finalName = isFeature ? name : (emitter.names[id] ?? name) + "_fp32"
      if x.dataType != .fp32 {
        x = try builder.op(
          "cast", [("x", .tensor(x)), ("dtype", .string("fp32"))], name: finalName, exactName: isFeature,
          dataType: .fp32, shape: x.shape)
      } else if isFeature && x.name != name {
        x = try builder.op(
          "identity", [("x", .tensor(x))], name: name, exactName: true, dataType: .fp32, shape: x.shape)
      }
      if index == probabilitiesIndex, let classifier = options.classifier {
        var labels: [String]?
        var integers: [Int64]?
        switch classifier.labels {
        case .strings(let l): labels = l
        case .integers(let l): integers = l
        }
        builder.classify(
          probabilities: x, labels: labels, integerLabels: integers, labelName: classifier.predictedFeatureName,
          probabilitiesName: name)
        blockOutputs.append(name)
      } else {
        blockOutputs.append(x.name)
      }
    }
    if let classifier = options.classifier {
      blockOutputs = classifier.placingLabel(classifier.predictedFeatureName, in: blockOutputs)
    }

    // Program: version 1, function main in the target's opset.
    let block = arena.message(core_ml__specification__milspec__block__init)
    block.pointee.n_outputs = blockOutputs.count
    block.pointee.outputs = arena.pointerArray(blockOutputs.map(arena.string))
    block.pointee.n_operations = builder.operations.count
    block.pointee.operations = arena.pointerArray(builder.operations)
    let specialization = arena.message(core_ml__specification__milspec__function__block_specializations_entry__init)
    specialization.pointee.key = arena.string(opset)
    specialization.pointee.value = block
    let function = arena.message(core_ml__specification__milspec__function__init)
    function.pointee.n_inputs = functionInputs.count
    function.pointee.inputs = arena.pointerArray(functionInputs)
    function.pointee.opset = arena.string(opset)
    function.pointee.n_block_specializations = 1
    function.pointee.block_specializations = arena.pointerArray([specialization])
    let functionEntry = arena.message(core_ml__specification__milspec__program__functions_entry__init)
    functionEntry.pointee.key = arena.string("main")
    functionEntry.pointee.value = function
    let program = arena.message(core_ml__specification__milspec__program__init)
    program.pointee.version = 1
    program.pointee.n_functions = 1
    program.pointee.functions = arena.pointerArray([functionEntry])

    // Description: as the neural-network writer's, with [1] + S array shapes (the function's input shapes).
    let description = arena.message(core_ml__specification__model_description__init)
    let inputs = try graph.inputs.map { id -> UnsafeMutablePointer<CoreML__Specification__FeatureDescription> in
      if let image = options.imageInputs[graph[id].name] {
        return try ModelDescription.imageFeature(graph[id], image: image, arena: arena)
      }
      let declared = try Self.declaredArray(graph[id].name, shape: graph[id].type.shape, options: options)
      return ModelDescription.optional(
        ModelDescription.arrayFeature(
          graph[id].name, shape: declared?.shape ?? [1] + graph[id].type.shape, arena: arena), graph[id],
        defaultZero: true)
    }
    description.pointee.n_input = inputs.count
    description.pointee.input = arena.pointerArray(inputs)
    var outputs = try graph.outputs.map { id in
      if let space = options.imageOutputs[graph[id].name] {
        return try ModelDescription.imageOutputFeature(graph[id], colorSpace: space, arena: arena)
      }
      let declared = try Self.declaredArray(graph[id].name, shape: graph[id].type.shape, options: options)
      return ModelDescription.arrayFeature(
        graph[id].name, shape: declared?.shape ?? [1] + graph[id].type.shape, arena: arena)
    }
    if let classifier = options.classifier, let index = probabilitiesIndex {
      let isInteger: Bool
      if case .integers = classifier.labels { isInteger = true } else { isInteger = false }
      outputs[index] = ModelDescription.dictionaryFeature(outputNames[index], integerKeys: isInteger, arena: arena)
      outputs = classifier.placingLabel(
        ModelDescription.labelFeature(classifier.predictedFeatureName, integer: isInteger, arena: arena), in: outputs)
      description.pointee.predictedfeaturename = arena.string(classifier.predictedFeatureName)
      description.pointee.predictedprobabilitiesname = arena.string(outputNames[index])
    }
    description.pointee.n_output = outputs.count
    description.pointee.output = arena.pointerArray(outputs)
    description.pointee.metadata = ModelDescription.metadata(options.metadata, arena: arena)
    // Flexible input sizes: the description's flexibility, and the dimensions that change with it left
    // unknown in the function's inputs and every operation's outputs, as coremltools writes them.
    if let flexibility = options.flexibility, !flexibility.inputs.isEmpty {
      try ModelDescription.applyFlexibility(flexibility, to: description, clearVariableOutputs: true, arena: arena)
      for index in 0..<function.pointee.n_inputs {
        if let named = function.pointee.inputs[index] { builder.leaveUnknown(named, flexibility.unknownDimensions) }
      }
      builder.leaveUnknown(in: block, flexibility.unknownDimensions, inferred: flexibility.inferredSizes)
    }

    let model = arena.message(core_ml__specification__model__init)
    model.pointee.specificationversion = Int32(target.specificationVersion)
    model.pointee.description = description
    model.pointee.type_case = CORE_ML__SPECIFICATION__MODEL__TYPE_ML_PROGRAM
    model.pointee.mlprogram = program
    return model
  }
}
