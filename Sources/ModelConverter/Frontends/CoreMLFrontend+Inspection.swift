import CoreMLFormat
import Foundation
import ModelIR

extension CoreMLFrontend {
  static func inspectCoreML(_ url: URL) throws -> ModelInspection {
    let spec: CoreMLModelSpec
    do {
      spec = try CoreMLSpecReader.read(contentsOf: url)
    } catch CoreMLReaderError.unsupportedModelType {
      return try inspectModelType(url)
    }
    var model: CoreMLModel?
    var unavailable: String?
    do {
      model = try CoreMLGraphImporter.importModel(spec, path: url.path)
    } catch {
      unavailable = String(describing: error)
    }
    var isDirectory: ObjCBool = false
    _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory)

    let kind = ModelInspection.ModelKind(
      ["neuralNetworkClassifier", "neuralNetworkRegressor", "mlProgram"].contains(spec.modelType)
        ? spec.modelType : "neuralNetwork")
    let layers: [ModelInspection.Layer]
    let weights: [ModelInspection.WeightStorage]
    let parameters: Int
    if let program = spec.program {
      (layers, weights, parameters) = programLayers(program)
    } else {
      (layers, weights, parameters) = networkLayers(spec, model)
    }
    let labels = spec.stringClassLabels.isEmpty ? spec.int64ClassLabels.map(String.init) : spec.stringClassLabels
    func text(_ value: String) -> String? { value.isEmpty ? nil : value }
    let labelled = !labels.isEmpty
    let kindText =
      [
        "neuralNetworkClassifier": "neural network classifier", "neuralNetworkRegressor": "neural network regressor",
        "mlProgram": labelled ? "ML Program classifier" : "ML Program",
      ][kind.rawValue] ?? "neural network"
    let format = isDirectory.boolValue ? "mlpackage" : "mlmodel"
    return ModelInspection(
      path: url.path, format: .init(format), kind: kind, isRunnable: true,
      presentation: Self.presentation(
        format: format, kind: kindText, specificationVersion: spec.specificationVersion, opset: spec.program?.opset,
        layerNoun: spec.program == nil ? "layer" : "operation"),
      specificationVersion: spec.specificationVersion, opset: spec.program?.opset,
      oldestReleases: DeploymentTarget.oldestReleases(forSpecificationVersion: spec.specificationVersion).map {
        .init(platform: $0.platform, version: $0.version)
      },
      inputs: spec.inputs.map(feature), outputs: spec.outputs.map(feature), imageInputs: imageInputs(spec, model),
      labels: labels,
      metadata: .init(
        name: nil, shortDescription: text(spec.shortDescription), author: text(spec.author),
        license: text(spec.license),
        version: text(spec.version),
        userDefined: spec.userDefined.sorted { $0.key < $1.key }.map { .init(key: $0.key, value: $0.value) }),
      layers: layers, shapesUnavailable: unavailable, parameterCount: parameters, weights: weights)
  }

  /// How `inspect` shows a Core ML file: its container, kind, specification version and opset.
  static func presentation(format: String, kind: String, specificationVersion: Int, opset: String?, layerNoun: String)
    -> ModelInspection.Presentation
  {
    var line =
      "Core ML \(format == "mlpackage" ? "package (.mlpackage)" : "model (.mlmodel)"), \(kind), specification version \(specificationVersion)"
    if let opset { line += ", opset \(opset)" }
    return .init(format: line, layerNoun: layerNoun)
  }

  /// A model description feature as Xcode shows it.
  static func feature(_ feature: CoreMLModelSpec.Feature) -> ConversionSummary.Feature {
    let type: ConversionSummary.FeatureType
    switch feature.kind {
    case .multiArray(let shape, let dataType):
      type = .init(
        kind: "multiArray", shape: shape.isEmpty && !feature.sizeRanges.isEmpty ? nil : shape,
        dataType: InterfaceFeature.arrayDataTypeNames[dataType] ?? "unknown",
        shapeRange: feature.sizeRanges.isEmpty ? nil : feature.sizeRanges.map { [$0.lower, $0.upper ?? -1] })
    case .image(let width, let height, let colorSpace):
      type = .init(kind: "image", width: width, height: height, colorSpace: colorSpace)
    case .dictionary(let keyType): type = .init(kind: "dictionary", keyType: keyType, valueType: "double")
    case .string: type = .init(kind: "string")
    case .int64: type = .init(kind: "int64")
    case .double: type = .init(kind: "double")
    }
    return .init(
      name: feature.name,
      type: described(
        type, enumeratedShapes: feature.enumeratedShapes, imageSizeRanges: feature.imageSizeRanges,
        enumeratedImageSizes: feature.enumeratedImageSizes, isOptional: feature.isOptional))
  }

  /// A feature type with what both readers read beside the kind: the declared flexibility and optionality.
  static func described(
    _ type: ConversionSummary.FeatureType, enumeratedShapes: [[Int]], imageSizeRanges: [CoreMLModelOutline.SizeRange],
    enumeratedImageSizes: [[Int]], isOptional: Bool
  ) -> ConversionSummary.FeatureType {
    var described = type
    if !enumeratedShapes.isEmpty { described.enumeratedShapes = enumeratedShapes }
    if !imageSizeRanges.isEmpty { described.sizeRange = imageSizeRanges.map { [$0.lower, $0.upper ?? -1] } }
    if !enumeratedImageSizes.isEmpty { described.enumeratedSizes = enumeratedImageSizes }
    if isOptional { described.optional = true }
    return described
  }

  /// Each image input's preprocessing: as the importer found it (the scaler of a neural network, the first
  /// `mul`/`add` of a program), else the neural network's scaler as declared.
  static func imageInputs(_ spec: CoreMLModelSpec, _ model: CoreMLModel?) -> [ModelInspection.ImageInput] {
    spec.inputs.compactMap { feature -> ModelInspection.ImageInput? in
      guard case .image(let width, let height, let colorSpace) = feature.kind else { return nil }
      var scale: Float = 1
      var biases: [Float] = colorSpace == "GRAYSCALE" ? [0] : [0, 0, 0]
      if let input = model?.inputs.first(where: { $0.name == feature.name }), let image = input.image,
        let found = input.networkBiases
      {
        scale = image.scale
        biases = found
      } else if let scaler = spec.preprocessing.first(where: {
        $0.featureName == feature.name || $0.featureName.isEmpty
      }) {
        scale = scaler.channelScale
        biases =
          colorSpace == "GRAYSCALE"
          ? [scaler.grayBias]
          : colorSpace == "BGR"
            ? [scaler.blueBias, scaler.greenBias, scaler.redBias] : [scaler.redBias, scaler.greenBias, scaler.blueBias]
      }
      var result = ModelInspection.ImageInput(
        input: feature.name, width: width, height: height, colorSpace: colorSpace, scale: scale)
      switch (colorSpace, biases.count) {
      case ("GRAYSCALE", 1): result.grayBias = biases[0]
      case ("BGR", 3): (result.blueBias, result.greenBias, result.redBias) = (biases[0], biases[1], biases[2])
      case (_, 3): (result.redBias, result.greenBias, result.blueBias) = (biases[0], biases[1], biases[2])
      default: break
      }
      return result
    }
  }

  /// A neural network's layers, with each output blob's shape from the imported graph.
  static func networkLayers(_ spec: CoreMLModelSpec, _ model: CoreMLModel?) -> (
    [ModelInspection.Layer], [ModelInspection.WeightStorage], Int
  ) {
    var storage = WeightTally()
    var total = 0
    let layers = spec.layers.map { layer -> ModelInspection.Layer in
      var count = 0
      for (field, values) in layer.namedWeights.sorted(by: { $0.key < $1.key }) {
        count += values.count
        if layer.quantizationBits > 0 && field == "weights" {
          storage.add("uint\(layer.quantizationBits)", count: values.count, bits: layer.quantizationBits)
        } else if layer.usesFloat16 {
          storage.add("float16", count: values.count, bits: 16)
        } else {
          storage.add("float32", count: values.count, bits: 32)
        }
      }
      total += count
      var shape: [Int]?
      if let model, let output = layer.outputs.first, let id = model.blobs[output], id < model.graph.values.count {
        shape = model.graph[id].type.shape
      }
      return .init(name: layer.name, type: layer.kind, outputShape: shape, parameterCount: count)
    }
    return (layers, storage.entries, total)
  }

  /// An ML Program's operations other than constants; a parameter is a float constant of rank 1 or more
  /// (or a decompressed constant) an operation reads, counted once however many read it.
  static func programLayers(_ program: MILProgram) -> ([ModelInspection.Layer], [ModelInspection.WeightStorage], Int) {
    var producers: [String: MILOperation] = [:]
    for op in program.operations { for output in op.outputs { producers[output.name] = op } }
    func isWeight(_ value: MILValue) -> Bool { value.type.dataType.isFloat && !value.type.shape.isEmpty }
    var storage = WeightTally()
    var counted = Set<String>()
    var total = 0
    var layers: [ModelInspection.Layer] = []
    for op in program.operations where op.type != "const" && !op.type.hasPrefix("constexpr_") {
      var count = 0
      for argument in op.inputs.keys.sorted().flatMap({ op.inputs[$0]! }) {
        switch argument {
        case .value(let value) where isWeight(value):
          count += value.count
          total += value.count
          storage.add(value.type.dataType, count: value.count)
        case .name(let name):
          guard let producer = producers[name] else { continue }
          let elements: Int
          if producer.type == "const", let value = producer.value, isWeight(value) {
            elements = value.count
            if !counted.contains(name) { storage.add(value.type.dataType, count: value.count) }
          } else if producer.type.hasPrefix("constexpr_"), let type = producer.outputs.first?.type {
            // Declared shapes are checked by the reader; a product that would overflow counts as nothing.
            var product = 1
            for dimension in type.shape {
              let (next, overflow) = product.multipliedReportingOverflow(by: max(dimension, 0))
              product = overflow ? 0 : next
            }
            elements = product
            if !counted.contains(name) {
              for key in producer.inputs.keys.sorted() where key != "shape" {
                for stored in producer.inputs[key]! {
                  let value: MILValue?
                  switch stored {
                  case .value(let inline): value = inline
                  case .name(let inner): value = producers[inner]?.value
                  }
                  guard let value else { continue }
                  if producer.type == "constexpr_lut_to_dense" && key == "indices" && producer.quantizationBits > 0 {
                    // iOS 16 packs n-bit indices into uint8 bytes; iOS 18 declares them as uintN.
                    storage.add("uint\(producer.quantizationBits)", count: elements, bits: producer.quantizationBits)
                  } else {
                    storage.add(value.type.dataType, count: value.count)
                  }
                }
              }
            }
          } else {
            continue
          }
          count += elements
          if counted.insert(name).inserted { total += elements }
        default: continue
        }
      }
      layers.append(
        .init(name: op.name, type: op.type, outputShape: op.outputs.first?.type.shape, parameterCount: count))
    }
    return (layers, storage.entries, total)
  }
}

/// Weight values and bytes by element type, in the order types are first seen.
struct WeightTally {
  private(set) var entries: [ModelInspection.WeightStorage] = []

  mutating func add(_ type: MILDataType, count: Int) {
    add(String(describing: type), count: count, bits: type.bits)
  }

  mutating func add(_ name: String, count: Int, bits: Int) {
    let bytes = (count * bits + 7) / 8
    if let index = entries.firstIndex(where: { $0.dataType == name }) {
      entries[index].count += count
      entries[index].bytes += bytes
    } else {
      entries.append(.init(dataType: name, count: count, bytes: bytes))
    }
  }
}
