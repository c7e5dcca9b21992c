import CProtobufC
import ONNXSpec

extension ONNXDecoder {
  func type(_ t: Onnx__TypeProto) throws -> ONNXType {
    switch t.value_case {
    case ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE:
      guard let tensor = t.tensor_type?.pointee else { return .unspecified }
      return .tensor(
        elementType: try elementType(tensor.has_elem_type, tensor.elem_type, "elem_type"),
        shape: try shape(tensor.shape))
    case ONNX__TYPE_PROTO__VALUE_SPARSE_TENSOR_TYPE:
      guard let tensor = t.sparse_tensor_type?.pointee else { return .unspecified }
      return .sparseTensor(
        elementType: try elementType(tensor.has_elem_type, tensor.elem_type, "elem_type"),
        shape: try shape(tensor.shape))
    case ONNX__TYPE_PROTO__VALUE_SEQUENCE_TYPE:
      return .sequence(try t.sequence_type?.pointee.elem_type.map { try type($0.pointee) } ?? .unspecified)
    case ONNX__TYPE_PROTO__VALUE_OPTIONAL_TYPE:
      return .optional(try t.optional_type?.pointee.elem_type.map { try type($0.pointee) } ?? .unspecified)
    case ONNX__TYPE_PROTO__VALUE_MAP_TYPE:
      guard let map = t.map_type?.pointee else { return .unspecified }
      return .map(
        key: try elementType(map.has_key_type, map.key_type, "key_type"),
        value: try map.value_type.map { try type($0.pointee) } ?? .unspecified)
    default:
      return .unspecified
    }
  }

  /// A `TensorProto.DataType` number that must name a known type.
  func elementType(_ present: protobuf_c_boolean, _ value: Int32, _ field: String) throws -> ONNXDataType {
    guard present != 0, value != 0 else { throw invalid("\(field) is UNDEFINED (0) or missing") }
    guard let type = ONNXDataType(rawValue: Int(value)) else {
      throw invalid("\(field) \(value) is not an ONNX element type")
    }
    return type
  }

  func shape(_ shape: UnsafeMutablePointer<Onnx__TensorShapeProto>?) throws -> [ONNXDimension]? {
    guard let shape = shape?.pointee else { return nil }
    return try messages(shape.dim, shape.n_dim, "shape.dim").enumerated().map { index, dim in
      switch dim.value_case {
      case ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE:
        // Exporters write an unknown size as -1 (paddle2onnx) or 0 as well as leaving it out; a real
        // size of 0 would make an empty tensor, which no model takes as an input.
        if dim.dim_value == -1 || dim.dim_value == 0 { return .unknown }
        guard dim.dim_value > 0 else {
          throw invalid("shape dimension \(index) is \(dim.dim_value); a size is -1 or 0 (unknown) or positive")
        }
        guard dim.dim_value <= Int64(Int32.max) else {
          throw invalid("shape dimension \(index) is \(dim.dim_value), beyond any tensor size")
        }
        return .value(Int(dim.dim_value))
      case ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM:
        let name = try text(dim.dim_param, "shape dimension \(index) dim_param")
        return name.isEmpty ? .unknown : .symbol(name)
      default:
        return .unknown
      }
    }
  }
}
