import Foundation
import ModelIR
import ONNXFormat

extension ONNXFrontend {
  /// An ONNX model as `inspect` shows it: producer, IR version and operator sets, inputs and outputs
  /// with their declared (possibly symbolic) dimensions, the operator histogram with what is not
  /// supported, every node with its output shape (when the graph imports) and the parameters it reads.
  static func inspect(_ model: ONNXModel, path: String, options: SourceOptions) throws -> ModelInspection {
    let graph = model.graph
    let opset = model.opsetVersion(domain: "") ?? 1
    var imported: ONNXImportedGraph?
    var unavailable: String?
    do {
      imported = try ONNXGraphImporter.importGraph(
        model, path: path, inputShapes: try inputShapes(model, options: options), evaluator: constantEvaluator)
    } catch {
      unavailable = String(describing: error)
    }
    let initializers = Dictionary(graph.initializers.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    let layers = graph.nodes.map { node -> ModelInspection.Layer in
      let output = node.outputs.first ?? ""
      let parameters = Set(node.inputs).compactMap { initializers[$0]?.elementCount }.reduce(0, +)
      return .init(
        name: node.name.isEmpty ? output : node.name, type: node.opType, outputShape: imported?.valueShapes[output],
        parameterCount: parameters)
    }
    func dimensions(_ info: ONNXValueInfo) -> [String] { info.shape?.map(\.description) ?? ["?"] }
    func feature(_ info: ONNXValueInfo) -> ConversionSummary.Feature {
      let shape = info.shape?.map { dim -> Int in if case .value(let v) = dim { return v } else { return 1 } } ?? []
      return .init(
        name: info.name,
        type: .init(
          kind: "multiArray", shape: shape, dataType: info.elementType.map { $0.name.lowercased() } ?? "unknown"))
    }
    let inputs = graph.inputs.filter { initializers[$0.name] == nil }
    var weights: [String: (count: Int, bytes: Int)] = [:]
    for tensor in graph.initializers {
      let type = tensor.dataType.name.lowercased()
      weights[type, default: (0, 0)].count += tensor.elementCount
      weights[type, default: (0, 0)].bytes += tensor.elementCount * (tensor.dataType.byteSize ?? 0)
    }
    let counts = Dictionary(graph.nodes.map { ($0.opType, 1) }, uniquingKeysWith: +)
    let domains = Dictionary(graph.nodes.map { ($0.opType, $0.domain) }, uniquingKeysWith: { first, _ in first })
    let details = ModelInspection.GraphDetails(
      formatVersion: model.irVersion,
      operatorSets: model.opsetImports.sorted { $0.key < $1.key }.map {
        .init(domain: $0.key.isEmpty ? "ai.onnx" : $0.key, version: $0.value)
      },
      operators: counts.sorted { $0.key < $1.key }.map { op, count in
        .init(
          opType: op, count: count,
          supported: ONNXOperatorRegistry.entry(domain: domains[op] ?? "", opType: op, opset: opset) != nil)
      },
      declaredInputs: inputs.map { .init(name: $0.name, dimensions: dimensions($0)) },
      declaredOutputs: graph.outputs.map { .init(name: $0.name, dimensions: dimensions($0)) },
      supportedOperators: ONNXOperatorRegistry.supported.map { .init(opType: $0.opType, since: $0.since) })
    let parameterCount = graph.initializers.reduce(0) { $0 + $1.elementCount }
    let producer = [model.producerName, model.producerVersion].filter { !$0.isEmpty }.joined(separator: " ")
    let presentation = ModelInspection.Presentation(
      format: "ONNX, IR version \(model.irVersion)" + (producer.isEmpty ? "" : ", made by \(producer)"),
      layerNoun: "node")
    return ModelInspection(
      path: path, format: .init("onnx"), kind: .init("onnx"), isRunnable: true, presentation: presentation,
      producer: model.producerName.isEmpty
        ? nil : .init(name: model.producerName, version: model.producerVersion.isEmpty ? nil : model.producerVersion),
      specificationVersion: nil, opset: "ai.onnx \(opset)",
      oldestReleases: [], inputs: inputs.map(feature), outputs: graph.outputs.map(feature), imageInputs: [], labels: [],
      metadata: .init(
        name: graph.name.isEmpty ? nil : graph.name, shortDescription: model.docString.isEmpty ? nil : model.docString,
        userDefined: model.metadataProps.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: $0.value) }),
      layers: layers, shapesUnavailable: unavailable, parameterCount: parameterCount,
      weights: weights.sorted { $0.key < $1.key }.map {
        .init(dataType: $0.key, count: $0.value.count, bytes: $0.value.bytes)
      },
      graphDetails: details)
  }
}
