import Foundation
import ModelIR
import TFLiteFormat

extension TFLiteFrontend {
  public func inspect(at url: URL, options: SourceOptions) throws -> ModelInspection {
    try Self.inspect(TFLiteReader.read(contentsOf: url))
  }

  /// A TFLite model as `inspect` shows it: schema version, operators (with what is not supported, custom
  /// operators by their code), inputs and outputs with their types, shapes and quantization, signatures,
  /// metadata entries, weights by storage type, and every operator with its output shape.
  static func inspect(_ model: TFLiteModel) throws -> ModelInspection {
    let subgraph = model.subgraph
    let tensors = subgraph.tensors
    var unavailable: String?
    var shapes: [String: [Int]] = [:]
    do {
      shapes = try TFLiteGraphImporter.importGraph(model).tensorShapes
    } catch {
      unavailable = String(describing: error)
    }
    let layers = subgraph.operators.map { op -> ModelInspection.Layer in
      let output = op.outputs.first.map { tensors[$0].name } ?? ""
      let parameters = op.inputs.filter { $0 >= 0 && model.isConstant(tensors[$0]) }.reduce(0) {
        $0 + tensors[$1].shape.reduce(1, *)
      }
      return .init(
        name: output, type: model.operatorCodes[op.opcodeIndex].name, outputShape: shapes[output],
        parameterCount: parameters)
    }
    let (inputNames, outputNames) = featureNames(model)
    func describe(_ tensor: TFLiteTensor) -> String {
      guard let q = tensor.quantization else { return tensor.type.name }
      return q.isPerChannel
        ? "\(tensor.type.name) (\(q.scales.count) scales along axis \(q.axis))"
        : "\(tensor.type.name) (scale \(q.scales[0]), zero point \(q.zeroPoints[0]))"
    }
    func feature(_ index: Int, _ name: String) -> ConversionSummary.Feature {
      let tensor = tensors[index]
      return .init(name: name, type: .init(kind: "multiArray", shape: tensor.shape, dataType: describe(tensor)))
    }
    var weights: [String: (count: Int, bytes: Int)] = [:]
    var parameterCount = 0
    for tensor in tensors where model.isConstant(tensor) {
      let count = tensor.shape.reduce(1, *)
      parameterCount += count
      let type =
        tensor.quantization != nil && tensor.type != .float32 ? tensor.type.name + " (quantized)" : tensor.type.name
      weights[type, default: (0, 0)].count += count
      weights[type, default: (0, 0)].bytes += model.bytes(of: tensor).count
    }
    var counts: [String: Int] = [:]
    var supported: [String: Bool] = [:]
    for op in subgraph.operators {
      let code = model.operatorCodes[op.opcodeIndex]
      counts[code.name, default: 0] += 1
      supported[code.name] = TFLiteOperatorRegistry.entry(for: code) != nil
    }
    let details = ModelInspection.GraphDetails(
      formatVersion: model.version, operatorSets: [],
      operators: counts.sorted { $0.key < $1.key }.map {
        .init(opType: $0.key, count: $0.value, supported: supported[$0.key] ?? false)
      },
      declaredInputs: zip(subgraph.inputs, inputNames).map { index, name in
        .init(
          name: name,
          dimensions: (tensors[index].shapeSignature ?? tensors[index].shape).map { $0 < 0 ? "?" : String($0) })
      },
      declaredOutputs: zip(subgraph.outputs, outputNames).map { index, name in
        .init(
          name: name,
          dimensions: (tensors[index].shapeSignature ?? tensors[index].shape).map { $0 < 0 ? "?" : String($0) })
      },
      supportedOperators: TFLiteOperatorRegistry.supported.map { .init(opType: $0.name, since: []) })
    var fields: [(name: String, values: [String])] = []
    let signatures = model.signatures.map { signature in
      "\(signature.key) (subgraph \(signature.subgraph)): \(signature.inputs.map(\.name).joined(separator: ", ")) -> \(signature.outputs.map(\.name).joined(separator: ", "))"
    }
    if !signatures.isEmpty { fields.append(("Signatures", signatures)) }
    if model.subgraphCount > 1 { fields.append(("Subgraphs", ["\(model.subgraphCount) (the first is converted)"])) }
    // Resource variables kept between invocations: each an input and an output of the converted model.
    let variables = subgraph.operators.compactMap { op -> String? in
      guard model.operatorCodes[op.opcodeIndex].builtin == TFLiteBuiltin.varHandle, let out = op.outputs.first else {
        return nil
      }
      return try? TFLiteContext.variableName(op.options, tensor: tensors[out])
    }
    if !variables.isEmpty {
      fields.append(
        (
          "Variables",
          [
            "\(variables.count) kept between invocations: \(variables.joined(separator: ", ")) (each read before it is assigned converts to an input <name>_in and an output <name>_out)"
          ]
        ))
    }
    let presentation = ModelInspection.Presentation(
      format: "TensorFlow Lite, schema version \(model.version)", fields: fields, layerNoun: "operator",
      declaresLabels: false)
    return ModelInspection(
      path: model.path, format: .init("tflite"), kind: .init("tflite"), isRunnable: true, presentation: presentation,
      producer: nil, specificationVersion: nil, opset: nil, oldestReleases: [],
      inputs: zip(subgraph.inputs, inputNames).map(feature), outputs: zip(subgraph.outputs, outputNames).map(feature),
      imageInputs: [], labels: (try? TFLiteMetadata.read(model))??.outputs.compactMap(\.labels).first ?? [],
      metadata: .init(
        name: subgraph.name, shortDescription: model.description,
        userDefined: model.metadata.map { .init(key: $0.name, value: "\(model.buffers[$0.buffer].range.count) bytes") }),
      layers: layers, shapesUnavailable: unavailable, parameterCount: parameterCount,
      weights: weights.sorted { $0.key < $1.key }.map {
        .init(dataType: $0.key, count: $0.value.count, bytes: $0.value.bytes)
      },
      graphDetails: details)
  }
}
