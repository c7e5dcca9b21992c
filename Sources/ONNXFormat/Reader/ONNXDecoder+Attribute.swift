import CProtobufC
import ONNXSpec

extension ONNXDecoder {
  func attribute(_ a: Onnx__AttributeProto) throws -> ONNXAttribute {
    let name = try text(a.name, "attribute name")
    return try within("attribute '\(name)'") {
      guard !name.isEmpty else { throw invalid("the attribute has no name") }
      let reference = try text(a.ref_attr_name, "ref_attr_name")
      guard reference.isEmpty else {
        throw unsupported(
          "it refers to the function attribute '\(reference)' (ref_attr_name); attribute references are not read")
      }
      // The fields that hold a value; the declared type must name the only one (a list may be empty,
      // and a scalar left out is its proto3 default).
      let present: [(String, Bool)] = [
        ("f", a.has_f != 0), ("i", a.has_i != 0), ("s", a.has_s != 0), ("t", a.t != nil), ("g", a.g != nil),
        ("sparse_tensor", a.sparse_tensor != nil), ("tp", a.tp != nil), ("floats", a.n_floats > 0),
        ("ints", a.n_ints > 0),
        ("strings", a.n_strings > 0), ("tensors", a.n_tensors > 0), ("graphs", a.n_graphs > 0),
        ("sparse_tensors", a.n_sparse_tensors > 0), ("type_protos", a.n_type_protos > 0),
      ]
      let set = present.filter(\.1).map(\.0)
      guard a.has_type != 0, a.type.rawValue != 0 else {
        throw invalid(
          "the attribute has no type (UNDEFINED)" + (set.isEmpty ? "" : "; it sets \(set.joined(separator: ", "))"))
      }
      let field: String
      switch a.type {
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOAT: field = "f"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INT: field = "i"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRING: field = "s"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSOR: field = "t"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPH: field = "g"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__FLOATS: field = "floats"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__INTS: field = "ints"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__STRINGS: field = "strings"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TENSORS: field = "tensors"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__GRAPHS: field = "graphs"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSOR, ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__SPARSE_TENSORS:
        throw unsupported("sparse tensor attributes are not read")
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTO: field = "tp"
      case ONNX__ATTRIBUTE_PROTO__ATTRIBUTE_TYPE__TYPE_PROTOS: field = "type_protos"
      default: throw invalid("attribute type \(a.type.rawValue) is not an ONNX attribute type")
      }
      let others = set.filter { $0 != field }
      guard others.isEmpty else {
        throw invalid("the attribute's type says \(field), but it sets \(others.joined(separator: ", "))")
      }
      return ONNXAttribute(name: name, value: try value(a, field: field))
    }
  }

  private func value(_ a: Onnx__AttributeProto, field: String) throws -> ONNXAttribute.Value {
    switch field {
    case "f": return .float(a.f)
    case "i": return .int(Int(a.i))
    case "s": return .string(try text(a.s, "s"))
    case "t": return .tensor(try within("tensor") { try tensor(a.t.pointee) })
    case "g": return .graph(try graph(a.g.pointee))
    case "floats": return .floats(items(a.floats, a.n_floats))
    case "ints": return .ints(items(a.ints, a.n_ints).map { Int($0) })
    case "strings":
      return .strings(try items(a.strings, a.n_strings).enumerated().map { try text($1, "strings[\($0)]") })
    case "tensors":
      return .tensors(
        try messages(a.tensors, a.n_tensors, "tensors").enumerated().map { index, t in
          try within("tensors[\(index)]") { try tensor(t) }
        })
    case "graphs": return .graphs(try messages(a.graphs, a.n_graphs, "graphs").map(graph))
    case "tp": return .type(try a.tp.map { try type($0.pointee) } ?? .unspecified)
    default: return .types(try messages(a.type_protos, a.n_type_protos, "type_protos").map(type))
    }
  }
}
