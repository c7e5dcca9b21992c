import CProtobufC
import CoreMLSpec
import ModelIR

/// The sizes a flexible input feature allows, in the model description's terms (FeatureTypes.proto):
/// a multiarray's `shapeRange` or `enumeratedShapes`, an image's `imageSizeRange` or `enumeratedSizes`.
public enum FeatureFlexibility: Sendable, Equatable {
  /// One dimension's sizes; `upper` nil is unbounded (written as -1).
  public struct SizeRange: Sendable, Equatable {
    public var lower: Int
    public var upper: Int?
    public init(lower: Int, upper: Int?) {
      self.lower = lower
      self.upper = upper
    }
  }
  /// A range per dimension of the declared shape.
  case shapeRange([SizeRange])
  /// Whole declared shapes, the default among them.
  case enumeratedShapes([[Int]])
  /// An image's height and width ranges.
  case imageSizeRange(height: SizeRange, width: SizeRange)
  /// An image's allowed `[height, width]` sizes.
  case enumeratedImageSizes([[Int]])
}

/// What a flexible model's writer adds to the model written at its default size: the flexibility of
/// its inputs and, in an ML Program, which dimensions of which values the program leaves unknown
/// (they take other sizes at other input sizes) and which outputs have no fixed shape.
public struct WrittenFlexibility: Sendable, Equatable {
  public var inputs: [String: FeatureFlexibility]
  /// ML Program value names and the dimensions of their tensor type written as unknown.
  public var unknownDimensions: [String: Set<Int>]
  /// Multiarray outputs whose shape changes with the inputs' (an ML Program declares them without a shape,
  /// as coremltools writes them; a neural network keeps the default's).
  public var variableOutputs: Set<String>
  /// ML Program `const` operations (by output name) read only as reshape targets, and the entry written as
  /// -1 (inferred by the reshape) because it follows the input's size.
  public var inferredSizes: [String: Int]

  public init(
    inputs: [String: FeatureFlexibility], unknownDimensions: [String: Set<Int>] = [:],
    variableOutputs: Set<String> = [],
    inferredSizes: [String: Int] = [:]
  ) {
    self.inputs = inputs
    self.inferredSizes = inferredSizes
    self.unknownDimensions = unknownDimensions
    self.variableOutputs = variableOutputs
  }
}

extension ModelDescription {
  /// Adds each input's flexibility to its feature description and clears the shape of the outputs that vary
  /// (`clearVariableOutputs`, ML Programs).
  package static func applyFlexibility(
    _ flexibility: WrittenFlexibility, to description: UnsafeMutablePointer<CoreML__Specification__ModelDescription>,
    clearVariableOutputs: Bool, arena: MessageArena
  ) throws {
    func sizeRange(_ range: FeatureFlexibility.SizeRange) -> UnsafeMutablePointer<CoreML__Specification__SizeRange> {
      let message = arena.message(core_ml__specification__size_range__init)
      message.pointee.lowerbound = UInt64(range.lower)
      message.pointee.upperbound = Int64(range.upper ?? -1)
      return message
    }
    var found = Set<String>()
    for index in 0..<description.pointee.n_input {
      guard let feature = description.pointee.input[index], let name = feature.pointee.name,
        let flexible = flexibility.inputs[String(cString: name)], let type = feature.pointee.type
      else { continue }
      found.insert(String(cString: name))
      switch (flexible, type.pointee.type_case) {
      case (.shapeRange(let ranges), CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE):
        let range = arena.message(core_ml__specification__array_feature_type__shape_range__init)
        range.pointee.n_sizeranges = ranges.count
        range.pointee.sizeranges = arena.pointerArray(ranges.map(sizeRange))
        type.pointee.multiarraytype.pointee.shape_flexibility_case =
          CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_SHAPE_RANGE
        type.pointee.multiarraytype.pointee.shaperange = range
      case (.enumeratedShapes(let shapes), CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE):
        let list = arena.message(core_ml__specification__array_feature_type__enumerated_shapes__init)
        let messages = shapes.map { shape -> UnsafeMutablePointer<CoreML__Specification__ArrayFeatureType__Shape> in
          let message = arena.message(core_ml__specification__array_feature_type__shape__init)
          message.pointee.n_shape = shape.count
          message.pointee.shape = arena.array(shape.map { Int64($0) })
          return message
        }
        list.pointee.n_shapes = messages.count
        list.pointee.shapes = arena.pointerArray(messages)
        type.pointee.multiarraytype.pointee.shape_flexibility_case =
          CORE_ML__SPECIFICATION__ARRAY_FEATURE_TYPE__SHAPE_FLEXIBILITY_ENUMERATED_SHAPES
        type.pointee.multiarraytype.pointee.enumeratedshapes = list
      case (.imageSizeRange(let height, let width), CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE):
        let range = arena.message(core_ml__specification__image_feature_type__image_size_range__init)
        range.pointee.heightrange = sizeRange(height)
        range.pointee.widthrange = sizeRange(width)
        type.pointee.imagetype.pointee.size_flexibility_case =
          CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_IMAGE_SIZE_RANGE
        type.pointee.imagetype.pointee.imagesizerange = range
      case (.enumeratedImageSizes(let sizes), CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE):
        let list = arena.message(core_ml__specification__image_feature_type__enumerated_image_sizes__init)
        let messages = sizes.map { size -> UnsafeMutablePointer<CoreML__Specification__ImageFeatureType__ImageSize> in
          let message = arena.message(core_ml__specification__image_feature_type__image_size__init)
          message.pointee.height = UInt64(size[0])
          message.pointee.width = UInt64(size[1])
          return message
        }
        list.pointee.n_sizes = messages.count
        list.pointee.sizes = arena.pointerArray(messages)
        type.pointee.imagetype.pointee.size_flexibility_case =
          CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__SIZE_FLEXIBILITY_ENUMERATED_SIZES
        type.pointee.imagetype.pointee.enumeratedsizes = list
      default:
        throw CoreMLWriterError.invalidOption(
          "input '\(String(cString: name))': \(flexible) does not fit its feature type")
      }
    }
    if let missing = Set(flexibility.inputs.keys).subtracting(found).sorted().first {
      throw CoreMLWriterError.unknownFeature(
        kind: "input", name: missing,
        available: (0..<description.pointee.n_input).compactMap {
          description.pointee.input[$0]?.pointee.name.map { String(cString: $0) }
        })
    }
    guard clearVariableOutputs else { return }
    for index in 0..<description.pointee.n_output {
      guard let feature = description.pointee.output[index], let name = feature.pointee.name,
        flexibility.variableOutputs.contains(String(cString: name)), let type = feature.pointee.type,
        type.pointee.type_case == CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_MULTI_ARRAY_TYPE
      else { continue }
      type.pointee.multiarraytype.pointee.n_shape = 0
      type.pointee.multiarraytype.pointee.shape = nil
    }
  }
}
