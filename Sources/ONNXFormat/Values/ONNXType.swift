/// The type of an ONNX value (`TypeProto`).
public indirect enum ONNXType: Equatable, Sendable {
  /// A dense tensor; `shape` is nil when the rank is not stated.
  case tensor(elementType: ONNXDataType, shape: [ONNXDimension]?)
  /// A sparse tensor; `shape` is nil when the rank is not stated.
  case sparseTensor(elementType: ONNXDataType, shape: [ONNXDimension]?)
  case sequence(ONNXType)
  case map(key: ONNXDataType, value: ONNXType)
  case optional(ONNXType)
  /// No type given (allowed for values inside subgraphs and for intermediate values).
  case unspecified

  /// "tensor(FLOAT)[1, 3, N]", "sequence(tensor(INT64))", ..., for messages.
  public var description: String {
    func shape(_ dims: [ONNXDimension]?) -> String {
      guard let dims else { return "" }
      let sizes = dims.map { dim -> String in
        switch dim {
        case .value(let size): return String(size)
        case .symbol(let name): return name
        case .unknown: return "?"
        }
      }
      return "[" + sizes.joined(separator: ", ") + "]"
    }
    switch self {
    case .tensor(let type, let dims): return "tensor(\(type.name))" + shape(dims)
    case .sparseTensor(let type, let dims): return "sparse_tensor(\(type.name))" + shape(dims)
    case .sequence(let element): return "sequence(\(element.description))"
    case .map(let key, let value): return "map(\(key.name), \(value.description))"
    case .optional(let element): return "optional(\(element.description))"
    case .unspecified: return "unspecified"
    }
  }
}
