import ModelIR

/// How the importer treats layer classes it has no conversion for (coremltools' `custom_conversion_functions`
/// and `add_custom_layers`).
public struct KerasCustomLayers: Sendable, Equatable {
  public typealias Conversion = @Sendable (KerasCustomLayerContext) throws -> CustomLayer

  /// Conversions by Keras class name; they win over the importer's own conversions.
  public var conversions: [String: Conversion]
  /// Whether every other unknown class becomes a Core ML custom layer (`defaultConversion`) instead
  /// of an error. Lambda, Resizing and CenterCrop stay errors.
  public var convertUnknown: Bool

  public init(conversions: [String: Conversion] = [:], convertUnknown: Bool = false) {
    self.conversions = conversions
    self.convertUnknown = convertUnknown
  }

  /// Equal when the same classes are registered and unknown layers are treated alike (closures cannot be compared).
  public static func == (a: Self, b: Self) -> Bool {
    a.convertUnknown == b.convertUnknown && Set(a.conversions.keys) == Set(b.conversions.keys)
  }

  /// Layers that are never made custom: their behaviour cannot be carried or belongs outside the model.
  static let neverCustom: Set<String> = ["Lambda", "Resizing", "CenterCrop"]

  func handles(_ className: String) -> Bool {
    conversions[className] != nil || (convertUnknown && !Self.neverCustom.contains(className))
  }

  /// A custom layer named after the Keras class, with the config's numbers, strings and booleans as
  /// parameters, the layer's weights, and the first input's shape as its output shape.
  @Sendable public static func defaultConversion(_ context: KerasCustomLayerContext) -> CustomLayer {
    var parameters: [String: CustomLayer.Parameter] = [:]
    for (key, value) in context.config.object ?? [:] where !["name", "trainable", "dtype"].contains(key) {
      switch value {
      case .bool(let flag): parameters[key] = .bool(flag)
      case .string(let text): parameters[key] = .string(text)
      case .number(let number):
        parameters[key] = number == number.rounded() && abs(number) < 1e15 ? .int(Int64(number)) : .double(number)
      default: continue
      }
    }
    return CustomLayer(
      className: context.className, description: "Keras \(context.className) layer '\(context.name)'",
      parameters: parameters,
      weights: context.weights, outputShape: context.inputShapes.first ?? [])
  }
}
