import Foundation

extension ModelInspection: CustomStringConvertible {
  /// The report `modelconv inspect` prints: a header of fields, then the layer table.
  public var description: String {
    var fields: [(String, [String])] = []
    fields.append(("Format", [presentation.format]))
    fields += presentation.fields.map { ($0.name, $0.values) }
    if !oldestReleases.isEmpty {
      fields.append(("Loads on", [oldestReleases.map(\.description).joined(separator: ", ") + " and later"]))
    }
    if let details = graphDetails {
      if !details.operatorSets.isEmpty {
        fields.append(
          ("Operator sets", [details.operatorSets.map { "\($0.domain) \($0.version)" }.joined(separator: ", ")]))
      }
      let unsupported = details.operators.filter { !$0.supported }
      fields.append(("Operators", [details.operators.map { "\($0.opType) \($0.count)" }.joined(separator: ", ")]))
      fields.append(("Unsupported", [unsupported.isEmpty ? "none" : unsupported.map(\.opType).joined(separator: ", ")]))
    }
    if let details = graphDetails {
      // Dimensions as declared, which may be symbolic (a batch axis `N`).
      fields.append(
        (
          "Inputs",
          details.declaredInputs.map { declared in
            "\(declared.name): \(inputs.first { $0.name == declared.name }?.type.dataType ?? "") [\(declared.dimensions.joined(separator: " × "))]"
          }
        ))
    } else {
      fields.append(("Inputs", inputs.map { "\($0.name): \(Self.xcodeType($0.type))" }))
    }
    if !imageInputs.isEmpty {
      fields.append(
        (
          "Preprocessing",
          imageInputs.map { image in
            var biases: [String] = []
            for (name, value) in [
              ("red", image.redBias), ("green", image.greenBias), ("blue", image.blueBias), ("gray", image.grayBias),
            ] {
              if let value { biases.append("\(name) bias \(Self.number(value))") }
            }
            return "\(image.input): \(image.colorSpace), scale \(Self.scaleText(image.scale)), "
              + biases.joined(separator: ", ")
          }
        ))
    }
    if let details = graphDetails {
      fields.append(
        (
          "Outputs",
          details.declaredOutputs.map { declared in
            "\(declared.name): \(outputs.first { $0.name == declared.name }?.type.dataType ?? "") [\(declared.dimensions.joined(separator: " × "))]"
          }
        ))
    } else {
      fields.append(("Outputs", outputs.map { "\($0.name): \(Self.xcodeType($0.type))" }))
    }
    if !labels.isEmpty {
      let shown = labels.prefix(8).joined(separator: ", ")
      fields.append(("Labels", ["\(labels.count): " + shown + (labels.count > 8 ? ", ..." : "")]))
    } else if presentation.declaresLabels {
      fields.append(("Labels", ["none (not a classifier)"]))
    }
    var metadataLines: [String] = []
    for (name, value) in [
      ("description", metadata.shortDescription), ("author", metadata.author), ("license", metadata.license),
      ("version", metadata.version),
    ] {
      if let value { metadataLines.append("\(name): \(value)") }
    }
    metadataLines += metadata.userDefined.map { "\($0.key): \($0.value)" }
    if !metadataLines.isEmpty { fields.append(("Metadata", metadataLines)) }
    if let suppression {
      fields.append(
        (
          "Suppression",
          [
            suppression.summary,
            "\(suppression.confidenceInput), \(suppression.coordinatesInput) -> \(suppression.confidenceOutput), \(suppression.coordinatesOutput)",
          ]
        ))
    }
    if !subModels.isEmpty { fields.append(("Sub-models", Self.subModelLines(subModels, prefix: ""))) }
    guard isRunnable else {
      let article = "aeiou".contains(kind.rawValue.prefix(1)) ? "an" : "a"
      fields.append(
        (
          "Parameters",
          [
            "none: \(article) \(kind.rawValue) is not a neural network (inspect describes it; convert, verify and predict do not run it)"
          ]
        ))
      return
        ([path]
        + fields.flatMap { name, values in
          values.enumerated().map {
            "  " + ($0.offset == 0 ? name : "").padding(toLength: 15, withPad: " ", startingAt: 0) + $0.element
          }
        }).joined(separator: "\n")
    }
    let storage = weights.map { "\($0.dataType) \(Self.bytesText($0.bytes))" }.joined(separator: ", ")
    fields.append(
      (
        "Parameters",
        [
          "\(Self.grouped(parameterCount)) in \(layers.count) \(presentation.layerNoun)s"
            + (weights.isEmpty ? "" : "; weights \(Self.bytesText(weightBytes)) (\(storage))")
        ]
      ))

    var lines = [path]
    for (name, values) in fields {
      for (index, value) in values.enumerated() {
        lines.append("  " + (index == 0 ? name : "").padding(toLength: 15, withPad: " ", startingAt: 0) + value)
      }
    }
    lines.append("")
    if let shapesUnavailable { lines.append("Output shapes unknown: \(shapesUnavailable)") }
    let rows = layers.map { layer -> [String] in
      let shape =
        layer.outputShape.map {
          presentation.shapesAfterBatch
            ? "(None" + $0.map { ", \($0)" }.joined() + ")" : "[" + $0.map(String.init).joined(separator: ", ") + "]"
        } ?? "?"
      return [String(layer.name.prefix(48)), layer.type, shape, Self.grouped(layer.parameterCount)]
    }
    let header = [
      presentation.layerNoun.prefix(1).uppercased() + presentation.layerNoun.dropFirst(), "Type", "Output shape",
      "Params",
    ]
    let widths = (0..<4).map { column in ([header] + rows).map { $0[column].count }.max() ?? 0 }
    for row in [header] + rows {
      let left = (0..<3).map { row[$0].padding(toLength: widths[$0] + 2, withPad: " ", startingAt: 0) }.joined()
      lines.append(left + String(repeating: " ", count: widths[3] - row[3].count) + row[3])
    }
    return lines.joined(separator: "\n")
  }

  /// A feature type as Xcode's model view shows it: `Image (Grayscale 48 × 48)`, `MultiArray (Float32 1 × 7)`.
  public static func xcodeType(_ type: ConversionSummary.FeatureType) -> String {
    switch type.kind {
    case "image":
      let color = type.colorSpace == "GRAYSCALE" ? "Grayscale" : "Color \(type.colorSpace ?? "")"
      let size = "\(type.width ?? 0) × \(type.height ?? 0)"
      if let ranges = type.sizeRange {
        return "Image (\(color) \(ConversionSummary.FeatureType.ranges(ranges, separator: " × ")), default \(size))"
      }
      if let sizes = type.enumeratedSizes {
        let listed = sizes.map { $0.map(String.init).joined(separator: " × ") }
        return "Image (\(color) \(listed.joined(separator: " | "))"
          + (listed.first == size ? "" : ", default \(size)") + ")"
      }
      return "Image (\(color) \(size))"
    case "multiArray":
      let dataType = (type.dataType ?? "").prefix(1).uppercased() + (type.dataType ?? "").dropFirst()
      let shape = type.shape.map { $0.map(String.init).joined(separator: " × ") }
      if let ranges = type.shapeRange {
        return "MultiArray (\(dataType) \(ConversionSummary.FeatureType.ranges(ranges, separator: " × "))"
          + (shape.map { $0.isEmpty ? "" : ", default \($0)" } ?? "") + ")"
      }
      if let shapes = type.enumeratedShapes {
        let listed = shapes.map { $0.map(String.init).joined(separator: " × ") }
        return "MultiArray (\(dataType) \(listed.joined(separator: " | "))"
          + (shape == nil || listed.first == shape ? "" : ", default \(shape ?? "")") + ")"
      }
      return "MultiArray (\(dataType) \(shape ?? ""))"
    case "dictionary":
      return "Dictionary (\(type.keyType == "int64" ? "Int64" : "String") → Double)"
    case "sequence": return "Sequence (\(type.valueType == "int64" ? "Int64" : "String"))"
    case "state":
      let dataType = (type.dataType ?? "").prefix(1).uppercased() + (type.dataType ?? "").dropFirst()
      return "State (\(dataType) \((type.shape ?? []).map(String.init).joined(separator: " × ")))"
    case "int64": return "Int64"
    case "string": return "String"
    case "double": return type.optional == true ? "Double (optional)" : "Double"
    default: return type.kind
    }
  }

  /// A pipeline's models, one line each (`2. glmClassifier 'glm': features → label, probabilities`), nested ones
  /// numbered under their pipeline (`2.1`).
  static func subModelLines(_ models: [SubModel], prefix: String) -> [String] {
    models.enumerated().flatMap { index, model -> [String] in
      let number = prefix + String(index + 1)
      func names(_ features: [ConversionSummary.Feature]) -> String {
        features.map { "\($0.name) (\(xcodeType($0.type)))" }.joined(separator: ", ")
      }
      var line = String(repeating: "  ", count: prefix.filter { $0 == "." }.count) + "\(number). \(model.kind.rawValue)"
      if let name = model.name { line += " '\(name)'" }
      line += ": " + names(model.inputs) + " → " + names(model.outputs)
      if !model.labels.isEmpty { line += "; \(model.labels.count) labels" }
      if let suppression = model.suppression { line += "; " + suppression.summary }
      return [line] + subModelLines(model.subModels, prefix: number + ".")
    }
  }

  /// `0.00392157 (1/255)`: the scale, and the fraction of 255 or 127.5 it is when it is one.
  static func scaleText(_ scale: Float) -> String {
    for denominator in [255.0, 127.5] {
      let numerator = Double(scale) * denominator
      let rounded = numerator.rounded()
      if rounded >= 1, rounded <= 4, abs(numerator - rounded) < 1e-4 {
        let d = denominator == denominator.rounded() ? String(Int(denominator)) : String(denominator)
        return "\(number(scale)) (\(Int(rounded))/\(d))"
      }
    }
    return number(scale)
  }

  static func number(_ value: Float) -> String {
    value == value.rounded() && abs(value) < 1e6 ? String(Int(value)) : String(format: "%.6g", Double(value))
  }

  static func grouped(_ value: Int) -> String {
    let digits = Array(String(value))
    var result = ""
    for (index, digit) in digits.enumerated() {
      if index > 0 && (digits.count - index) % 3 == 0 { result.append(",") }
      result.append(digit)
    }
    return result
  }

  static func bytesText(_ bytes: Int) -> String {
    if bytes < 1024 { return "\(bytes) B" }
    if bytes < 1024 * 1024 { return String(format: "%.1f KiB", Double(bytes) / 1024) }
    return String(format: "%.1f MiB", Double(bytes) / 1024 / 1024)
  }
}
