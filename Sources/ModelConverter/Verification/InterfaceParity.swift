import ModelIR

/// Whether a converted model presents the interface its source declares: the same inputs and outputs,
/// by name (as a format that cannot hold a name renames it, `FeatureNaming`), in the same order, of the
/// same kinds (an image stays an image of the same size and colour space, a dictionary a dictionary),
/// equally optional. Shapes of arrays are checked with the values (`Comparison.checkedDeclaredLayout`).
/// An app is written against this interface: a changed one breaks it whatever the numbers say.
public struct InterfaceParity: Sendable, Equatable, Codable {
  /// The converted model's inputs and outputs as its description declares them.
  public var inputs: [InterfaceFeature]
  public var outputs: [InterfaceFeature]
  /// Whether kinds and optionality were checked: only a source format that declares them (Core ML) says
  /// what they must be; for another, image inputs and labels come from the conversion's options.
  public var kindsChecked: Bool
  /// Each way the interface differs from the source's; any fails the check.
  public var differences: [String]
  /// Changes an app does not see (an array's element type, which Core ML converts on the way in).
  public var notes: [String]
  public var passed: Bool

  /// Compares the source's interface with the converted model's description.
  static func check(source: SourceInterface, converted: ReadBackModel) -> InterfaceParity {
    check(
      source: source, inputs: converted.declaredInputs, outputs: converted.declaredOutputs, format: converted.format,
      predictedFeatureName: converted.predictedFeatureName)
  }

  /// Compares the source's interface with a converted model's features (`predictedFeatureName`: its
  /// classifier's label output, or empty).
  static func check(
    source: SourceInterface, inputs: [InterfaceFeature], outputs given: [InterfaceFeature], format: ModelFormat,
    predictedFeatureName: String
  ) -> InterfaceParity {
    var outputs = given
    // A classifier's predicted label is an output the conversion's labels add to a source that has none.
    if !source.declaresKinds, !predictedFeatureName.isEmpty,
      !source.outputs.contains(where: { $0.name == predictedFeatureName })
    {
      outputs.removeAll { $0.name == predictedFeatureName }
    }
    let renames = FeatureNaming.renames(
      inputs: source.inputs.map(\.name), outputs: source.outputs.map(\.name), format: format)
    var result = InterfaceParity(
      inputs: inputs, outputs: outputs, kindsChecked: source.declaresKinds, differences: [], notes: [], passed: true)
    for (kind, expected, actual) in [("input", source.inputs, inputs), ("output", source.outputs, outputs)] {
      let names = expected.map { feature in
        renames.first { $0.kind == kind && $0.from == feature.name }?.to ?? feature.name
      }
      result.compare(kind: kind, expected: expected, names: names, actual: actual, kinds: source.declaresKinds)
    }
    result.passed = result.differences.isEmpty
    return result
  }

  private mutating func compare(
    kind: String, expected: [InterfaceFeature], names: [String], actual: [InterfaceFeature], kinds: Bool
  ) {
    for (feature, name) in zip(expected, names) {
      let called = name == feature.name ? "'\(name)'" : "'\(feature.name)' (named '\(name)' in the model)"
      guard let other = actual.first(where: { $0.name == name }) else {
        differences.append("\(kind) \(called) (\(kinds ? feature.summary : "declared by the source")) is missing")
        continue
      }
      guard kinds else { continue }
      if feature.isOptional != other.isOptional {
        differences.append(
          "\(kind) \(called) is \(feature.isOptional ? "optional" : "required") in the source, \(other.isOptional ? "optional" : "required") in the model"
        )
      }
      if feature.flexibility != other.flexibility {
        differences.append(
          "\(kind) \(called) allows \(feature.flexibility.map { "the sizes \($0)" } ?? "one size") in the source, \(other.flexibility.map { "the sizes \($0)" } ?? "one size") in the model"
        )
      }
      if feature.kind != other.kind
        || (feature.kind != .array && (feature.shape != other.shape || feature.detail != other.detail))
      {
        differences.append(
          "\(kind) \(called) is \(Self.article(feature.summary)) in the source, \(Self.article(other.summary)) in the model"
        )
      } else if feature.kind == .array, feature.detail != other.detail {
        let why =
          kind == "input"
          ? "Core ML converts an array of another type it is given"
          : "an app reading its elements as numbers reads the same values"
        notes.append("\(kind) \(called) holds \(feature.detail) in the source, \(other.detail) in the model (\(why))")
      }
    }
    for feature in actual where !names.contains(feature.name) {
      differences.append(
        "the model has \(kind) '\(feature.name)' (\(feature.summary)), which the source does not declare")
    }
    let common = names.filter { name in actual.contains { $0.name == name } }
    let order = actual.map(\.name).filter(common.contains)
    if order != common {
      differences.append(
        "the \(kind)s are in another order: \(common.joined(separator: ", ")) in the source, \(order.joined(separator: ", ")) in the model"
      )
    }
  }

  private static func article(_ summary: String) -> String {
    let first = summary.first.map { "aeio".contains($0) } ?? false
    return (first ? "an " : "a ") + summary
  }

  /// "inputs: image (image 28x28 GRAYSCALE); outputs: ..." for the report.
  public var summary: String {
    func list(_ features: [InterfaceFeature]) -> String {
      features.map { "\($0.name) (\($0.summary))" }.joined(separator: ", ")
    }
    return "inputs \(list(inputs)); outputs \(list(outputs))"
  }
}
