import CoreMLCommon

/// The restrictions Apple states for a detector pipeline: Model.proto's pipeline (`[rule PIPELINE]` in
/// Schemas/Model.proto: each model's inputs are the pipeline's or an earlier model's outputs of the same
/// type, the pipeline's outputs a model's) and NonMaximumSuppression.proto (`[rule NMS-SPEC]`,
/// `[rule NMS-FEATURES]` in Schemas/NonMaximumSuppression.proto), as coremltools' PipelineValidator and
/// NonMaximumSuppressionValidator enforce them.
extension CoreMLSpecificationRules {
  static func pipelineViolations(_ spec: CoreMLModelSpec) -> [SpecificationViolation] {
    guard let pipeline = spec.pipeline else { return [] }
    var found: [SpecificationViolation] = []
    func add(_ layer: String, _ type: String, _ rule: String, _ detail: String) {
      found.append(SpecificationViolation(layer: layer, layerType: type, rule: rule, detail: detail))
    }
    let nms = pipeline.suppression
    let stageName = pipeline.stageNames.count == 2 ? pipeline.stageNames[1] : "nonMaximumSuppression"

    // The pipeline: every stage input is known, with the type it was declared with.
    var known = Dictionary(pipeline.inputs.map { ($0.name, $0) }, uniquingKeysWith: { first, _ in first })
    for (stage, inputs, outputs) in [("network", spec.inputs, spec.outputs), (stageName, nms.inputs, nms.outputs)] {
      for input in inputs {
        guard let declared = known[input.name] else {
          add(
            stage, "pipeline", "PIPELINE",
            "input '\(input.name)' is neither a pipeline input nor an earlier model's output")
          continue
        }
        if !sameType(declared, input) {
          add(
            stage, "pipeline", "PIPELINE",
            "input '\(input.name)' is declared \(describe(input)), but given as \(describe(declared))")
        }
      }
      for output in outputs { known[output.name] = output }
    }
    for output in pipeline.outputs {
      guard let made = known[output.name] else {
        add("", "pipeline", "PIPELINE", "output '\(output.name)' is made by none of its models")
        continue
      }
      if !sameType(made, output) {
        add(
          "", "pipeline", "PIPELINE",
          "output '\(output.name)' is declared \(describe(output)), but made as \(describe(made))")
      }
    }
    let versions = [spec.specificationVersion, nms.specificationVersion]
    if let highest = versions.max(), pipeline.specificationVersion < highest {
      add(
        "", "pipeline", "PIPELINE",
        "specification version \(pipeline.specificationVersion) is below its models' \(highest)")
    }

    // The suppression stage.
    func rule(_ id: String, _ detail: String) { add(stageName, "nonMaximumSuppression", id, detail) }
    if nms.specificationVersion < 3 {
      rule("NMS-SPEC", "specification version \(nms.specificationVersion); the model type exists from 3 (iOS 12)")
    }
    if nms.perClass == nil { rule("NMS-FEATURES", "no suppression method (pickTop) is set") }
    if !(0...1).contains(nms.iouThreshold) {
      rule("NMS-FEATURES", "iouThreshold \(nms.iouThreshold) is not within 0 and 1")
    }
    if !(nms.confidenceThreshold >= 0) {
      rule("NMS-FEATURES", "confidenceThreshold \(nms.confidenceThreshold) is negative")
    }
    func feature(_ name: String, in list: [CoreMLModelSpec.Feature], _ what: String) -> CoreMLModelSpec.Feature? {
      guard let found = list.first(where: { $0.name == name }) else {
        rule("NMS-FEATURES", "\(what) '\(name)' is not in the model's description")
        return nil
      }
      return found
    }
    let arrays = [
      feature(nms.confidenceInput, in: nms.inputs, "confidence input"),
      feature(nms.coordinatesInput, in: nms.inputs, "coordinates input"),
      feature(nms.confidenceOutput, in: nms.outputs, "confidence output"),
      feature(nms.coordinatesOutput, in: nms.outputs, "coordinates output"),
    ]
    for (name, what) in [
      (nms.iouThresholdInput, "IoU threshold input"), (nms.confidenceThresholdInput, "confidence threshold input"),
    ]
    where !name.isEmpty {
      // Apple's validator reads a threshold input only when the description lists it (else the stored
      // threshold holds): a name with no such input is allowed.
      if let input = nms.inputs.first(where: { $0.name == name }), input.kind != .double {
        rule("NMS-FEATURES", "\(what) '\(name)' is \(describe(input)), not a double")
      }
    }
    var dataTypes: [Int] = []
    for array in arrays.compactMap({ $0 }) {
      guard case .multiArray(_, let dataType) = array.kind else {
        rule("NMS-FEATURES", "'\(array.name)' is \(describe(array)), not an array")
        continue
      }
      dataTypes.append(dataType)
    }
    let double = 65600
    let float32 = 65568
    if Set(dataTypes).count > 1 {
      rule("NMS-FEATURES", "confidence and coordinates, in and out, must share one element type")
    } else if let type = dataTypes.first {
      if nms.specificationVersion < 5 && type != double {
        rule("NMS-FEATURES", "arrays of \(typeName(type)) need specification 5 (iOS 14); below it they are double")
      } else if type != double && type != float32 {
        rule("NMS-FEATURES", "arrays of \(typeName(type)); double or float32 only")
      }
    }
    // Inputs [boxes, classes] and [boxes, 4]; outputs' two dimensions by shape or by range, not both.
    if let confidence = arrays[0], let coordinates = arrays[1], case .multiArray(let c, _) = confidence.kind,
      case .multiArray(let b, _) = coordinates.kind
    {
      if c.count != 2 || b.count != 2 || c[0] != b[0] || b[1] != 4 {
        rule("NMS-FEATURES", "inputs \(c) and \(b); [boxes, classes] and [boxes, 4] expected")
      } else {
        let labels = nms.labels.count
        if labels > 0 && labels != c[1] {
          rule("NMS-FEATURES", "\(labels) class labels for \(c[1]) confidence columns")
        }
      }
    }
    for output in [arrays[2], arrays[3]].compactMap({ $0 }) {
      guard case .multiArray(let shape, _) = output.kind else { continue }
      let ranges = output.sizeRanges.count
      if !((shape.isEmpty && ranges == 0) || (shape.count == 2 && ranges == 0) || (shape.isEmpty && ranges == 2)) {
        rule(
          "NMS-FEATURES",
          "output '\(output.name)' gives \(shape.count) fixed and \(ranges) ranged dimensions; two of either, not both")
      }
    }
    return found
  }

  /// Whether two declarations of one feature agree (kind, element type, shape, ranges and optionality).
  static func sameType(_ a: CoreMLModelSpec.Feature, _ b: CoreMLModelSpec.Feature) -> Bool {
    a.kind == b.kind && a.sizeRanges == b.sizeRanges && a.isOptional == b.isOptional
  }

  static func typeName(_ dataType: Int) -> String {
    [65568: "float32", 65600: "double", 131104: "int32", 65552: "float16", 131080: "int8"][dataType]
      ?? "type \(dataType)"
  }

  static func describe(_ feature: CoreMLModelSpec.Feature) -> String {
    var text: String
    switch feature.kind {
    case .multiArray(let shape, let dataType):
      let ranges = feature.sizeRanges.map { "\($0.lower)...\($0.upper.map(String.init) ?? "")" }
      text = "a \(typeName(dataType)) array \(shape)" + (ranges.isEmpty ? "" : " ranges \(ranges)")
    case .image(let width, let height, let colorSpace): text = "a \(width)x\(height) \(colorSpace) image"
    case .dictionary(let keyType): text = "a dictionary of \(keyType) keys"
    case .string: text = "a string"
    case .int64: text = "an int64"
    case .double: text = "a double"
    }
    return feature.isOptional ? text + " (optional)" : text
  }
}
