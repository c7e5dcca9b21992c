import CoreMLCommon

extension CoreMLSpecificationRules {
  /// Layer kinds present in iOS 12 (specification 3 and below): every other layer of the reader's list is a
  /// specification 4 (iOS 13) layer ([rule SPEC-VERSION-LAYERS]).
  static let iOS12Kinds: Set<String> = [
    "convolution", "innerProduct", "batchnorm", "pooling", "padding", "concat", "lrn", "softmax", "split", "add",
    "multiply",
    "unary", "upsample", "bias", "l2normalize", "reshape", "flatten", "permute", "reduce", "loadConstant", "scale",
    "simpleRecurrent", "gru", "uniDirectionalLSTM", "biDirectionalLSTM", "crop", "average", "max", "min", "dot", "mvn",
    "embedding", "sequenceRepeat", "reorganizeData", "slice", "custom", "resizeBilinear", "cropResize",
  ]

  /// The specification version a layer needs, and the rule that says so.
  static func requiredVersion(_ layer: CoreMLModelSpec.Layer) -> (version: Int, rule: String, why: String) {
    // [rule UPSAMPLE-VERSION], [rule REORGANIZE-VERSION], [rule INT8-VERSION], [rule CONCAT-ND-VERSION], [rule SPEC-VERSION-LAYERS]
    switch layer.parameters {
    case .clampedReLU: return (5, "SPEC-VERSION-LAYERS", "clampedReLU is a specification 5 (iOS 14) layer")
    case .upsample(let p) where p.linearUpsampleMode.rawValue != 0 || !p.fractionalScalingFactor.isEmpty:
      return (
        5, "UPSAMPLE-VERSION",
        "linearUpsampleMode other than DEFAULT or fractionalScalingFactor is a specification 5 (iOS 14) feature"
      )
    case .reorganizeData(let p) where p.mode == .known(.pixelShuffle):
      return (5, "REORGANIZE-VERSION", "PIXEL_SHUFFLE is a specification 5 (iOS 14) mode")
    case .innerProduct(let p) where p.int8DynamicQuantize:
      return (5, "INT8-VERSION", "int8DynamicQuantize is a specification 5 (iOS 14) feature")
    case .batchedMatmul(let p) where p.int8DynamicQuantize:
      return (5, "INT8-VERSION", "int8DynamicQuantize is a specification 5 (iOS 14) feature")
    case .concatND(let p) where p.interleave:
      return (5, "CONCAT-ND-VERSION", "interleave is a specification 5 (iOS 14) option")
    default: break
    }
    if layer.kind.hasPrefix("activation.") || iOS12Kinds.contains(layer.kind) {
      if layer.kind == "custom" { return (2, "SPEC-VERSION-WEIGHTS", "custom layers need specification 2") }
      if layer.quantizationBits > 0 { return (3, "SPEC-VERSION-WEIGHTS", "quantized weights need specification 3") }
      if layer.usesFloat16 { return (2, "SPEC-VERSION-WEIGHTS", "float16 weights need specification 2") }
      return (1, "", "")
    }
    return (4, "SPEC-VERSION-LAYERS", "\(layer.kind) is a specification 4 (iOS 13) layer")
  }

  static func modelViolations(_ spec: CoreMLModelSpec) -> [SpecificationViolation] {
    var found: [SpecificationViolation] = []
    func add(_ layer: CoreMLModelSpec.Layer?, _ rule: String, _ detail: String) {
      found.append(
        SpecificationViolation(layer: layer?.name ?? "", layerType: layer?.kind ?? "model", rule: rule, detail: detail))
    }
    for layer in spec.layers {
      let need = requiredVersion(layer)
      if need.version > spec.specificationVersion {
        add(layer, need.rule, "\(need.why); the model declares specificationVersion \(spec.specificationVersion)")
      }
    }
    // [rule SHAPE-MAPPING-VERSION]: EXACT / RANK4 mappings are specification 4 features.
    if (spec.exactArrayMapping || spec.rank4ImageMapping) && spec.specificationVersion < 4 {
      add(
        nil, "SHAPE-MAPPING-VERSION",
        "EXACT_ARRAY_MAPPING / RANK4_IMAGE_MAPPING need specificationVersion 4, the model declares \(spec.specificationVersion)"
      )
    }
    // [rule RANK5-MAPPING]: with a multiarray input, RANK5_ARRAY_MAPPING cannot be combined with iOS 13+ layers
    // or with RANK4_IMAGE_MAPPING.
    let hasArrayInput = spec.inputs.contains { if case .multiArray = $0.kind { return true } else { return false } }
    if hasArrayInput && !spec.exactArrayMapping {
      if let newer = spec.layers.first(where: { !$0.kind.hasPrefix("activation.") && !iOS12Kinds.contains($0.kind) }) {
        add(
          newer, "RANK5-MAPPING",
          "a specification 4 layer in a network whose multiarray inputs use RANK5_ARRAY_MAPPING (Core ML refuses this; EXACT_ARRAY_MAPPING is needed)"
        )
      }
      if spec.rank4ImageMapping {
        add(nil, "RANK5-MAPPING", "RANK4_IMAGE_MAPPING with RANK5_ARRAY_MAPPING and a multiarray input")
      }
    }
    found += classifierViolations(spec)
    return found
  }

  /// [rule CLASSIFIER-LABELS]: the probability blob is a vector with one entry per class label, in label order.
  static func classifierViolations(_ spec: CoreMLModelSpec) -> [SpecificationViolation] {
    guard spec.modelType == "neuralNetworkClassifier" else { return [] }
    var found: [SpecificationViolation] = []
    let labels = spec.stringClassLabels.isEmpty ? spec.int64ClassLabels.count : spec.stringClassLabels.count
    if labels == 0 {
      found.append(
        SpecificationViolation(
          layer: "", layerType: "model", rule: "CLASSIFIER-LABELS", detail: "a classifier without class labels"))
    }
    // The probability blob: labelProbabilityLayerName, else the last layer's output.
    let blob = spec.labelProbabilityLayerName.isEmpty ? spec.layers.last?.outputs.first : spec.labelProbabilityLayerName
    guard let blob else { return found }
    guard var producer = spec.layers.last(where: { $0.outputs.contains(blob) }) else {
      found.append(
        SpecificationViolation(
          layer: "", layerType: "model", rule: "CLASSIFIER-LABELS",
          detail: "no layer produces the probability blob '\(blob)'"))
      return found
    }
    // Width of the vector when decidable: through softmax / activation layers back to an innerProduct.
    var width: Int?
    for _ in 0..<spec.layers.count {
      if case .innerProduct(let p) = producer.parameters {
        width = p.outputChannels
        break
      }
      guard producer.kind == "softmax" || producer.kind.hasPrefix("activation."), producer.inputs.count == 1,
        let previous = spec.layers.last(where: { $0.outputs.contains(producer.inputs[0]) })
      else { break }
      producer = previous
    }
    if let width, labels > 0, width != labels {
      found.append(
        SpecificationViolation(
          layer: producer.name, layerType: producer.kind, rule: "CLASSIFIER-LABELS",
          detail: "\(labels) class labels, but the probability blob '\(blob)' has \(width) values"))
    }
    return found
  }
}
