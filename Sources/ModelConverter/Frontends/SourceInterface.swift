import CoreMLFormat

/// One input or output as an app sees it: its name, what kind of value it takes or gives, and whether
/// it may be left out. Format-neutral: a source whose format declares these (Core ML) describes its own
/// features so; a converted model's features are read from its description the same way.
public struct InterfaceFeature: Sendable, Equatable, Codable {
  public enum Kind: String, Sendable, Equatable, Codable {
    case array, image, dictionary, string, int64, double
  }
  public var name: String
  public var kind: Kind
  /// Arrays: the declared shape (empty when left out); images: `[height, width]`.
  public var shape: [Int]
  /// Arrays: `float32`, `float16`, `double`, `int32`; images: `RGB`, `BGR`, `GRAYSCALE`; dictionaries:
  /// the key type (`string`, `int64`).
  public var detail: String
  public var isOptional: Bool
  /// The sizes a flexible input or output allows besides its default, as Xcode lists them
  /// (`1 × 3 × 8...64 × 8...64`, `32 × 32 | 64 × 48`); nil when fixed.
  public var flexibility: String?

  public init(name: String, kind: Kind, shape: [Int] = [], detail: String = "", isOptional: Bool = false) {
    self.name = name
    self.kind = kind
    self.shape = shape
    self.detail = detail
    self.isOptional = isOptional
  }

  /// "image 28x28 GRAYSCALE", "array float32 [1, 100] (optional)".
  public var summary: String {
    var text: String
    switch kind {
    case .array: text = "array \(detail) \(shape)"
    case .image: text = shape.count == 2 ? "image \(shape[1])x\(shape[0]) \(detail)" : "image \(detail)"
    case .dictionary: text = "dictionary \(detail) → double"
    case .string, .int64, .double: text = kind.rawValue
    }
    if isOptional { text += " (optional)" }
    return text
  }

  /// FeatureTypes.proto's `ArrayDataType` values by name.
  static let arrayDataTypeNames = [65568: "float32", 65552: "float16", 65600: "double", 131104: "int32"]

  /// A feature of a Core ML model description.
  public init(_ feature: CoreMLModelSpec.Feature) {
    switch feature.kind {
    case .multiArray(let shape, let dataType):
      self.init(
        name: feature.name, kind: .array, shape: shape, detail: Self.arrayDataTypeNames[dataType] ?? "type \(dataType)",
        isOptional: feature.isOptional)
    case .image(let width, let height, let colorSpace):
      self.init(
        name: feature.name, kind: .image, shape: [height, width], detail: colorSpace, isOptional: feature.isOptional)
    case .dictionary(let keyType):
      self.init(name: feature.name, kind: .dictionary, detail: keyType, isOptional: feature.isOptional)
    case .string: self.init(name: feature.name, kind: .string, isOptional: feature.isOptional)
    case .int64: self.init(name: feature.name, kind: .int64, isOptional: feature.isOptional)
    case .double: self.init(name: feature.name, kind: .double, isOptional: feature.isOptional)
    }
    func listed(_ shapes: [[Int]]) -> String {
      shapes.map { $0.map(String.init).joined(separator: " × ") }.joined(separator: " | ")
    }
    func ranges(_ ranges: [CoreMLModelOutline.SizeRange]) -> String {
      ConversionSummary.FeatureType.ranges(ranges.map { [$0.lower, $0.upper ?? -1] }, separator: " × ")
    }
    if !feature.sizeRanges.isEmpty {
      flexibility = ranges(feature.sizeRanges)
    } else if !feature.enumeratedShapes.isEmpty {
      flexibility = listed(feature.enumeratedShapes)
    } else if !feature.imageSizeRanges.isEmpty {
      flexibility = ranges(feature.imageSizeRanges)
    } else if !feature.enumeratedImageSizes.isEmpty {
      flexibility = listed(feature.enumeratedImageSizes)
    }
  }
}

/// The inputs and outputs a source declares, in its order: what a conversion keeps and `verify` checks.
public struct SourceInterface: Sendable, Equatable {
  public var inputs: [InterfaceFeature]
  public var outputs: [InterfaceFeature]
  /// Whether the format declares the kinds of its features (Core ML's images, dictionaries and optional
  /// inputs); in one that does not (Keras, ONNX), every feature is an array and image inputs, labels
  /// and names come from the conversion's options, so only names and order are the source's.
  public var declaresKinds: Bool

  public init(inputs: [InterfaceFeature], outputs: [InterfaceFeature], declaresKinds: Bool) {
    self.inputs = inputs
    self.outputs = outputs
    self.declaresKinds = declaresKinds
  }
}
