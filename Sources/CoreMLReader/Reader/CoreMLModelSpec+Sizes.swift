import CoreMLCommon

extension CoreMLModelSpec.Feature {
  /// The sizes a flexible input allows, in the description's terms (an array's shape, an image's
  /// `[height, width]`): its default, and a range per dimension or its enumerated shapes; nil for a
  /// fixed input.
  public struct AllowedSizes: Sendable, Equatable {
    public var defaultSize: [Int]
    /// One range per dimension (a fixed dimension has lower == upper); nil when enumerated.
    public var ranges: [CoreMLModelOutline.SizeRange]?
    public var enumerated: [[Int]]?

    /// Whether `size` is one of them.
    public func allows(_ size: [Int]) -> Bool {
      if let enumerated { return enumerated.contains(size) }
      guard let ranges, ranges.count == size.count else { return false }
      return zip(ranges, size).allSatisfy { range, value in
        value >= range.lower && (range.upper.map { value <= $0 } ?? true)
      }
    }
  }

  public var allowedSizes: AllowedSizes? {
    switch kind {
    case .multiArray(let shape, _):
      if !enumeratedShapes.isEmpty {
        return AllowedSizes(defaultSize: shape.isEmpty ? enumeratedShapes[0] : shape, enumerated: enumeratedShapes)
      }
      guard !sizeRanges.isEmpty else { return nil }
      return AllowedSizes(defaultSize: shape.isEmpty ? sizeRanges.map(\.lower) : shape, ranges: sizeRanges)
    case .image(let width, let height, _):
      // The description lists widths first; these sizes are [height, width].
      if !enumeratedImageSizes.isEmpty {
        return AllowedSizes(
          defaultSize: [height, width],
          enumerated: enumeratedImageSizes.filter { $0.count == 2 }.map { [$0[1], $0[0]] })
      }
      guard imageSizeRanges.count == 2 else { return nil }
      return AllowedSizes(defaultSize: [height, width], ranges: [imageSizeRanges[1], imageSizeRanges[0]])
    default: return nil
    }
  }
}

extension CoreMLModelSpec {
  /// The model with flexible inputs at other sizes they allow (arrays by shape, images by `[height,
  /// width]`), read as if those were the declared sizes: Core ML runs a flexible model at the size the
  /// app's input has. A size the input does not allow is refused.
  public func atSizes(_ sizes: [String: [Int]], path: String) throws -> CoreMLModelSpec {
    var model = self
    for (name, size) in sizes.sorted(by: { $0.key < $1.key }) {
      guard let index = model.inputs.firstIndex(where: { $0.name == name }) else {
        throw CoreMLReaderError.invalidField(
          path: path, field: "description.input", detail: "no input '\(name)' to read at size \(size)")
      }
      let feature = model.inputs[index]
      guard let allowed = feature.allowedSizes ?? fixedSize(feature), allowed.allows(size) else {
        throw CoreMLReaderError.invalidField(
          path: path, field: "description.input['\(name)']", detail: "does not allow the size \(size)")
      }
      switch feature.kind {
      case .multiArray(_, let dataType): model.inputs[index].kind = .multiArray(shape: size, dataType: dataType)
      case .image(_, _, let colorSpace):
        model.inputs[index].kind = .image(width: size[1], height: size[0], colorSpace: colorSpace)
      default: break
      }
    }
    return model
  }

  private func fixedSize(_ feature: Feature) -> Feature.AllowedSizes? {
    switch feature.kind {
    case .multiArray(let shape, _): return Feature.AllowedSizes(defaultSize: shape, enumerated: [shape])
    case .image(let width, let height, _):
      return Feature.AllowedSizes(defaultSize: [height, width], enumerated: [[height, width]])
    default: return nil
    }
  }
}
