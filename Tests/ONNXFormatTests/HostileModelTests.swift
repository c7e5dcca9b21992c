import Foundation
import ONNXFormat
import ONNXTestSupport
import Testing

/// Corrupt and hostile bytes: each is refused with an `ONNXFormatError` saying what is wrong and
/// where, never a crash.
@Suite struct HostileModelTests {
  static let conv = ONNXTestData.model("node", "test_conv_with_strides_padding")

  @Test func everyTruncationIsRefusedOrReadsAPrefix() throws {
    let bytes = [UInt8](try Data(contentsOf: Self.conv))
    #expect(bytes.count > 100)
    var refused = 0
    for length in 1..<bytes.count {
      do {
        _ = try ONNXModelReader.read(bytes: Array(bytes.prefix(length)), path: "/m/model.onnx")
      } catch is ONNXFormatError { refused += 1 }
    }
    // Only cuts at a top-level field boundary can decode, and then must still hold a graph and opsets.
    #expect(refused == bytes.count - 1)
    let lastByteCut = modelRefusal(Array(bytes.dropLast()), path: "/m/model.onnx")
    guard case .malformed(let path, _)? = lastByteCut else {
      Issue.record("a cut-off file is \(String(describing: lastByteCut)), not malformed")
      return
    }
    #expect(path == "/m/model.onnx")
  }

  @Test func flippedBytesNeverCrash() throws {
    let bytes = [UInt8](try Data(contentsOf: Self.conv))
    var refused = 0
    for index in bytes.indices {
      for pattern: UInt8 in [0xFF, 0x80, 0x01] {
        var copy = bytes
        copy[index] ^= pattern
        #expect(readsOrRefuses(copy), "byte \(index) ^ \(pattern)")
        if (try? ONNXModelReader.read(bytes: copy, path: "/m/model.onnx")) == nil { refused += 1 }
      }
    }
    #expect(refused > bytes.count)
  }

  @Test func tensorSizesAreChecked() {
    func initializerError(_ tensor: [UInt8]) -> String {
      modelRefusal(ONNXProtos.model(initializer: tensor))?.description ?? ""
    }
    let overflow = initializerError(ONNXProtos.tensor(name: "W", dims: [1 << 40, 1 << 40], raw: []))
    #expect(overflow.contains("initializer 'W'") && overflow.contains("more than 2147483648 elements"), "\(overflow)")
    let negative = initializerError(ONNXProtos.tensor(name: "W", dims: [-1, 4], raw: []))
    #expect(negative.contains("initializer 'W': dims[0] is -1"), "\(negative)")
    let short = initializerError(ONNXProtos.tensor(name: "W", dims: [2, 2], raw: littleEndian([1, 2, 3])))
    #expect(short.contains("raw_data holds 12 bytes; 4 FLOAT values (dims [2, 2]) take 16"), "\(short)")
    let long = initializerError(ONNXProtos.tensor(name: "W", dims: [1], raw: littleEndian([1, 2])))
    #expect(long.contains("raw_data holds 8 bytes"), "\(long)")
    let typedCount = initializerError(ONNXProtos.tensor(name: "W", dims: [2, 2]) { $0.packedFloats(4, [1, 2, 3]) })
    #expect(typedCount.contains("float_data holds 3 values; dims [2, 2] need 4"), "\(typedCount)")
    let noData = initializerError(ONNXProtos.tensor(name: "W", dims: [3]))
    #expect(noData.contains("holds no data"), "\(noData)")
    let wrongField = initializerError(ONNXProtos.tensor(name: "W", dims: [1]) { $0.packed(7, [5]) })
    #expect(wrongField.contains("int64_data is set on a FLOAT tensor"), "\(wrongField)")
    let both = initializerError(
      ONNXProtos.tensor(name: "W", dims: [1], raw: littleEndian([1])) { $0.packedFloats(4, [1]) })
    #expect(both.contains("both raw_data and float_data"), "\(both)")
    let unknownType = initializerError(ONNXProtos.tensor(name: "W", dims: [1], dataType: 99, raw: [0]))
    #expect(unknownType.contains("data_type 99 is not an ONNX element type"), "\(unknownType)")
    let undefined = initializerError(ONNXProtos.tensor(name: "W", dims: [1], dataType: 0, raw: [0]))
    #expect(undefined.contains("UNDEFINED"), "\(undefined)")
    let int8Range = initializerError(ONNXProtos.tensor(name: "W", dims: [2], dataType: 3) { $0.packed(5, [1, 200]) })
    #expect(int8Range.contains("int32_data[1] is 200, outside INT8"), "\(int8Range)")
    let boolByte = initializerError(ONNXProtos.tensor(name: "W", dims: [2], dataType: 9, raw: [1, 2]))
    #expect(boolByte.contains("raw_data byte 1 is 2"), "\(boolByte)")
    let complex = modelRefusal(
      ONNXProtos.model(
        initializer: ONNXProtos.tensor(name: "C", dims: [1], dataType: 14, raw: [UInt8](repeating: 0, count: 8))))
    #expect(
      complex?.description.contains("not supported: COMPLEX64 tensors are not read") == true,
      "\(String(describing: complex))")
    let unnamed = initializerError(ONNXProtos.tensor(name: "", dims: [1], raw: littleEndian([1])))
    #expect(unnamed.contains("initializer #0 has no name"), "\(unnamed)")
  }

  @Test func errorsNameTheNodeAndAttribute() {
    let pads = ONNXProtos.attribute("pads", type: 7) { $0.float(2, 1) }  // INTS, but sets f
    let graph = ONNXProtos.graph(
      name: "main", nodes: [ONNXProtos.node("Relu"), ONNXProtos.node("Conv", name: "conv1", attributes: [pads])])
    let error = modelRefusal(ONNXProtos.model(graph: graph))?.description ?? ""
    #expect(
      error
        == "/models/m.onnx: graph 'main': node 'conv1' (Conv): attribute 'pads': the attribute's type says ints, but it sets f"
    )
    // An unnamed node (NULL name) is numbered.
    let untyped = ONNXProtos.graph(
      name: "main",
      nodes: [ONNXProtos.node("Relu", attributes: [ONNXProtos.attribute("alpha", type: 0) { $0.float(2, 1) }])])
    #expect(
      modelRefusal(ONNXProtos.model(graph: untyped))?.description.contains(
        "graph 'main': node #0 (Relu): attribute 'alpha': the attribute has no type") == true)
    let unknownType = ONNXProtos.graph(nodes: [
      ONNXProtos.node("Relu", attributes: [ONNXProtos.attribute("a", type: 42) { _ in }])
    ])
    #expect(
      modelRefusal(ONNXProtos.model(graph: unknownType))?.description.contains(
        "attribute type 42 is not an ONNX attribute type") == true)
    let reference = ONNXProtos.attribute("alpha", type: 1) { $0.string(21, "outer") }
    let refusal = modelRefusal(
      ONNXProtos.model(graph: ONNXProtos.graph(nodes: [ONNXProtos.node("Elu", attributes: [reference])])))
    #expect(refusal?.description.contains("not supported: it refers to the function attribute 'outer'") == true)
    let noOp = modelRefusal(ONNXProtos.model(graph: ONNXProtos.graph(nodes: [ONNXProtos.node("")])))
    #expect(noOp?.description.contains("op_type is empty") == true)
  }

  @Test func modelFieldsAreChecked() {
    #expect(
      modelRefusal(ONNXProtos.model(irVersion: 11))?.description.contains(
        "ir_version is 11; the reader reads IR versions 3 (ONNX 1.0) to 10") == true)
    #expect(modelRefusal(ONNXProtos.model(irVersion: 2))?.description.contains("ir_version is 2") == true)
    #expect(modelRefusal(ONNXProtos.model(irVersion: nil))?.description.contains("ir_version is missing") == true)
    #expect(modelRefusal(ONNXProtos.model(opsets: [("", 0)]))?.description.contains("has version 0") == true)
    #expect(modelRefusal(ONNXProtos.model(opsets: []))?.description.contains("imports no operator set") == true)
    #expect(modelRefusal(ONNXProtos.model(opsets: [("", 13), ("ai.onnx", 12)]))?.description.contains("twice") == true)
    #expect(modelRefusal(ONNXProtos.model(graph: nil))?.description.contains("the model has no graph") == true)
    let negativeDim = ONNXProtos.graph(inputs: [ONNXProtos.valueInfo("x", shape: [Int64(1), Int64(-3)])])
    #expect(
      modelRefusal(ONNXProtos.model(graph: negativeDim))?.description.contains("input 'x': shape dimension 1 is -3")
        == true)
  }

  @Test func aValidSyntheticModelReads() throws {
    let weights = ONNXProtos.tensor(name: "W", dims: [2, 3], raw: littleEndian([1, -2, 3.5, 0, 1e-3, -0]))
    let alpha = ONNXProtos.attribute("alpha", type: 1) { $0.float(2, 0.25) }
    let graph = ONNXProtos.graph(
      name: "main",
      nodes: [ONNXProtos.node("LeakyRelu", name: "act", inputs: ["x"], outputs: ["y"], attributes: [alpha])],
      initializers: [weights],
      inputs: [ONNXProtos.valueInfo("x", shape: ["N", Int64(3), ""])],
      outputs: [ONNXProtos.valueInfo("y", elementType: 10)])
    let model = try ONNXModelReader.read(
      bytes: ONNXProtos.model(opsets: [("ai.onnx", 13), ("com.example", 2)], graph: graph))
    #expect(model.irVersion == 8 && model.opsetImports == ["": 13, "com.example": 2] && model.producerName == "tests")
    #expect(
      model.graph.nodes == [
        ONNXNode(
          name: "act", opType: "LeakyRelu", domain: "", inputs: ["x"], outputs: ["y"],
          attributes: [.init(name: "alpha", value: .float(0.25))], docString: "")
      ])
    #expect(
      model.graph.initializer(named: "W")
        == ONNXTensor(name: "W", dataType: .float, dims: [2, 3], storage: .float32([1, -2, 3.5, 0, 1e-3, -0])))
    #expect(model.graph.inputs[0].type == .tensor(elementType: .float, shape: [.symbol("N"), .value(3), .unknown]))
    #expect(model.graph.outputs[0].type == .tensor(elementType: .float16, shape: nil))
  }

  /// protobuf-c decodes recursively without a depth limit: deep nesting must be refused before it runs.
  @Test func deepNestingIsRefused() {
    // A value whose type is sequence(sequence(... tensor ...)), 100 000 deep: about 500 kB.
    var type = ProtoWire.message { $0.bytes(1, ProtoWire.message { $0.int(1, 1) }) }
    for _ in 0..<100_000 { type = ProtoWire.message { w in w.bytes(4, ProtoWire.message { $0.bytes(1, type) }) } }
    let input = ProtoWire.message { w in
      w.string(1, "x")
      w.bytes(2, type)
    }
    let deep = modelRefusal(ONNXProtos.model(graph: ONNXProtos.graph(inputs: [input])))
    #expect(deep?.description.contains("nested more than 64 deep") == true, "\(String(describing: deep))")
    // Graphs inside If attributes inside graphs, 1000 deep.
    var graph = ONNXProtos.graph()
    for _ in 0..<1000 {
      graph = ONNXProtos.graph(nodes: [
        ONNXProtos.node("If", attributes: [ONNXProtos.attribute("then_branch", type: 5) { $0.bytes(6, graph) }])
      ])
    }
    #expect(modelRefusal(ONNXProtos.model(graph: graph))?.description.contains("nested more than") == true)
    // A few levels are fine.
    var shallow = ONNXProtos.graph(name: "inner")
    for _ in 0..<5 {
      shallow = ONNXProtos.graph(nodes: [
        ONNXProtos.node("If", attributes: [ONNXProtos.attribute("then_branch", type: 5) { $0.bytes(6, shallow) }])
      ])
    }
    #expect((try? ONNXModelReader.read(bytes: ONNXProtos.model(graph: shallow))) != nil)
  }

  @Test func malformedWireDataIsNamed() {
    // Field 7 (graph) claims 1000 bytes where 3 follow.
    let error = modelRefusal([0x08, 0x08, 0x3A, 0xE8, 0x07, 1, 2, 3])
    #expect(
      error?.description.contains(
        "not a valid ONNX file (truncated or corrupt protobuf): field 7 at byte 2 claims 1000 bytes, 3 are left")
        == true, "\(String(describing: error))")
    #expect(modelRefusal([0x08, 0x08, 0x0B])?.description.contains("wire type 3") == true)
  }
}
