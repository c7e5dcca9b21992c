import CoreMLFormat
import Foundation
import ModelFormats
import ModelIR
import ONNXFormat
import ReferenceRuntime

/// ONNX models (`.onnx`, external data beside them), read through `ONNXFormat` and imported operator by
/// operator (`ONNXOperatorRegistry`); the graph's edges are then brought to the IR's conventions as a
/// Core ML source's are (`SourceLayout`): an `[N, C, H, W]` input (N = 1) is an `[H, W, C]` IR tensor
/// followed by the transpose back, and the passes cancel it against the transposes around the first
/// convolution, so that no transpose is left around the convolutions of a channels-first network.
/// Multiarray inputs and outputs keep the shapes the model declares (`[1, 3, 224, 224]`).
public struct ONNXFrontend: ModelFrontend {
  public let name = "onnx"
  public let displayName = "ONNX"
  public let fileExtensions = ["onnx"]
  public let kinds: Set<ModelFileKind> = [.onnx]
  public let summary = """
    An ONNX model (.onnx, with any external data files beside it) converts with its NCHW layout kept at
    the interface; an image mean and standard deviation give torchvision's (pixel / 255 - mean) / std.
    """

  public init() {}

  public func importSource(at url: URL, options: SourceOptions) throws -> ImportedSource {
    if options.architecture != nil {
      throw ConversionError.notApplicable(
        path: url.path, option: "a separate architecture file", format: "an ONNX model, which holds its own graph")
    }
    let model = try ONNXModelReader.read(contentsOf: url)
    var source = try Self.source(model, path: url.path, options: options)
    source.additionalPaths += model.externalDataFiles
    return source
  }

  public func inspect(at url: URL, options: SourceOptions) throws -> ModelInspection {
    try Self.inspect(ONNXModelReader.read(contentsOf: url), path: url.path, options: options)
  }

  /// Operators that say nothing of a layout, and those that compute channels first: facts on their
  /// registry entries (`ONNXOperatorRegistry.layout(of:)`).
  static func isLayoutNeutral(_ opType: String) -> Bool { ONNXOperatorRegistry.layout(of: opType) == .neutral }
  static func isChannelsFirst(_ opType: String) -> Bool { ONNXOperatorRegistry.layout(of: opType) == .channelsFirst }

  /// The `[1, H, W, C]` inputs and outputs of a TensorFlow export (tf2onnx, keras2onnx), which keeps
  /// TensorFlow's channels-last interface and transposes to channels first before its convolutions.
  ///
  /// An input is channels last when every path from it through layout-neutral operators ends in a
  /// Transpose to channels first (perm [0, 3, 1, 2]); in a model a TensorFlow converter produced, also when
  /// no path reaches a channels-first operator before a Transpose (an all-elementwise model concatenating
  /// channels). An output is channels last when it is the inverse Transpose's result after layout-neutral
  /// operators, or, from a TensorFlow converter, when no channels-first operator makes it directly.
  static func channelsLastEdges(_ model: ONNXModel) -> Set<String> {
    let graph = model.graph
    let tensorFlow = ["tf2onnx", "keras2onnx"].contains(model.producerName)
    var readers: [String: [ONNXNode]] = [:]
    var producers: [String: ONNXNode] = [:]
    for node in graph.nodes {
      for input in Set(node.inputs) where !input.isEmpty { readers[input, default: []].append(node) }
      for output in node.outputs { producers[output] = node }
    }
    func isTranspose(_ node: ONNXNode, _ perm: [Int]) -> Bool {
      node.opType == "Transpose" && node.attribute("perm")?.ints == perm
    }
    let initializers = Dictionary(graph.initializers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    // A one-channel image [N, H, W, 1] reaches channels first by a Reshape to [N, 1, H, W] (the same element
    // order: tf2onnx's optimizer writes its Transpose so); the sizes must be the declared ones.
    func isUnitChannelTranspose(_ node: ONNXNode, of input: ONNXValueInfo) -> Bool {
      guard node.opType == "Reshape", node.inputs.first == input.name, node.inputs.count == 2, let shape = input.shape,
        shape.count == 4,
        shape[3] == .value(1), case .value(let height) = shape[1], case .value(let width) = shape[2],
        height > 1 || width > 1,
        let target = try? initializers[node.inputs[1]]?.intValues(), target.count == 4
      else { return false }
      let batchFits: Bool
      if case .value(let batch) = shape[0] {
        batchFits = [batch, -1, 0].contains(target[0])
      } else {
        batchFits = [1, -1, 0].contains(target[0])
      }
      return batchFits && Array(target[1...]) == [1, height, width]
    }
    var result = Set<String>()
    for input in graph.inputs {
      var frontier = [input.name]
      var seen = Set<String>()
      var transposes = 0
      var other = false
      var channelsFirst = false
      while let name = frontier.popLast(), !channelsFirst, seen.count < 256 {
        guard seen.insert(name).inserted else { continue }
        for node in readers[name] ?? [] {
          if isTranspose(node, [0, 3, 1, 2]) || isUnitChannelTranspose(node, of: input) {
            transposes += 1
          } else if isChannelsFirst(node.opType) {
            channelsFirst = true
          } else {
            if !(isLayoutNeutral(node.opType) && node.inputs.first == name) { other = true }
            if node.opType != "Transpose" { frontier += node.outputs }
          }
        }
      }
      if !channelsFirst && ((transposes > 0 && !other) || tensorFlow) { result.insert(input.name) }
    }
    for output in graph.outputs {
      var node = producers[output.name]
      for _ in 0..<256 {
        guard let current = node, isLayoutNeutral(current.opType) || (tensorFlow && current.opType == "Concat"),
          let first = current.inputs.first
        else { break }
        node = producers[first]
      }
      if let node, isTranspose(node, [0, 2, 3, 1]) { result.insert(output.name) }
      if tensorFlow && !(node.map { isChannelsFirst($0.opType) || $0.opType == "Transpose" } ?? false) {
        result.insert(output.name)
      }
    }
    return result
  }

  /// Computes an ONNX node of constants at import time with the reference runtime's direct loops (the
  /// oracle of every operation's semantics), as `ConstantFoldingPass` does after the passes.
  static func constantEvaluator(_ graph: Graph) -> [[Float]]? {
    guard graph.inputs.isEmpty, Interpreter.unsupportedOperations(in: graph).isEmpty else { return nil }
    return Interpreter(graph: graph, kernels: .direct).run([]).map(\.values)
  }

  /// `model` as a source; `constants` binds graph inputs to known values (as initializers would be),
  /// for frozen inputs and for ONNX's backend tests, whose weights are inputs.
  public static func source(
    _ model: ONNXModel, path: String, options: SourceOptions, constants: [String: ONNXConstant] = [:]
  ) throws -> ImportedSource {
    let imported = try ONNXGraphImporter.importGraph(
      model, path: path, inputShapes: try inputShapes(model, options: options), constants: constants,
      evaluator: constantEvaluator)
    let inputs = zip(imported.inputNames, imported.graph.inputs).map {
      SourceLayout.SourceInput(name: $0, value: $1, image: false)
    }
    var (graph, forms) = try SourceLayout.canonicalGraph(
      imported.graph, inputs: inputs, rank5: false, channelsLast: channelsLastEdges(model)
    ) {
      ONNXImportError.invalidGraph(path: path, detail: $0)
    }
    // New names, in two steps so that swapping two does not clash half way.
    let inputNames = graph.inputs.map { graph[$0].name }
    let outputNames = graph.outputs.map { graph[$0].name }
    let newInputs = options.inputNames ?? inputNames
    let newOutputs = options.outputNames ?? outputNames
    guard newInputs.count == inputNames.count else {
      throw ConversionError.nameCountMismatch(kind: "input", given: newInputs.count, expected: inputNames.count)
    }
    guard newOutputs.count == outputNames.count else {
      throw ConversionError.nameCountMismatch(kind: "output", given: newOutputs.count, expected: outputNames.count)
    }
    let all = zip(graph.inputs, newInputs).map { ($0, $1) } + zip(graph.outputs, newOutputs).map { ($0, $1) }
    for (id, _) in all { try graph.rename(id, to: "\(graph[id].name)__renaming\(id)") }
    for (id, name) in all { try graph.rename(id, to: name) }
    let renamed = Dictionary(
      zip(inputNames + outputNames, newInputs + newOutputs).map { ($0, $1) }, uniquingKeysWith: { first, _ in first })

    var source = ImportedSource(format: "onnx", modelKind: "onnx", path: path, graph: graph)
    source.inputSourceNames = inputNames
    // Reference outputs come from onnxruntime, which takes the inputs as the model declares them.
    source.referenceInputsAsDeclared = true
    // The arrays keep the shapes the model declares (batch axis included).
    for (name, form) in forms {
      guard let newName = renamed[name],
        let id = (graph.inputs + graph.outputs).first(where: { graph[$0].name == newName })
      else { continue }
      let shape = imported.graph[
        (imported.graph.inputs + imported.graph.outputs).first { imported.graph[$0].name == name }!
      ].type.shape
      var channelsFirst = false
      if case .channelsFirst = form { channelsFirst = true }
      let declared = DeclaredArray(shape: shape, channelsFirst: channelsFirst)
      if declared.fits(graph[id].type.shape) { source.declaredArrays[newName] = declared }
    }
    func text(_ value: String) -> String? { value.isEmpty ? nil : value }
    source.metadata = ModelMetadata(
      shortDescription: text(model.docString), version: model.modelVersion > 0 ? String(model.modelVersion) : nil,
      userDefined: model.metadataProps)
    source.producerVersion = text(model.producerVersion)
    source.notes = imported.notes
    source.provenance = [
      "modelconv.source": "onnx",
      "modelconv.source_onnx_producer": [model.producerName, model.producerVersion].filter { !$0.isEmpty }.joined(
        separator: " "),
      "modelconv.source_onnx_opset": String(model.opsetVersion(domain: "") ?? 1),
    ]
    return source
  }

  /// `--input-shape` sizes by ONNX input name (the new names given map to the model's in order).
  static func inputShapes(_ model: ONNXModel, options: SourceOptions) throws -> [String: [Int]] {
    let initializers = Set(model.graph.initializers.map(\.name))
    let names = model.graph.inputs.map(\.name).filter { !initializers.contains($0) }
    var shapes: [String: [Int]] = [:]
    var known = Set(names)
    for (index, name) in names.enumerated() {
      let renamed = options.inputNames.flatMap { index < $0.count ? $0[index] : nil }
      if let renamed { known.insert(renamed) }
      if let shape = options.inputShapes[name] ?? renamed.flatMap({ options.inputShapes[$0] }) { shapes[name] = shape }
    }
    if let unknown = options.inputShapes.keys.sorted().first(where: { !known.contains($0) }) {
      throw ConversionError.unknownInput(name: unknown, known: names)
    }
    return shapes
  }
}
