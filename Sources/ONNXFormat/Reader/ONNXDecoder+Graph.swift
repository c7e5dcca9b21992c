import CProtobufC
import ONNXSpec

extension ONNXDecoder {
  func model(_ m: Onnx__ModelProto) throws -> ONNXModel {
    guard m.has_ir_version != 0 else { throw invalid("ir_version is missing") }
    guard ONNXLimits.irVersions.contains(Int(m.ir_version)) else {
      throw unsupported(
        "ir_version is \(m.ir_version); the reader reads IR versions \(ONNXLimits.irVersions.lowerBound) (ONNX 1.0) to \(ONNXLimits.irVersions.upperBound) (ONNX 1.16 and 1.17)"
      )
    }
    let opsetImports = try opsets(m.opset_import, m.n_opset_import)
    guard !opsetImports.isEmpty else { throw invalid("the model imports no operator set (opset_import is empty)") }
    guard let graphMessage = m.graph?.pointee else { throw invalid("the model has no graph") }
    let metadata = try entries(m.metadata_props, m.n_metadata_props, "metadata_props")
    let graph = try self.graph(graphMessage)
    let functions = try messages(m.functions, m.n_functions, "functions").map(function)
    return ONNXModel(
      irVersion: Int(m.ir_version), opsetImports: opsetImports,
      producerName: try text(m.producer_name, "producer_name"),
      producerVersion: try text(m.producer_version, "producer_version"), domain: try text(m.domain, "domain"),
      modelVersion: Int(m.model_version), docString: try text(m.doc_string, "doc_string"), metadataProps: metadata,
      graph: graph, functions: functions, externalDataFiles: externalFiles.sorted())
  }

  func graph(_ g: Onnx__GraphProto) throws -> ONNXGraph {
    let name = try text(g.name, "graph name")
    return try within("graph '\(name)'") {
      if let sparse = try messages(g.sparse_initializer, g.n_sparse_initializer, "sparse_initializer").first {
        let name = try sparse.values.map { try text($0.pointee.name, "sparse_initializer name") } ?? ""
        throw unsupported("sparse initializer '\(name)' (sparse tensors are not read)")
      }
      let nodes = try messages(g.node, g.n_node, "node").enumerated().map { index, node in
        try self.node(node, index: index)
      }
      let initializers = try messages(g.initializer, g.n_initializer, "initializer").enumerated().map {
        index, message in
        let tensorName = try text(message.name, "initializer[\(index)] name")
        guard !tensorName.isEmpty else { throw invalid("initializer #\(index) has no name") }
        return try within("initializer '\(tensorName)'") { try tensor(message) }
      }
      return ONNXGraph(
        name: name, nodes: nodes, initializers: initializers,
        inputs: try values(g.input, g.n_input, "input"), outputs: try values(g.output, g.n_output, "output"),
        valueInfo: try values(g.value_info, g.n_value_info, "value_info"),
        docString: try text(g.doc_string, "doc_string"))
    }
  }

  func node(_ n: Onnx__NodeProto, index: Int) throws -> ONNXNode {
    let name = try text(n.name, "node #\(index) name")
    let opType = try text(n.op_type, "node #\(index) op_type")
    let label = name.isEmpty ? "node #\(index) (\(opType))" : "node '\(name)' (\(opType))"
    return try within(label) {
      guard !opType.isEmpty else { throw invalid("op_type is empty") }
      let attributes = try messages(n.attribute, n.n_attribute, "attribute").map(attribute)
      var seen = Set<String>()
      for attribute in attributes where !seen.insert(attribute.name).inserted {
        throw invalid("attribute '\(attribute.name)' is given twice")
      }
      return ONNXNode(
        name: name, opType: opType, domain: try text(n.domain, "domain"),
        inputs: try texts(n.input, n.n_input, "input"),
        outputs: try texts(n.output, n.n_output, "output"),
        attributes: attributes,
        docString: try text(n.doc_string, "doc_string"))
    }
  }

  func function(_ f: Onnx__FunctionProto) throws -> ONNXFunction {
    let name = try text(f.name, "function name")
    let domain = try text(f.domain, "function domain")
    return try within("function '\(name)' (domain '\(domain)')") {
      guard !name.isEmpty else { throw invalid("the function has no name") }
      return ONNXFunction(
        name: name, domain: domain, inputs: try texts(f.input, f.n_input, "input"),
        outputs: try texts(f.output, f.n_output, "output"),
        attributeNames: try texts(f.attribute, f.n_attribute, "attribute"),
        attributeDefaults: try messages(f.attribute_proto, f.n_attribute_proto, "attribute_proto").map(attribute),
        nodes: try messages(f.node, f.n_node, "node").enumerated().map { index, node in
          try self.node(node, index: index)
        },
        opsetImports: try opsets(f.opset_import, f.n_opset_import), docString: try text(f.doc_string, "doc_string"))
    }
  }

  /// A graph's inputs, outputs or value_info entries.
  func values(
    _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<Onnx__ValueInfoProto>?>?, _ count: Int, _ field: String
  ) throws -> [ONNXValueInfo] {
    try messages(pointer, count, field).enumerated().map { index, info in
      let name = try text(info.name, "\(field)[\(index)] name")
      return try within(name.isEmpty ? "\(field) #\(index)" : "\(field) '\(name)'") {
        guard !name.isEmpty else { throw invalid("the value has no name") }
        return ONNXValueInfo(
          name: name, type: try info.type.map { try type($0.pointee) } ?? .unspecified,
          docString: try text(info.doc_string, "doc_string"))
      }
    }
  }
}
