import Foundation
import ModelIR
import ReferenceRuntime

/// The running state of one verification: input plans, runtimes and accumulated statistics.
struct Comparison {
  struct InputPlan {
    var sourceShape: [Int]
    var input: ReadBackModel.Input
    var layout: TensorLayout
    /// For image inputs: what the source model expects before its first layer, which is the converted
    /// model's scaler unless that scaler absorbed a Rescaling or Normalization layer.
    var sourcePreprocessing: ImagePreprocessing?
    /// For token-id inputs of an Embedding: the vocabulary size, ids are drawn below it.
    var vocabulary: Int?
  }

  /// The vocabulary of the Embedding that reads graph input `id`, if one does.
  /// The layout of a converted feature declared exactly as the source declared it (the same bytes), if it is.
  /// The layout of a feature the source declares (`sourceName`), checked against the shape the converted
  /// model declares for it (`feature`, `shape`): the same sizes in the same order, unit axes aside (a
  /// classic network has no batch axis, and holds a vector as `[C, 1, 1]`). Another shape is another interface, whatever the
  /// values: the app reads the array in the shape it is declared in, never through a guessed transposition.
  static func checkedDeclaredLayout(sourceName: String, feature: String, shape: [Int], options: VerificationOptions)
    throws -> TensorLayout?
  {
    guard let declared = options.sourceDeclarations[sourceName] else { return nil }
    func sizes(_ shape: [Int]) -> [Int] { shape.filter { $0 != 1 } }
    guard sizes(declared.shape) == sizes(shape) else {
      throw VerificationError.interfaceMismatch(
        "'\(feature)' is declared \(shape) in the converted model; the source declares '\(sourceName)' as \(declared.shape)\(declared.channelsFirst ? "" : " (channels last)")"
      )
    }
    return declared.channelsFirst ? .channelsFirst : .sameOrder
  }

  static func declaredLayout(_ name: String, shape: [Int], options: VerificationOptions) -> TensorLayout? {
    guard let declared = options.sourceDeclarations[name], declared.shape == shape else { return nil }
    return declared.channelsFirst ? .channelsFirst : .sameOrder
  }

  static func vocabulary(of id: ValueID, in graph: Graph) -> Int? {
    // Through reshapes (a cast of float ids to integers, a batch axis added): at most a few.
    var current = id
    for _ in 0..<8 {
      var next: ValueID?
      for node in graph.nodes where node.inputs == [current] {
        switch node.operation {
        case .embedding(let table): return table.shape[0]
        case .reshape: next = node.output
        default: continue
        }
      }
      guard let next else { return nil }
      current = next
    }
    return nil
  }

  /// What a statistic compares: one output, on random or reference inputs, against what.
  struct StatisticsKey: Hashable, Comparable {
    typealias Against = ParityReport.Reference
    var output: Int
    /// `random` or `reference`.
    var inputs: String
    var against: Against

    static func < (a: Self, b: Self) -> Bool {
      (a.output, a.inputs, a.against.rawValue) < (b.output, b.inputs, b.against.rawValue)
    }
  }

  struct Statistics {
    var elements = 0
    var mismatches = 0
    var maxAbsolute: Float = 0
    var maxRelative: Float = 0
    var signal = 0.0
    var noise = 0.0
  }

  /// A tensor both graphs compute, in the order the source graph computes it.
  struct TensorPair {
    var source: ValueID
    var converted: ValueID
    /// Nil when the two shapes cannot hold the same tensor: the layer computes something else.
    var layout: TensorLayout?
    var sourceOrigin: LayerOrigin
    var convertedOrigin: LayerOrigin
    var tensor: String
  }

  let source: Graph
  let converted: ReadBackModel
  let options: VerificationOptions
  let tolerance: VerificationTolerance
  let plans: [InputPlan]
  /// Every tensor compared layer by layer: preprocessed image inputs, then source layer outputs whose
  /// names Core ML blobs carry, then the model outputs.
  let pairs: [TensorPair]
  var layerStatistics: [Statistics]
  /// Per image input (by plan index): the preprocessing the converted model applies, and whether it
  /// was checked against the expected one.
  let preprocessing: [PreprocessingParity]
  let outputLayouts: [TensorLayout]
  /// Image outputs made of a source's array outputs, by output index (see `PixelOutput`).
  let pixelOutputs: [Int: PixelOutput]

  /// An image output the conversion made of an array output (`--image-output`): Core ML turns the
  /// output's values into 8-bit pixels, clamped to 0-255. The source's values become the pixels they
  /// stand for by the image preprocessing undone (the expected one, else the converted model's image
  /// input's), `pixel = (value / channelScale - bias) / scale`, and both are compared as pixels, within
  /// one level (where a value lies on a rounding boundary, either side is right).
  struct PixelOutput {
    var preprocessing: ImagePreprocessing
    var channels: Int

    /// Pixels of the source's values `[..., C]` (channels last, as the IR holds them).
    func pixels(ofSource values: [Float]) -> [Float] {
      let biases = preprocessing.networkBiases(channels: channels)
      let factors = preprocessing.channelScales ?? [Float](repeating: 1, count: channels)
      return values.enumerated().map { index, value in
        let c = index % channels
        return Self.pixel((value / factors[min(c, factors.count - 1)] - biases[c]) / preprocessing.scale)
      }
    }

    /// What Core ML stores of an image output's value.
    static func pixel(_ value: Float) -> Float {
      value.isNaN ? 0 : min(max(value.rounded(), 0), 255)
    }
  }
  let sourceRuntime: Interpreter
  let convertedRuntime: Interpreter
  /// Keyed by output index and input kind (`random` / `reference`).
  var statistics: [StatisticsKey: Statistics] = [:]
  /// By output index: the source rerun with its float32 roundoff made visible against its plain run, on the
  /// reference inputs (what another framework's float32 rounding may move each output by).
  var roundoffStatistics: [Int: Statistics] = [:]
  var sourceSeconds = 0.0
  var convertedSeconds = 0.0
  var runs = 0
  /// Per compared sample: source (or expected) probabilities and converted probabilities.
  var classifications: [(expected: [Float], converted: [Float])] = []

  init(source: Graph, converted: ReadBackModel, options: VerificationOptions) throws {
    self.source = source
    self.converted = converted
    self.options = options
    tolerance = options.tolerance(forDefault: converted.tolerance)
    guard source.inputs.count == converted.inputs.count else {
      throw VerificationError.interfaceMismatch(
        "the source has \(source.inputs.count) inputs, the converted model \(converted.inputs.count)")
    }
    guard source.outputs.count == converted.graph.outputs.count else {
      throw VerificationError.interfaceMismatch(
        "the source has \(source.outputs.count) outputs, the converted model \(converted.graph.outputs.count) (besides the class label)"
      )
    }
    let classic = converted.usesChannelsFirstMapping
    var preprocessing: [PreprocessingParity] = []
    plans = try zip(source.inputs, converted.inputs).map { id, input in
      let sourceShape = source[id].type.shape
      // An image input is the image Core ML makes of a pixel buffer, whatever array the source declared.
      let declared =
        input.image != nil
        ? nil
        : try Self.checkedDeclaredLayout(
          sourceName: source[id].name, feature: input.name, shape: input.shape, options: options)
      guard
        let layout = declared
          ?? TensorLayout.match(
            source: sourceShape, converted: input.shape, preferChannelsFirst: classic || input.image != nil)
      else {
        throw VerificationError.layoutMismatch(feature: input.name, source: sourceShape, converted: input.shape)
      }
      var sourcePreprocessing = input.image
      if let image = input.image, let space = input.colorSpace {
        let fold = InputPreprocessingFold.find(input: id, in: source)
        let expectedHere = options.expectedPreprocessingByInput[source[id].name] ?? options.expectedPreprocessing
        let check = PreprocessingParity(
          input: input.name, converted: image, colorSpace: space, expected: expectedHere, fold: fold)
        preprocessing.append(check)
        if let expected = expectedHere {
          // The source model gets the pixels as the user says it was trained on them.
          sourcePreprocessing = .init(
            colorSpace: space, scale: expected.scale, networkBiases: expected.networkBiases(channels: space.channels))
          sourcePreprocessing?.channelScales = expected.channelScales
        } else if let fold {
          let undone = fold.undone(scale: image.scale, biases: image.networkBiases(channels: space.channels))
          sourcePreprocessing = .init(colorSpace: space, scale: undone.scale, networkBiases: undone.biases)
        }
      }
      return InputPlan(
        sourceShape: sourceShape, input: input, layout: layout, sourcePreprocessing: sourcePreprocessing,
        vocabulary: Self.vocabulary(of: id, in: source))
    }
    self.preprocessing = preprocessing
    outputLayouts = try zip(source.outputs, converted.graph.outputs).map { sourceID, convertedID in
      let (sourceShape, convertedShape) = (source[sourceID].type.shape, converted.graph[convertedID].type.shape)
      let name = converted.graph[convertedID].name
      // An image output is a channels-first tensor, as Core ML makes pixels of it.
      let image = converted.declaresImageOutput(name)
      let declared =
        image
        ? .channelsFirst
        : try Self.checkedDeclaredLayout(
          sourceName: source[sourceID].name, feature: name, shape: convertedShape, options: options)
      guard
        let layout = declared
          ?? TensorLayout.match(source: sourceShape, converted: convertedShape, preferChannelsFirst: classic)
      else {
        throw VerificationError.layoutMismatch(
          feature: converted.graph[convertedID].name, source: sourceShape, converted: convertedShape)
      }
      return layout
    }
    var pixelOutputs: [Int: PixelOutput] = [:]
    for (index, convertedID) in converted.graph.outputs.enumerated()
    where !options.sourceImageOutputs.contains(source[source.outputs[index]].name) {
      let name = converted.graph[convertedID].name
      guard converted.declaresImageOutput(name) else { continue }
      let channels = source[source.outputs[index]].type.shape.last ?? 1
      let preprocessing =
        options.expectedPreprocessing ?? converted.inputs.lazy.compactMap(\.image).first ?? ImagePreprocessing()
      pixelOutputs[index] = PixelOutput(preprocessing: preprocessing, channels: channels == 1 ? 1 : 3)
    }
    self.pixelOutputs = pixelOutputs
    // The pixels are not the source's values: compared as pixels at the outputs, not as a layer.
    let pixelValues = Set(pixelOutputs.keys.map { converted.graph.outputs[$0] })
    pairs = Self.pairs(source: source, converted: converted, plans: plans, classic: classic, options: options).filter {
      !pixelValues.contains($0.converted)
    }
    layerStatistics = Array(repeating: Statistics(), count: pairs.count)
    sourceRuntime = Interpreter(graph: source, observed: Set(pairs.map(\.source)))
    convertedRuntime = Interpreter(graph: converted.graph, observed: Set(pairs.map(\.converted)))
  }

  /// The tensors both graphs compute. Core ML blobs carry the names of the IR values they were written
  /// from, so a source value and a blob of the same name hold the same tensor; graph inputs are matched
  /// after preprocessing (after a Rescaling folded into the scaler), outputs by position.
  static func pairs(
    source: Graph, converted: ReadBackModel, plans: [InputPlan], classic: Bool, options: VerificationOptions
  ) -> [TensorPair] {
    let graph = converted.graph
    var producers: [ValueID: Node] = [:]
    for node in graph.nodes { producers[node.output] = node }
    let computed = Set(graph.inputs).union(producers.keys)
    func convertedOrigin(_ id: ValueID) -> LayerOrigin {
      producers[id].map { $0.origin ?? LayerOrigin(name: $0.name, type: $0.operation.kindName) }
        ?? LayerOrigin(name: graph[id].name, type: "input")
    }
    var result: [TensorPair] = []
    var paired = Set<ValueID>()
    // Values known to be channels first: the spatial blobs the reader also holds channels last, and what
    // element-wise operations compute from them alone (for shapes both layouts fit).
    var channelsFirst = Set(converted.channelsLastValues.keys)
    for node in graph.nodes {
      switch node.operation {
      case .activation, .elementwise, .cast:
        let alike = node.inputs.filter { graph[$0].type.shape == graph[node.output].type.shape }
        if !alike.isEmpty && alike.allSatisfy(channelsFirst.contains) { channelsFirst.insert(node.output) }
      default: break
      }
    }
    let sourceProducers = Dictionary(source.nodes.map { ($0.output, $0) }, uniquingKeysWith: { first, _ in first })
    func add(_ sourceID: ValueID, _ blob: ValueID, origin: LayerOrigin) {
      guard !paired.contains(sourceID) else { return }
      var convertedID = blob
      // A feature declared as the source declared it maps as the source's own (outputs, inputs).
      let declared =
        graph.outputs.contains(blob) || graph.inputs.contains(blob)
        ? declaredLayout(graph[blob].name, shape: graph[blob].type.shape, options: options) : nil
      var layout =
        declared
        ?? TensorLayout.match(
          source: source[sourceID].type.shape, converted: graph[blob].type.shape, preferChannelsFirst: classic)
      // (Rank-5 classic blobs are all channels first: the shape-based match holds for them.)
      if declared == nil, !(classic && converted.usesChannelsFirstMapping),
        TensorLayout.isAmbiguous(source: source[sourceID].type.shape, converted: graph[blob].type.shape)
      {
        // A [1, C, H, W] blob with C, H and W alike: its shape does not say its layout. Only the result of
        // a source layer defined on [H, W, C] (the IR's spatial operations; an element-wise one may run on
        // a channels-first source value, as in channels-first graphs) is compared, and only where the converted side
        // says how it is laid out: the reader's channels-last form of a spatial blob, or a value computed
        // channels first. Otherwise what is computed from it is compared.
        let spatial: Bool
        switch sourceProducers[sourceID]?.operation {
        case .convolution2D?, .convolutionTranspose?, .pooling2D?, .globalPooling2D?, .upsampling2D?, .zeroPadding2D?,
          .cropping2D?,
          .localResponseNormalization?:
          spatial = true
        default: spatial = false
        }
        guard spatial else { return }
        if computed.contains(blob), let channelsLast = converted.channelsLastValues[blob],
          computed.contains(channelsLast),
          graph[channelsLast].type.shape.filter({ $0 != 1 }) == source[sourceID].type.shape.filter({ $0 != 1 })
        {
          (convertedID, layout) = (channelsLast, .sameOrder)
        } else if channelsFirst.contains(blob) {
          layout = .channelsFirst
        } else {
          return
        }
      } else if !computed.contains(blob) {
        // A blob between two spatial layers exists only in its channels-last form, already in the source's order.
        guard let channelsLast = converted.channelsLastValues[blob], computed.contains(channelsLast) else { return }
        let fits = source[sourceID].type.shape.filter({ $0 != 1 }) == graph[channelsLast].type.shape.filter({ $0 != 1 })
        // Only another transposition of the same elements exists (a channels-first source tensor the
        // writer keeps channels last): not compared, what is computed from it is. A different size fails.
        if !fits
          && source[sourceID].type.shape.filter({ $0 != 1 }).sorted()
            == graph[channelsLast].type.shape.filter({ $0 != 1 }).sorted()
        {
          return
        }
        (convertedID, layout) = (channelsLast, fits ? .sameOrder : nil)
      }
      paired.insert(sourceID)
      result.append(
        TensorPair(
          source: sourceID, converted: convertedID, layout: layout, sourceOrigin: origin,
          convertedOrigin: convertedOrigin(convertedID), tensor: source[sourceID].name))
    }
    // An image input's scaled pixels pair with the source's input, unless per-channel factors (a std per
    // channel) come after the scaler: then only what follows them compares.
    for (id, plan) in zip(source.inputs, plans)
    where plan.input.image != nil && plan.sourcePreprocessing?.channelScales == nil {
      guard let blob = converted.blobs[plan.input.name] else { continue }
      if let fold = InputPreprocessingFold.find(input: id, in: source) {
        let node = source.nodes[fold.nodeIndex]
        add(node.output, blob, origin: node.origin ?? LayerOrigin(name: node.name, type: node.operation.kindName))
      } else {
        add(id, blob, origin: LayerOrigin(name: source[id].name, type: "input"))
      }
    }
    // An input a classic network declares in the source's channels-last order is permuted into the
    // network's own order first (`Graph.permuteInput`): that blob holds the source's input.
    for id in source.inputs {
      if let blob = converted.blobs[source[id].name + "__declared_order"], !graph.inputs.contains(blob) {
        add(id, blob, origin: LayerOrigin(name: source[id].name, type: "input"))
      }
    }
    let outputsByValue = Dictionary(zip(source.outputs, graph.outputs), uniquingKeysWith: { first, _ in first })
    // An ML Program's value names are MIL identifiers: where two source names become the same identifier
    // (`sigmoid_0.tmp_0` and `sigmoid_0_tmp_0`), a blob of that name may stand for either, so neither is
    // paired by name. A classic network's blob names are the names themselves.
    var sanitizedCounts: [String: Int] = [:]
    if !classic {
      for node in source.nodes { sanitizedCounts[milIdentifier(source[node.output].name), default: 0] += 1 }
    }
    func unambiguous(_ name: String) -> Bool { classic || (sanitizedCounts[milIdentifier(name)] ?? 0) <= 1 }
    for node in source.nodes {
      let origin = node.origin ?? LayerOrigin(name: node.name, type: node.operation.kindName)
      if unambiguous(source[node.output].name), let blob = converted.blobs[source[node.output].name],
        !graph.inputs.contains(blob)
      {
        add(node.output, blob, origin: origin)
      }
      if let output = outputsByValue[node.output] { add(node.output, output, origin: origin) }
    }
    // Blobs named after a source value the conversion's passes rewrote without reordering its elements
    // (unit axes dropped: `__unit_axes`; a copy: `__copy`), or under its MIL identifier (a source name such
    // as `/layer1/Conv_output_0` written as `_layer1_Conv_output_0`): compared when the sizes other than 1
    // agree in order. A value computed in another layout (`__before_transpose`) is not.
    var sourceByName: [String: ValueID] = [:]
    for node in source.nodes {
      let name = source[node.output].name
      guard unambiguous(name) else { continue }
      sourceByName[name] = node.output
      if sourceByName[milIdentifier(name)] == nil { sourceByName[milIdentifier(name)] = node.output }
    }
    let origins = Dictionary(
      source.nodes.map { ($0.output, $0.origin ?? LayerOrigin(name: $0.name, type: $0.operation.kindName)) },
      uniquingKeysWith: { first, _ in first })
    let sourceNames = Set(source.nodes.map { source[$0.output].name })
    // Names the source has exactly were looked at above.
    for (name, blob) in converted.blobs.sorted(by: { $0.key < $1.key })
    where !graph.inputs.contains(blob) && !sourceNames.contains(name) {
      var base = name
      while let suffix = ["__unit_axes", "__copy"].first(where: { base.hasSuffix($0) }) {
        base.removeLast(suffix.count)
      }
      guard let sourceID = sourceByName[base], !paired.contains(sourceID), let origin = origins[sourceID] else {
        continue
      }
      let sizes = source[sourceID].type.shape.filter { $0 != 1 }
      // A spatial result as the reader computes it, channels last (the blob itself may be channels first).
      var candidate: ValueID?
      // Only what a layer computes: a transpose or reshape of the source is the IR's bookkeeping, which the
      // writers realize in either layout.
      guard let producer = sourceProducers[sourceID] else { continue }
      switch producer.operation {
      case .permute, .reshape, .flatten, .constant, .cast: continue
      default: break
      }
      if let channelsLast = converted.channelsLastValues[blob], computed.contains(channelsLast) {
        candidate = channelsLast
      } else if computed.contains(blob) {
        // Another value is in the writer's layout or its channels-first one, which moves the last axis to
        // the front: only sizes that rotation tells apart say which (a vector's order is the same in both).
        let blobSizes = graph[blob].type.shape.filter { $0 != 1 }
        if let last = blobSizes.last, blobSizes.count <= 1 || [last] + blobSizes.dropLast() != blobSizes {
          candidate = blob
        }
      }
      guard let convertedID = candidate, graph[convertedID].type.shape.filter({ $0 != 1 }) == sizes else { continue }
      paired.insert(sourceID)
      result.append(
        TensorPair(
          source: sourceID, converted: convertedID, layout: .sameOrder, sourceOrigin: origin,
          convertedOrigin: convertedOrigin(convertedID), tensor: source[sourceID].name))
    }
    // In the source's order, so the first mismatch is the earliest broken layer.
    let order = Dictionary(
      source.nodes.enumerated().map { ($0.element.output, $0.offset) }, uniquingKeysWith: { first, _ in first })
    return result.enumerated().sorted {
      (order[$0.element.source] ?? -1, $0.offset) < (order[$1.element.source] ?? -1, $1.offset)
    }.map(\.element)
  }

  /// A name as an ML Program identifier: letters, digits, `_` and `@`, not starting with a digit or `@`
  /// ([rule MIL-IDENT] in Schemas/MIL.proto), anything else `_`.
  static func milIdentifier(_ name: String) -> String {
    let scalars = name.unicodeScalars.map { scalar -> Character in
      let letter = ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar) || scalar == "_"
      return letter || ("0"..."9").contains(scalar) || scalar == "@" ? Character(scalar) : "_"
    }
    let result = String(scalars)
    guard let first = result.unicodeScalars.first,
      ("a"..."z").contains(first) || ("A"..."Z").contains(first) || first == "_"
    else { return "_" + result }
    return result
  }

  /// Image inputs get pixels 0-255 (the source sees them after the converted model's own preprocessing);
  /// Embedding inputs get token ids below the vocabulary size; other inputs get values uniform in [-1, 1].
  func randomInputs(_ generator: inout SplitMix64) -> ([Tensor], [Tensor]) {
    var sourceInputs: [Tensor] = []
    var convertedInputs: [Tensor] = []
    for plan in plans {
      let count = plan.sourceShape.reduce(1, *)
      if let image = plan.sourcePreprocessing, let space = plan.input.colorSpace {
        let pixels = Tensor(shape: plan.sourceShape, values: (0..<count).map { _ in Float(generator.next() % 256) })
        sourceInputs.append(preprocessed(pixels, image, space))
        convertedInputs.append(plan.layout.toConverted(pixels, shape: plan.input.shape))
      } else if let vocabulary = plan.vocabulary {
        let tokens = Tensor(
          shape: plan.sourceShape, values: (0..<count).map { _ in Float(generator.next() % UInt64(vocabulary)) })
        sourceInputs.append(tokens)
        convertedInputs.append(plan.layout.toConverted(tokens, shape: plan.input.shape))
      } else {
        let values = Tensor(shape: plan.sourceShape, values: (0..<count).map { _ in generator.nextUnit() * 2 - 1 })
        sourceInputs.append(values)
        convertedInputs.append(plan.layout.toConverted(values, shape: plan.input.shape))
      }
    }
    return (sourceInputs, convertedInputs)
  }

  /// The reference file's source inputs; image inputs of the converted model get the saved pixels (RGB,
  /// reordered for BGR models), or the source input with the converted model's preprocessing undone.
  func referenceInputs(
    _ file: ReferenceFile, sample: Int, given: [Int: (source: Tensor, converted: Tensor)] = [:]
  ) throws -> ([Tensor], [Tensor]) {
    var sourceInputs: [Tensor] = []
    var convertedInputs: [Tensor] = []
    /// A reference tensor as the source graph takes it: saved in the source's declared layout (a channels-first
    /// model's `[C, H, W]` per sample) when the source says so, else already in the graph's.
    func sourceLayout(_ tensor: Tensor, _ plan: InputPlan) -> Tensor {
      guard options.referenceInputsAsDeclared, options.sourceDeclarations[plan.input.name]?.channelsFirst == true,
        plan.sourceShape.count == 3
      else { return tensor }
      let (h, w, c) = (plan.sourceShape[0], plan.sourceShape[1], plan.sourceShape[2])
      return TensorLayout.channelsFirst.toSource(
        Tensor(shape: [c, h, w], values: tensor.values), shape: plan.sourceShape)
    }
    var saved = 0
    for (index, plan) in plans.enumerated() {
      // Inputs the caller gives (a stream's states, in the source graph's layout) are not in the file.
      if let (source, converted) = given[index] {
        sourceInputs.append(source)
        convertedInputs.append(plan.layout.toConverted(converted, shape: plan.input.shape))
        continue
      }
      let input = sourceLayout(try file.input(saved, sample: sample, shape: plan.sourceShape), plan)
      saved += 1
      sourceInputs.append(input)
      guard let image = plan.input.image, let space = plan.input.colorSpace else {
        convertedInputs.append(plan.layout.toConverted(input, shape: plan.input.shape))
        continue
      }
      var pixels: Tensor
      if let saved = try file.pixels(index, sample: sample, shape: plan.sourceShape) {
        pixels = sourceLayout(saved, plan)
        if space == .bgr { pixels = reversedChannels(pixels) }
      } else {
        let expected = plan.sourcePreprocessing ?? image
        let biases = expected.networkBiases(channels: space.channels)
        let c = biases.count
        let factors = expected.channelScales ?? [Float](repeating: 1, count: c)
        pixels = Tensor(
          shape: input.shape,
          values: input.values.enumerated().map { ($1 / factors[$0 % c] - biases[$0 % c]) / expected.scale })
      }
      convertedInputs.append(plan.layout.toConverted(pixels, shape: plan.input.shape))
    }
    return (sourceInputs, convertedInputs)
  }

  /// Reference outputs saved as the source declares them (a channels-first model's `[1, C, H, W]`), in the source
  /// graph's layout (`[H, W, C]`), as `referenceInputs` reads the inputs.
  func referenceOutputsInSourceLayout(_ outputs: [Tensor]) -> [Tensor] {
    guard options.referenceInputsAsDeclared else { return outputs }
    return outputs.enumerated().map { index, tensor in
      guard index < source.outputs.count else { return tensor }
      let value = source[source.outputs[index]]
      let shape = value.type.shape
      guard options.sourceDeclarations[value.name]?.channelsFirst == true, shape.count == 3,
        tensor.values.count == shape.reduce(1, *)
      else { return tensor }
      return TensorLayout.channelsFirst.toSource(
        Tensor(shape: [shape[2], shape[0], shape[1]], values: tensor.values), shape: shape)
    }
  }

  func preprocessed(_ pixels: Tensor, _ image: ImagePreprocessing, _ space: ImageColorSpace) -> Tensor {
    Tensor(shape: pixels.shape, values: image.apply(pixels.values, channels: space.channels))
  }

  func reversedChannels(_ x: Tensor) -> Tensor {
    let c = x.shape.last ?? 1
    return Tensor(shape: x.shape, values: x.values.indices.map { x.values[$0 - $0 % c + (c - 1 - $0 % c)] })
  }

  /// Runs both models on one sample and accumulates the differences; `expected` replaces the source's
  /// outputs as the reference when given (the outputs saved from the source framework).
  /// A reference file saved as a stream (LiteRT invoked step after step): the file holds the inputs and outputs
  /// that are not states; each model carries its own states from its previous step's outputs, both starting
  /// from the initial values. The state outputs are compared between the models (the file has none).
  mutating func compareStream(_ file: ReferenceFile, states: [StreamingState]) throws {
    var sourceStates: [Int: Tensor] = [:]
    for state in states {
      guard state.input < plans.count, state.output < outputLayouts.count,
        state.initial.count == plans[state.input].sourceShape.reduce(1, *)
      else {
        throw VerificationError.invalidReference(
          path: file.path, detail: "the model's streaming state \(state.input) does not match its inputs")
      }
      sourceStates[state.input] = Tensor(shape: plans[state.input].sourceShape, values: state.initial)
    }
    var convertedStates = sourceStates
    let stateOutputs = Set(states.map(\.output))
    for sample in 0..<file.sampleCount {
      var given: [Int: (source: Tensor, converted: Tensor)] = [:]
      for (index, tensor) in sourceStates { given[index] = (tensor, convertedStates[index] ?? tensor) }
      let (sourceInputs, convertedInputs) = try referenceInputs(file, sample: sample, given: given)
      let run = self.run(sourceInputs: sourceInputs, convertedInputs: convertedInputs)
      let saved = try file.outputs(sample: sample)
      var expected: [Tensor] = []
      var next = 0
      for index in run.sourceOutputs.indices {
        if stateOutputs.contains(index) {
          expected.append(run.sourceOutputs[index])
        } else {
          expected.append(saved[next])
          next += 1
        }
      }
      try accumulate(run, expected: expected, unsaved: stateOutputs)
      for state in states {
        let sourceShape = run.sourceOutputs[state.output].shape
        sourceStates[state.input] = Tensor(
          shape: plans[state.input].sourceShape, values: run.sourceOutputs[state.output].values)
        convertedStates[state.input] = Tensor(
          shape: plans[state.input].sourceShape,
          values: outputLayouts[state.output].toSource(run.convertedOutputs[state.output], shape: sourceShape).values)
      }
    }
  }

  mutating func compare(sourceInputs: [Tensor], convertedInputs: [Tensor], expected: [Tensor]?) throws {
    let sample = run(sourceInputs: sourceInputs, convertedInputs: convertedInputs)
    try accumulate(sample, expected: expected)
    if expected != nil { probeRoundoff(sourceInputs: sourceInputs, plain: sample.sourceOutputs) }
  }

  /// Runs of the source with its float32 roundoff made visible (`RoundoffNoise`, two seeds per sample),
  /// compared with its plain run: how far the model's own rounding moves each output, which an
  /// output compared with another framework's (float32 weights) may then differ by (`RoundoffSensitivity`).
  mutating func probeRoundoff(sourceInputs: [Tensor], plain: [Tensor]) {
    guard tolerance.basis == .float32Weights, tolerance.maximumRelativeRMS == nil else { return }
    for draw in 0..<2 {
      let noise = RoundoffNoise(seed: UInt64(runs) << 8 | UInt64(draw + 1))
      let noisy = sourceRuntime.runObserving(sourceInputs, roundoffNoise: noise).outputs
      for index in plain.indices where pixelOutputs[index] == nil {
        var stats = roundoffStatistics[index] ?? Statistics()
        Self.accumulate(&stats, actual: noisy[index].values, expected: plain[index].values, tolerance: tolerance)
        roundoffStatistics[index] = stats
      }
    }
  }

  /// Both models' outputs and observed values for one sample, and how long each took.
  struct SampleRun: Sendable {
    var sourceOutputs: [Tensor]
    var sourceObserved: [ValueID: Tensor]
    var convertedOutputs: [Tensor]
    var convertedObserved: [ValueID: Tensor]
    var sourceSeconds: Double
    var convertedSeconds: Double
  }

  /// Runs both models on one sample; safe to call from several threads at once.
  func run(sourceInputs: [Tensor], convertedInputs: [Tensor]) -> SampleRun {
    var clock = ContinuousClock.now
    let (sourceOutputs, sourceObserved) = sourceRuntime.runObserving(sourceInputs)
    let sourceTime = (ContinuousClock.now - clock).seconds
    clock = ContinuousClock.now
    var (convertedOutputs, convertedObserved) = convertedRuntime.runObserving(convertedInputs)
    if comparesLayersLocally {
      // Compressed weights: the outputs above are what the device computes; each layer tensor is
      // computed again from the source's values of the compared tensors before it, so that it measures
      // its own layers' weights, not the rounding of every layer before it.
      convertedObserved =
        convertedRuntime.runObserving(convertedInputs, substitutes: substitutes(from: sourceObserved)).observed
    }
    return SampleRun(
      sourceOutputs: sourceOutputs, sourceObserved: sourceObserved, convertedOutputs: convertedOutputs,
      convertedObserved: convertedObserved,
      sourceSeconds: sourceTime, convertedSeconds: (ContinuousClock.now - clock).seconds)
  }

  /// Whether each layer tensor is computed from the source's values of the compared tensors before it:
  /// for compressed weights, whose rounding every later layer carries on.
  var comparesLayersLocally: Bool { converted.hasQuantizedWeights }

  /// The source's values of the compared tensors, in the converted blobs' layouts, keyed by blob.
  func substitutes(from sourceObserved: [ValueID: Tensor]) -> [ValueID: Tensor] {
    var substitutes: [ValueID: Tensor] = [:]
    let inputs = Set(converted.graph.inputs)
    for pair in pairs where !inputs.contains(pair.converted) && substitutes[pair.converted] == nil {
      guard let layout = pair.layout, let value = sourceObserved[pair.source] else { continue }
      let shape = converted.graph[pair.converted].type.shape
      guard value.values.count == shape.reduce(1, *) else { continue }
      substitutes[pair.converted] = layout.toConverted(value, shape: shape)
    }
    return substitutes
  }

  /// Runs `count` samples `threads` at a time and accumulates them in order; `draw` makes each sample's
  /// inputs, in sample order, just before its group runs (so only the running samples' inputs are held).
  mutating func compareRandom(count: Int, threads: Int, draw: (Comparison) -> ([Tensor], [Tensor])) throws {
    let width = max(1, min(threads, count))
    for start in stride(from: 0, to: count, by: width) {
      let chunk = (start..<min(start + width, count)).map { _ in draw(self) }.map { (source: $0.0, converted: $0.1) }
      let box = SlotBox<SampleRun>(count: chunk.count)
      let this = self
      DispatchQueue.concurrentPerform(iterations: chunk.count) { index in
        box.set(index, this.run(sourceInputs: chunk[index].source, convertedInputs: chunk[index].converted))
      }
      for result in box.values { try accumulate(result!, expected: nil) }
    }
  }

  /// Adds one sample's differences; `expected` replaces the source's outputs as the reference when given.
  /// `unsaved`: outputs the reference does not hold (a stream's states), compared between the models only.
  mutating func accumulate(_ sample: SampleRun, expected saved: [Tensor]?, unsaved: Set<Int> = []) throws {
    let all = saved.map(referenceOutputsInSourceLayout)
    let (sourceOutputs, sourceObserved) = (sample.sourceOutputs, sample.sourceObserved)
    let (convertedOutputs, convertedObserved) = (sample.convertedOutputs, sample.convertedObserved)
    sourceSeconds += sample.sourceSeconds
    convertedSeconds += sample.convertedSeconds
    runs += 1

    for (index, pair) in pairs.enumerated() {
      guard let expected = sourceObserved[pair.source], let actual = convertedObserved[pair.converted],
        let layout = pair.layout
      else { continue }
      let mapped = layout.toSource(actual, shape: expected.shape)
      Self.accumulate(&layerStatistics[index], actual: mapped.values, expected: expected.values, tolerance: tolerance)
    }

    let kind = all == nil ? "random" : "reference"
    for index in sourceOutputs.indices {
      let expected = unsaved.contains(index) ? nil : all
      let mapped = outputLayouts[index].toSource(convertedOutputs[index], shape: sourceOutputs[index].shape)
      if let pixels = pixelOutputs[index] {
        let actual = mapped.values.map(PixelOutput.pixel)
        accumulatePixels(
          .init(output: index, inputs: kind, against: .sourceModel), actual: actual,
          expected: pixels.pixels(ofSource: sourceOutputs[index].values))
        if let expected {
          guard expected[index].values.count == mapped.values.count else {
            throw VerificationError.invalidReference(
              path: options.reference?.path ?? "",
              detail:
                "outputs/\(index) has \(expected[index].values.count) values per sample, the model \(mapped.values.count)"
            )
          }
          accumulatePixels(
            .init(output: index, inputs: kind, against: .referenceOutputs), actual: actual,
            expected: pixels.pixels(ofSource: expected[index].values))
          accumulate(
            .init(output: index, inputs: kind, against: .referenceOutputsThroughSource),
            actual: sourceOutputs[index].values, expected: expected[index].values)
        }
        continue
      }
      accumulate(
        .init(output: index, inputs: kind, against: .sourceModel), actual: mapped.values,
        expected: sourceOutputs[index].values)
      if let expected {
        guard expected[index].values.count == mapped.values.count else {
          throw VerificationError.invalidReference(
            path: options.reference?.path ?? "",
            detail:
              "outputs/\(index) has \(expected[index].values.count) values per sample, the model \(mapped.values.count)"
          )
        }
        accumulate(
          .init(output: index, inputs: kind, against: .referenceOutputs), actual: mapped.values,
          expected: expected[index].values)
        accumulate(
          .init(output: index, inputs: kind, against: .referenceOutputsThroughSource),
          actual: sourceOutputs[index].values, expected: expected[index].values)
      }
      if let probabilities = converted.probabilitiesOutput,
        converted.graph[converted.graph.outputs[index]].name == probabilities
      {
        classifications.append((expected?[index].values ?? sourceOutputs[index].values, mapped.values))
      }
    }
  }

  mutating func accumulate(_ key: StatisticsKey, actual: [Float], expected: [Float]) {
    var stats = statistics[key] ?? Statistics()
    Self.accumulate(&stats, actual: actual, expected: expected, tolerance: tolerance)
    statistics[key] = stats
  }

  /// Pixels of an image output: a mismatch is more than one level apart. The statistics' signal and
  /// noise stay as for values, so the pass rule reads them alike.
  mutating func accumulatePixels(_ key: StatisticsKey, actual: [Float], expected: [Float]) {
    var stats = statistics[key] ?? Statistics()
    for (a, b) in zip(actual, expected) {
      stats.elements += 1
      let error = abs(a - b)
      if error > 1 { stats.mismatches += 1 }
      stats.maxAbsolute = max(stats.maxAbsolute, error)
      if b != 0 { stats.maxRelative = max(stats.maxRelative, error / abs(b)) }
      stats.signal += Double(b) * Double(b)
      stats.noise += Double(a - b) * Double(a - b)
    }
    statistics[key] = stats
  }

  /// Adds one sample of a tensor to its statistics, under the tolerance's pass rule.
  static func accumulate(
    _ stats: inout Statistics, actual: [Float], expected: [Float], tolerance: VerificationTolerance
  ) {
    let scale = VerificationTolerance.scale(of: expected)
    for (a, b) in zip(actual, expected) {
      stats.elements += 1
      // The source's own NaN or infinity, reproduced, is agreement (and no signal or noise).
      if VerificationTolerance.sameNonFinite(a, b) { continue }
      let error = abs(a - b)
      if !tolerance.allows(actual: a, expected: b, scale: scale) { stats.mismatches += 1 }
      stats.maxAbsolute = max(stats.maxAbsolute, error.isNaN ? .infinity : error)
      if b != 0 { stats.maxRelative = max(stats.maxRelative, error / abs(b)) }
      stats.signal += Double(b) * Double(b)
      stats.noise += Double(a - b) * Double(a - b)
    }
  }

  /// One row per compared tensor, in the source graph's order.
  func layerReports() -> [LayerParity] {
    zip(pairs, layerStatistics).compactMap { pair, stats in
      guard pair.layout != nil else {
        let detail =
          "source shape \(source[pair.source].type.shape), converted shape \(converted.graph[pair.converted].type.shape)"
        return LayerParity(
          sourceLayer: pair.sourceOrigin.name, sourceType: pair.sourceOrigin.type, tensor: pair.tensor,
          convertedLayer: pair.convertedOrigin.name, convertedType: pair.convertedOrigin.type,
          elements: 0, maxAbsoluteError: .infinity, maxRelativeError: .infinity, mismatchedShare: 1, snrDecibels: nil,
          passed: false,
          shapeMismatch: detail)
      }
      guard stats.elements > 0 else { return nil }
      return LayerParity(
        sourceLayer: pair.sourceOrigin.name, sourceType: pair.sourceOrigin.type, tensor: pair.tensor,
        convertedLayer: pair.convertedOrigin.name, convertedType: pair.convertedOrigin.type,
        elements: stats.elements, maxAbsoluteError: stats.maxAbsolute, maxRelativeError: stats.maxRelative,
        mismatchedShare: Double(stats.mismatches) / Double(stats.elements),
        snrDecibels: stats.noise == 0 ? nil : 10 * log10(stats.signal / stats.noise),
        passed: tolerance.passes(
          mismatches: stats.mismatches, signal: stats.signal, noise: stats.noise, elements: stats.elements))
    }
  }

  func outputReports() -> [ParityReport.OutputParity] {
    statistics.keys.sorted().map { key in
      let stats = statistics[key]!
      let snr = stats.noise == 0 ? nil : 10 * log10(stats.signal / stats.noise)
      let sensitivity =
        key.against == .sourceModel
        ? nil
        : roundoffStatistics[key.output].map { probe in
          VerificationTolerance.RoundoffSensitivity(
            share: probe.elements == 0 ? 0 : Double(probe.mismatches) / Double(probe.elements),
            relativeRMS: (probe.noise / max(probe.signal, Double(probe.elements))).squareRoot())
        }
      return ParityReport.OutputParity(
        name: converted.graph[converted.graph.outputs[key.output]].name, inputs: key.inputs, comparedWith: key.against,
        elements: stats.elements, maxAbsoluteError: stats.maxAbsolute,
        maxRelativeError: stats.maxRelative,
        mismatchedShare: stats.elements == 0 ? 0 : Double(stats.mismatches) / Double(stats.elements),
        snrDecibels: snr,
        passed: tolerance.passes(
          mismatches: stats.mismatches, signal: stats.signal, noise: stats.noise, elements: stats.elements,
          againstFramework: key.against != .sourceModel, sensitivity: sensitivity),
        roundoffSensitivity: sensitivity)
    }
  }

  func classifierReport(expectedLabels: [String]?, k: Int) -> ParityReport.ClassifierParity? {
    let labels = converted.classLabels
    if labels.isEmpty, let expectedLabels {
      // Labels were expected, and the file has none: it is not the classifier it should be.
      return .init(
        labels: [], expectedLabels: expectedLabels, labelsMatch: false, samples: 0, top1Agreement: 0, k: k,
        topKAgreement: 0, passed: false)
    }
    guard !labels.isEmpty, !classifications.isEmpty else { return nil }
    let reference = expectedLabels ?? labels
    var top1 = 0
    var topK = 0
    for (expected, actual) in classifications {
      let ranked = expected.indices.sorted { expected[$0] > expected[$1] }
      let predicted = actual.indices.max { actual[$0] < actual[$1] }!
      let convertedLabel = labels.indices.contains(predicted) ? labels[predicted] : "?"
      let expectedTop = ranked.prefix(k).map { reference.indices.contains($0) ? reference[$0] : "?" }
      // Another class on top counts only when the expected probabilities tell the two apart by more
      // than the tolerance (a near tie may go either way within it).
      let nearTie =
        predicted != ranked[0] && expected.indices.contains(predicted)
        && tolerance.allows(actual: expected[predicted], expected: expected[ranked[0]], scale: 1)
      if expectedTop.first == convertedLabel || nearTie { top1 += 1 }
      // A near tie with the top is within the top K as well.
      if expectedTop.contains(convertedLabel) || nearTie { topK += 1 }
    }
    let labelsMatch = expectedLabels.map { $0 == labels }
    let n = Double(classifications.count)
    return .init(
      labels: labels, expectedLabels: expectedLabels, labelsMatch: labelsMatch, samples: classifications.count,
      top1Agreement: Double(top1) / n, k: k, topKAgreement: Double(topK) / n,
      passed: top1 == classifications.count && labelsMatch != false)
  }
}

extension Duration {
  var seconds: Double { Double(components.seconds) + Double(components.attoseconds) * 1e-18 }
}
