/// One named attribute of an ONNX node, its value typed by the attribute's declared type.
///
/// Sparse tensor attributes and references to a function's attributes (`ref_attr_name`) are refused
/// by the reader, so every attribute here holds its own value.
public struct ONNXAttribute: Equatable, Sendable {
  public var name: String
  public var value: Value

  public indirect enum Value: Equatable, Sendable {
    case float(Float)
    case int(Int)
    /// A string attribute (UTF-8 checked).
    case string(String)
    case tensor(ONNXTensor)
    case graph(ONNXGraph)
    case floats([Float])
    case ints([Int])
    case strings([String])
    case tensors([ONNXTensor])
    case graphs([ONNXGraph])
    /// A type (`Optional`'s `type`, for one).
    case type(ONNXType)
    case types([ONNXType])
  }

  public init(name: String, value: Value) {
    self.name = name
    self.value = value
  }
}

extension ONNXAttribute.Value {
  public var float: Float? { if case .float(let v) = self { return v } else { return nil } }
  public var int: Int? { if case .int(let v) = self { return v } else { return nil } }
  public var string: String? { if case .string(let v) = self { return v } else { return nil } }
  public var tensor: ONNXTensor? { if case .tensor(let v) = self { return v } else { return nil } }
  public var graph: ONNXGraph? { if case .graph(let v) = self { return v } else { return nil } }
  public var floats: [Float]? { if case .floats(let v) = self { return v } else { return nil } }
  public var ints: [Int]? { if case .ints(let v) = self { return v } else { return nil } }
  public var strings: [String]? { if case .strings(let v) = self { return v } else { return nil } }
}
