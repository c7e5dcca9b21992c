import CoreMLCommon
import Foundation
import ModelIR

/// Builds the IR graph of a decoded Core ML neural network.
///
/// Blobs keep Core ML's layout: `[Seq, C, H, W]` under the classic rank-5 mapping (the batch axis
/// dropped), the declared rank (batch included) under exact mapping. Convolution, pooling and the other spatial layers run in the IR's
/// channels-last form, so each is wrapped in transposes; a transpose back to channels-last reuses the
/// value it came from, so chains of spatial layers stay channels-last inside.
public struct CoreMLGraphImporter {
  let spec: CoreMLModelSpec
  let path: String
  /// Sequence lengths of classic-mapping inputs, by input name (1 when absent).
  let sequenceLengths: [String: Int]
  var builder = GraphBuilder()
  /// Blob name to IR value.
  var blobs: [String: ValueID] = [:]
  /// A channels-first value to the channels-last value it was transposed from.
  var channelsLastSource: [ValueID: ValueID] = [:]
  /// Output blobs a layer declares but the IR does not compute (an LSTM's final cell state), by blob
  /// name, to the layer's name and kind: reading one is an error naming the layer.
  var uncomputedBlobs: [String: (layer: String, kind: String)] = [:]
  /// Optional recurrent state inputs that the recurrent layers read as zeros (`<layer>_h_in`).
  var zeroStateInputs: Set<String> = []
  /// The layer being imported, for names and errors.
  var layerName = ""
  var layerKind = ""

  /// Reads the model at `url` (an `.mlmodel`, or an `.mlpackage` holding a neural network or an ML Program) into the IR.
  ///
  /// - Parameter sequenceLengths: the number of time steps to give each classic-mapping input that
  ///   carries a sequence (Core ML leaves the sequence length to run time).
  public static func importModel(contentsOf url: URL, sequenceLengths: [String: Int] = [:]) throws -> CoreMLModel {
    try importModel(CoreMLSpecReader.read(contentsOf: url), path: url.path, sequenceLengths: sequenceLengths)
  }

  /// Builds the IR graph of a decoded specification.
  /// An ML Program goes to `MILProgramImporter`.
  public static func importModel(_ spec: CoreMLModelSpec, path: String, sequenceLengths: [String: Int] = [:]) throws
    -> CoreMLModel
  {
    // Feature names are how an app reads and writes a model's values: each may be given once.
    for (kind, names) in [("input", spec.inputs.map(\.name)), ("output", spec.outputs.map(\.name))] {
      var seen = Set<String>()
      if let twice = names.first(where: { !seen.insert($0).inserted }) {
        throw CoreMLReaderError.invalidNetwork(path: path, detail: "\(kind) '\(twice)' is declared twice")
      }
    }
    // An optional input is the IR's (zeros when not given), in both kinds of model: a default other than zero is not.
    if let feature = spec.inputs.first(where: { $0.isOptional && ($0.defaultValue ?? 0) != 0 }) {
      throw CoreMLReaderError.invalidNetwork(
        path: path,
        detail:
          "optional input '\(feature.name)' defaults to \(feature.defaultValue ?? 0); only a default of zero is supported"
      )
    }
    if spec.modelType == "mlProgram" { return try MILProgramImporter.importModel(spec, path: path) }
    var importer = CoreMLGraphImporter(spec: spec, path: path, sequenceLengths: sequenceLengths)
    return try importer.run()
  }

  init(spec: CoreMLModelSpec, path: String, sequenceLengths: [String: Int] = [:]) {
    self.spec = spec
    self.path = path
    self.sequenceLengths = sequenceLengths
  }

  // MARK: Inputs and outputs

  mutating func run() throws -> CoreMLModel {
    // A layer may be named once too (Core ML refuses a model naming a layer twice); features are checked in `importModel`.
    var seenLayers = Set<String>()
    if let twice = spec.layers.map(\.name).first(where: { !seenLayers.insert($0).inserted }) {
      throw CoreMLReaderError.invalidNetwork(path: path, detail: "layer '\(twice)' is declared twice")
    }
    var inputs: [CoreMLInput] = []
    for feature in spec.inputs { inputs.append(try addInput(feature)) }
    for layer in spec.layers {
      layerName = layer.name
      layerKind = layer.kind
      builder.origin = LayerOrigin(name: layer.name, type: layer.kind)
      do {
        let outputs = try importLayer(layer)
        // Recurrent layers also output their final states; those the IR does not compute stay unread.
        guard outputs.count <= layer.outputs.count else { throw unsupported("\(layer.outputs.count) outputs") }
        for (name, value) in zip(layer.outputs, outputs) { blobs[name] = value }
        for name in layer.outputs.dropFirst(outputs.count) { uncomputedBlobs[name] = (layer.name, layer.kind) }
      } catch let error as GraphError {
        throw CoreMLReaderError.invalidNetwork(path: path, detail: "layer '\(layer.name)' (\(layer.kind)): \(error)")
      }
    }

    builder.origin = nil
    // A state input read as zeros by a recurrent layer must not feed anything else.
    for layer in spec.layers where !Self.recurrentKinds.contains(layer.kind) {
      if let name = layer.inputs.first(where: zeroStateInputs.contains) {
        throw CoreMLReaderError.unsupportedLayer(
          path: path, layer: layer.name, kind: layer.kind,
          detail: "reads '\(name)', which a recurrent layer takes as its initial state")
      }
    }
    let labels = spec.stringClassLabels.isEmpty ? spec.int64ClassLabels.map(String.init) : spec.stringClassLabels
    var outputs: [ValueID] = []
    var probabilities: String?
    for feature in spec.outputs {
      if spec.modelType == "neuralNetworkClassifier" && feature.name == spec.predictedFeatureName { continue }
      var blob = feature.name
      if spec.modelType == "neuralNetworkClassifier", case .dictionary = feature.kind {
        blob =
          spec.labelProbabilityLayerName.isEmpty
          ? (spec.layers.last?.outputs.first ?? feature.name) : spec.labelProbabilityLayerName
        probabilities = feature.name
      }
      guard var value = blobs[blob] else {
        if let producer = uncomputedBlobs[blob] { throw uncomputed(blob, producer) }
        throw CoreMLReaderError.invalidNetwork(
          path: path, detail: "output '\(feature.name)' is not produced by any layer (no blob '\(blob)')")
      }
      if outputs.contains(value) || spec.inputs.contains(where: { $0.name == feature.name }) {
        value = try builder.add(
          .reshape(targetShape: builder.type(of: value).shape), name: feature.name, inputs: [value])
      }
      outputs.append(value)
    }
    guard !outputs.isEmpty else {
      throw CoreMLReaderError.invalidNetwork(
        path: path,
        detail:
          "the model's description declares no output the network computes\(spec.outputs.isEmpty ? " (it lists no outputs)" : " (only the predicted label)")"
      )
    }
    var graph = builder.build(outputs: outputs).pruned()
    for (feature, id) in zip(
      spec.outputs.filter({ !(spec.modelType == "neuralNetworkClassifier" && $0.name == spec.predictedFeatureName) }),
      outputs)
    where graph[id].name != feature.name {
      // The importer names its own values `<layer>_output`; a feature may carry such a name (a layer
      // `bn` writing the output blob `bn_output`): the internal value steps aside.
      try graph.claimName(feature.name, for: id)
    }
    return CoreMLModel(
      spec: spec, graph: graph, inputs: inputs, classLabels: labels, probabilitiesOutput: probabilities, blobs: blobs,
      channelsLastValues: channelsLastSource, zeroStateInputs: zeroStateInputs)
  }

  mutating func addInput(_ feature: CoreMLModelSpec.Feature) throws -> CoreMLInput {
    switch feature.kind {
    case .multiArray(let declared, _):
      var shape = declared
      if !spec.exactArrayMapping {
        // Rank-5 mapping: (C) becomes [Seq, C, 1, 1], Seq being the sequence length; (C, H, W) [1, C, H, W].
        switch declared.count {
        case 1: shape = [sequenceLengths[feature.name] ?? 1, declared[0], 1, 1]
        case 3: shape = [sequenceLengths[feature.name] ?? 1] + declared
        default:
          throw CoreMLReaderError.invalidNetwork(
            path: path, detail: "input '\(feature.name)' has shape \(declared); rank-5 mapping takes rank 1 or 3")
        }
      }
      guard !shape.isEmpty, shape.allSatisfy({ $0 > 0 }) else {
        throw CoreMLReaderError.invalidNetwork(
          path: path, detail: "input '\(feature.name)' has no fixed shape (\(declared))")
      }
      _ = try elementCount(shape, "input '\(feature.name)' shape")
      blobs[feature.name] = try builder.addInput(
        name: feature.name, type: TensorType(shape), optional: feature.isOptional)
      return CoreMLInput(name: feature.name, shape: shape)

    case .image(let width, let height, let colorSpace):
      guard let space = ImageColorSpace(rawValue: colorSpace), width > 0, height > 0 else {
        throw CoreMLReaderError.invalidNetwork(
          path: path, detail: "image input '\(feature.name)' has color space \(colorSpace), \(width)x\(height)")
      }
      let channels = space.channels
      let leading: [Int] =
        spec.exactArrayMapping || spec.rank4ImageMapping ? (spec.rank4ImageMapping ? [1] : [1, 1]) : [1]
      let shape = leading + [channels, height, width]
      _ = try elementCount(shape, "image input '\(feature.name)' size")
      let pixels = try builder.addInput(name: feature.name, type: TensorType(shape))
      let scaler = spec.preprocessing.first { $0.featureName == feature.name || $0.featureName.isEmpty }
      let scale = scaler?.channelScale ?? 1
      let biases: [Float]
      switch space {
      case .grayscale: biases = [scaler?.grayBias ?? 0]
      case .bgr: biases = [scaler?.blueBias ?? 0, scaler?.greenBias ?? 0, scaler?.redBias ?? 0]
      case .rgb: biases = [scaler?.redBias ?? 0, scaler?.greenBias ?? 0, scaler?.blueBias ?? 0]
      }
      var value = pixels
      if scale != 1 || biases.contains(where: { $0 != 0 }) {
        builder.origin = LayerOrigin(name: feature.name, type: "imageScaler")
        defer { builder.origin = nil }
        value = try builder.add(
          .activation(.linear(scale: scale, offset: 0)), name: feature.name + "__scale", inputs: [value])
        let biasShape = leading.map { _ in 1 } + [channels, 1, 1]
        let bias = try builder.add(
          .constant(Constant(shape: biasShape, values: biases)), name: feature.name + "__bias", inputs: [])
        value = try builder.add(.elementwise(.add), name: feature.name + "__preprocessed", inputs: [value, bias])
      }
      blobs[feature.name] = value
      return CoreMLInput(name: feature.name, shape: shape, colorSpace: space, scale: scale, networkBiases: biases)

    default:
      throw CoreMLReaderError.invalidNetwork(
        path: path, detail: "input '\(feature.name)' is not a multiarray or an image")
    }
  }

  // MARK: Helpers for layer imports

  func unsupported(_ detail: String) -> CoreMLReaderError {
    .unsupportedLayer(path: path, layer: layerName, kind: layerKind, detail: detail)
  }

  static let recurrentKinds: Set<String> = ["simpleRecurrent", "gru", "uniDirectionalLSTM", "biDirectionalLSTM"]

  func uncomputed(_ blob: String, _ producer: (layer: String, kind: String)) -> CoreMLReaderError {
    .unsupportedLayer(
      path: path, layer: producer.layer, kind: producer.kind,
      detail:
        "its state output '\(blob)' (\(producer.kind == "biDirectionalLSTM" ? "a direction's final states" : "the final cell state")) is not computed by the IR's recurrent layers, which output the sequence or the last hidden state only"
    )
  }

  func shape(_ value: ValueID) -> [Int] { builder.type(of: value).shape }

  mutating func add(_ operation: ModelIR.Operation, _ inputs: [ValueID], suffix: String = "") throws -> ValueID {
    try builder.add(operation, name: layerName + suffix, inputs: inputs)
  }

  mutating func reshape(_ value: ValueID, to target: [Int]) throws -> ValueID {
    if shape(value) == target { return value }
    _ = try elementCount(target, "target shape")
    return try add(.reshape(targetShape: target), [value], suffix: "__reshape")
  }

  /// A Core ML `[..., C, H, W]` blob as an IR `[H, W, C]` value (`[S, H, W, C]` for a sequence of images).
  mutating func channelsLast(_ value: ValueID) throws -> (value: ValueID, leading: [Int]) {
    let s = shape(value)
    guard s.count >= 3 else { throw unsupported("needs a [C, H, W] input, got \(s)") }
    let leading = Array(s.dropLast(3))
    if let source = channelsLastSource[value] { return (source, leading) }
    if s.count == 4 && s[0] > 1 {
      // Images along the sequence axis stay there; the IR's spatial operations take leading axes.
      return (try add(.permute(order: [0, 2, 3, 1]), [value], suffix: "__to_hwc"), [])
    }
    guard s.dropLast(3).allSatisfy({ $0 == 1 }) else {
      throw unsupported("needs a [C, H, W] input with batch 1, got \(s)")
    }
    let chw = try reshape(value, to: Array(s.suffix(3)))
    return (try add(.permute(order: [1, 2, 0]), [chw], suffix: "__to_hwc"), leading)
  }

  /// The inverse of `channelsLast`: an IR `[H, W, C]` value back as a Core ML `leading + [C, H, W]` blob.
  mutating func channelsFirst(_ value: ValueID, leading: [Int]) throws -> ValueID {
    if shape(value).count == 4 {
      let result = try add(.permute(order: [0, 3, 1, 2]), [value], suffix: "__to_chw")
      channelsLastSource[result] = value
      return result
    }
    let chw = try add(.permute(order: [2, 0, 1]), [value], suffix: "__to_chw")
    let result = try reshape(chw, to: leading + shape(chw))
    channelsLastSource[result] = value
    return result
  }

  /// Runs a channels-last IR operation on a Core ML blob.
  mutating func spatial(_ operation: ModelIR.Operation, _ input: ValueID) throws -> ValueID {
    let (hwc, leading) = try channelsLast(input)
    return try channelsFirst(try add(operation, [hwc]), leading: leading)
  }

  /// Adds a shape-preserving elementwise operation, in channels-last form when every input already has
  /// a channels-last source of the same shape (so chains of convolutions and activations need no transposes).
  mutating func layoutPreserving(_ operation: ModelIR.Operation, _ inputs: [ValueID]) throws -> ValueID {
    let shapes = inputs.map(shape)
    let sources = inputs.compactMap { channelsLastSource[$0] }
    if sources.count == inputs.count, shapes.allSatisfy({ $0 == shapes[0] }), shapes[0].count >= 3 {
      return try channelsFirst(try add(operation, sources), leading: Array(shapes[0].dropLast(3)))
    }
    return try add(operation, inputs)
  }

  /// A possibly negative axis resolved against `rank`.
  func axis(_ value: Int, rank: Int) throws -> Int {
    let resolved = value < 0 ? value + rank : value
    guard resolved >= 0, resolved < rank else { throw unsupported("axis \(value) is outside rank \(rank)") }
    return resolved
  }

  /// The single input blob of the current layer.
  func input(_ layer: CoreMLModelSpec.Layer, _ index: Int = 0) throws -> ValueID {
    guard index < layer.inputs.count else { throw unsupported("expects at least \(index + 1) inputs") }
    guard let value = blobs[layer.inputs[index]] else {
      if let producer = uncomputedBlobs[layer.inputs[index]] { throw uncomputed(layer.inputs[index], producer) }
      throw CoreMLReaderError.invalidNetwork(
        path: path,
        detail: "layer '\(layer.name)' reads blob '\(layer.inputs[index])', which nothing produced before it")
    }
    return value
  }

  /// Sizes read from the file, checked before any arithmetic so corrupt values give errors, not traps.
  func sizes(_ values: [Int], _ name: String, count: Int? = nil, allowZero: Bool = false) throws -> [Int] {
    guard count.map({ values.count == $0 }) ?? true, GraphLimits.areSizes(values, minimum: allowZero ? 0 : 1) else {
      throw CoreMLReaderError.invalidNetwork(
        path: path, detail: "layer '\(layerName)' (\(layerKind)): \(name) \(values) is not valid")
    }
    return values
  }

  /// The number of elements of a shape read from the file; an error when it is not a plausible size.
  func elementCount(_ shape: [Int], _ name: String) throws -> Int {
    var count = 1
    for size in shape {
      let (next, overflow) = count.multipliedReportingOverflow(by: size)
      guard size > 0, size <= GraphLimits.maxSize, !overflow, next <= GraphLimits.maxElementCount else {
        throw CoreMLReaderError.invalidNetwork(
          path: path,
          detail: "\(layerName.isEmpty ? "" : "layer '\(layerName)': ")\(name) \(shape) is not a valid shape")
      }
      count = next
    }
    return count
  }

  /// A weight blob of the current layer with at least `count` values (`field` names it in errors).
  func weights(_ values: [Float]?, _ field: String, count: Int) throws -> [Float] {
    guard let values, values.count >= count else {
      throw CoreMLReaderError.invalidWeights(
        path: path, layer: layerName, detail: "\(field) has \(values?.count ?? 0) values, needs \(count)")
    }
    // Only padding past the needed count (float16 or packed codes) is dropped; most blobs pass as they are.
    return values.count == count ? values : Array(values.prefix(count))
  }
}
