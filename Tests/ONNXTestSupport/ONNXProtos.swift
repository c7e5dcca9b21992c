/// Serialized ONNX messages built field by field (numbers from the ONNX schema), for tests.
public enum ONNXProtos {
  /// TensorProto: dims (1), data_type (2), name (8), raw_data (9), plus whatever `extra` writes.
  public static func tensor(
    name: String = "t", dims: [Int64], dataType: Int64 = 1, raw: [UInt8]? = nil,
    extra: (inout ProtoWire) -> Void = { _ in }
  ) -> [UInt8] {
    ProtoWire.message { w in
      w.packed(1, dims)
      w.int(2, dataType)
      w.string(8, name)
      if let raw { w.bytes(9, raw) }
      extra(&w)
    }
  }

  /// ValueInfoProto with a tensor type: name (1), type (2) → tensor_type (1) → elem_type (1), shape (2).
  /// Each dimension is an Int64 (dim_value) or a String (dim_param).
  public static func valueInfo(_ name: String, elementType: Int64 = 1, shape: [Any]? = nil) -> [UInt8] {
    let tensorType = ProtoWire.message { w in
      w.int(1, elementType)
      if let shape {
        w.bytes(
          2,
          ProtoWire.message { s in
            for dim in shape {
              s.bytes(
                1,
                ProtoWire.message { d in
                  if let size = dim as? Int64 { d.int(1, size) } else if let name = dim as? String { d.string(2, name) }
                })
            }
          })
      }
    }
    return ProtoWire.message { w in
      w.string(1, name)
      w.bytes(2, ProtoWire.message { $0.bytes(1, tensorType) })
    }
  }

  /// NodeProto: input (1), output (2), name (3), op_type (4), attribute (5).
  public static func node(
    _ opType: String, name: String? = nil, inputs: [String] = ["x"], outputs: [String] = ["y"],
    attributes: [[UInt8]] = []
  ) -> [UInt8] {
    ProtoWire.message { w in
      for input in inputs { w.string(1, input) }
      for output in outputs { w.string(2, output) }
      if let name { w.string(3, name) }
      w.string(4, opType)
      for attribute in attributes { w.bytes(5, attribute) }
    }
  }

  /// AttributeProto: name (1), type (20) and the value fields `build` writes.
  public static func attribute(_ name: String, type: Int64, _ build: (inout ProtoWire) -> Void) -> [UInt8] {
    ProtoWire.message { w in
      w.string(1, name)
      w.int(20, type)
      build(&w)
    }
  }

  /// GraphProto: node (1), name (2), initializer (5), input (11), output (12).
  public static func graph(
    name: String = "g", nodes: [[UInt8]] = [], initializers: [[UInt8]] = [], inputs: [[UInt8]] = [],
    outputs: [[UInt8]] = []
  ) -> [UInt8] {
    ProtoWire.message { w in
      for node in nodes { w.bytes(1, node) }
      w.string(2, name)
      for initializer in initializers { w.bytes(5, initializer) }
      for input in inputs { w.bytes(11, input) }
      for output in outputs { w.bytes(12, output) }
    }
  }

  /// ModelProto: ir_version (1), producer_name (2), graph (7), opset_import (8) → domain (1), version (2).
  public static func model(
    irVersion: Int64? = 8, opsets: [(String, Int64)] = [("", 13)], graph: [UInt8]? = ONNXProtos.graph(),
    metadata: [(String, String)] = []
  ) -> [UInt8] {
    ProtoWire.message { w in
      if let irVersion { w.int(1, irVersion) }
      w.string(2, "tests")
      if let graph { w.bytes(7, graph) }
      for (domain, version) in opsets {
        w.bytes(
          8,
          ProtoWire.message { o in
            o.string(1, domain)
            o.int(2, version)
          })
      }
      // metadata_props (14): StringStringEntryProto { key 1, value 2 }
      for (key, value) in metadata {
        w.bytes(
          14,
          ProtoWire.message { e in
            e.string(1, key)
            e.string(2, value)
          })
      }
    }
  }

  /// A model whose graph has one initializer, the tensor `tensor`.
  public static func model(initializer tensor: [UInt8]) -> [UInt8] { model(graph: graph(initializers: [tensor])) }
}
