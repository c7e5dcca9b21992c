import CoreMLCommon

extension CoreMLSpecificationRules {
  /// The MIL.proto and Model.proto rules for ML Programs (`[rule ...]` in Schemas/MIL.proto and Model.proto),
  /// checked over the decoded `main` function. Empty for neural networks.
  static func programViolations(_ spec: CoreMLModelSpec) -> [SpecificationViolation] {
    guard let program = spec.program else { return [] }
    var found: [SpecificationViolation] = []
    func add(_ op: MILOperation?, _ rule: String, _ detail: String) {
      found.append(
        SpecificationViolation(layer: op?.name ?? "", layerType: op?.type ?? "model", rule: rule, detail: detail))
    }
    // [rule MLPROGRAM-SPEC] specification 6 or later, and at least the version of the opset's release.
    if let opset = program.opsetVersion {
      let needed = opset + 1
      if spec.specificationVersion < needed {
        add(
          nil, "MLPROGRAM-SPEC",
          "opset \(program.opset) needs specificationVersion \(needed); the model declares \(spec.specificationVersion)"
        )
      }
    } else {
      add(nil, "MIL-OPSET", "unknown opset '\(program.opset)'")
    }
    var defined = Set(program.inputs.map(\.name))
    for op in program.operations {
      // [rule MIL-OPSET] constexpr operations exist from CoreML6 (blockwise shift-scale and the iOS 18 lookup table from CoreML8).
      var introduced = 5
      switch op.type {
      case "constexpr_affine_dequantize": introduced = 6
      case "constexpr_lut_to_dense": introduced = op.inputs["shape"] == nil ? 8 : 6
      case "constexpr_blockwise_shift_scale": introduced = 8
      default: break
      }
      if let opset = program.opsetVersion, opset < introduced {
        add(op, "MIL-OPSET", "exists from opset CoreML\(introduced); the program's opset is \(program.opset)")
      }
      // [rule MIL-ORDER] only names defined before the operation.
      for (parameter, arguments) in op.inputs.sorted(by: { $0.key < $1.key }) {
        for case .name(let name) in arguments where !defined.contains(name) {
          add(
            op, "MIL-ORDER",
            "parameter '\(parameter)' reads '\(name)', which no earlier operation or function input defines")
        }
      }
      // [rule MIL-SSA] output names are unique.
      for output in op.outputs {
        if defined.contains(output.name) { add(op, "MIL-SSA", "output '\(output.name)' is already defined") }
        defined.insert(output.name)
      }
    }
    // [rule MIL-BLOCK-OUTPUTS] every block output is defined.
    for output in program.outputs where !defined.contains(output) {
      add(nil, "MIL-BLOCK-OUTPUTS", "block output '\(output)' is not defined in the block")
    }
    // [rule MIL-MAIN] the function's inputs and outputs are the description's.
    for feature in spec.inputs where !program.inputs.contains(where: { $0.name == feature.name }) {
      add(nil, "MIL-MAIN", "model input '\(feature.name)' is not an input of function main")
    }
    for feature in spec.outputs where !program.outputs.contains(feature.name) {
      add(nil, "MIL-MAIN", "model output '\(feature.name)' is not an output of function main")
    }
    // [rule MLPROGRAM-CLASSIFIER] a classifier's label and probabilities come from its classify operation.
    if !spec.predictedFeatureName.isEmpty {
      let classify = program.operations.last { $0.type == "classify" }
      let names = classify?.outputs.map(\.name) ?? []
      if classify == nil || !names.contains(spec.predictedFeatureName)
        || (!spec.predictedProbabilitiesName.isEmpty && !names.contains(spec.predictedProbabilitiesName))
      {
        add(
          classify, "MLPROGRAM-CLASSIFIER",
          "predictedFeatureName '\(spec.predictedFeatureName)' and predictedProbabilitiesName '\(spec.predictedProbabilitiesName)' are not the outputs of a classify operation"
        )
      }
    }
    return found
  }
}
