import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ONNXFormat
import ONNXTestSupport
import ReferenceRuntime
import TestSupport
import Testing

/// Forms other exporters write (issue 35). Expected values are ONNX's documented semantics computed by hand.
@Suite struct ExporterIdiomsTests {
  /// `Pad` in reflect and edge modes (PyTorch's ReflectionPad2d and ReplicationPad2d export so): on
  /// `[1, 2, 3, 4]` padded by 2 on both sides, reflect gives `[3, 2, 1, 2, 3, 4, 3, 2]` (the border is
  /// not repeated) and edge `[1, 1, 1, 2, 3, 4, 4, 4]`.
  @Test(arguments: [("reflect", [Float](arrayLiteral: 3, 2, 1, 2, 3, 4, 3, 2)), ("edge", [1, 1, 1, 2, 3, 4, 4, 4])])
  func padModes(mode: String, expected: [Float]) throws {
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "Pad", name: "pad", inputs: ["x", "pads"], outputs: ["y"],
          attributes: [ONNXTestModels.stringAttribute("mode", mode)])
      ],
      inputs: [("x", [1, 4])], outputs: [("y", [1, 8])],
      initializers: [ONNXTestModels.int64s("pads", [4], [0, 2, 0, 2])], opset: 13)
    let source = try ONNXFrontend.source(model, path: "pad.onnx", options: SourceOptions())
    let output = Interpreter(graph: source.graph, kernels: .direct).run([
      Tensor(shape: source.graph[source.graph.inputs[0]].type.shape, values: [1, 2, 3, 4])
    ])
    #expect(output[0].values == expected)
    try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
    try ONNXTestModels.convertAndVerify(model, format: .mlProgram)
  }

  /// Reflect pads as large as the axis are not defined (onnxruntime refuses them): refused, naming the node.
  @Test func reflectPadsBeyondTheAxisAreRefused() throws {
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "Pad", name: "pad", inputs: ["x", "pads"], outputs: ["y"],
          attributes: [ONNXTestModels.stringAttribute("mode", "reflect")])
      ],
      inputs: [("x", [1, 4])], outputs: [("y", [1, 12])],
      initializers: [ONNXTestModels.int64s("pads", [4], [0, 4, 0, 4])], opset: 13)
    #expect(throws: ONNXImportError.self) { try ONNXFrontend.source(model, path: "pad.onnx", options: SourceOptions()) }
  }

  /// `Div` of two computed tensors and by a constant in a classic network (a multiply by the inverse; it
  /// was refused as having no classic layer), against the source within verify's float32 rule.
  @Test func divisionIsWrittenInAClassicNetwork() throws {
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node("Sigmoid", name: "s", inputs: ["x"], outputs: ["d"]),
        ONNXProtos.node("Div", name: "ratio", inputs: ["x", "d"], outputs: ["r"]),
        ONNXProtos.node("Div", name: "scaled", inputs: ["r", "k"], outputs: ["y"]),
      ],
      inputs: [("x", [1, 4])], outputs: [("y", [1, 4])],
      initializers: [ONNXTestModels.floats("k", [4], [3, -7, 0.25, 11])], opset: 13)
    let written = try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
    let spec = try CoreMLSpecReader.read(contentsOf: written)
    #expect(spec.layers.contains { $0.kind.hasPrefix("unary") }, "\(spec.layers.map(\.kind))")
  }

  /// Softmax over an axis other than the last in a classic network (it was refused): the axis moved to
  /// Core ML's channels, the softmax, and back; a rank-2 sequence and a rank-3 tensor.
  @Test(arguments: [([1, 3, 4], 1), ([1, 2, 3, 4], 2), ([1, 2, 3, 4], 1)])
  func softmaxOverAnyAxisInAClassicNetwork(shape: [Int], axis: Int) throws {
    let model = try ONNXTestModels.model(
      nodes: [
        ONNXProtos.node(
          "Softmax", name: "soft", inputs: ["x"], outputs: ["y"],
          attributes: [ONNXTestModels.intAttribute("axis", axis)])
      ],
      inputs: [("x", shape)], outputs: [("y", shape)], opset: 13)
    try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
  }

  /// `If` and `Loop` are imported only where the model fixes what they do when it is read: an `If` whose
  /// condition is computed from the data, and a `Loop` whose body's condition is, are refused naming the node.
  @Test func controlFlowThatDependsOnTheDataIsRefused() throws {
    var ifModel = try ONNXModelReader.read(contentsOf: Fixtures.url("onnx/control_flow/if_shape_test.onnx"))
    let ifIndex = try #require(ifModel.graph.nodes.firstIndex { $0.opType == "If" })
    ifModel.graph.nodes[ifIndex].inputs = ["X"]
    #expect {
      _ = try ONNXGraphImporter.importGraph(ifModel, path: "if.onnx")
    } throws: { error in
      guard case ONNXImportError.invalidNode(_, _, let opType, let detail) = error else { return false }
      return opType == "If" && detail.contains("cond")
    }

    var loopModel = try ONNXModelReader.read(contentsOf: Fixtures.url("onnx/control_flow/loop_rnn.onnx"))
    let loopIndex = try #require(loopModel.graph.nodes.firstIndex { $0.opType == "Loop" })
    guard case .graph(var body)? = loopModel.graph.nodes[loopIndex].attribute("body") else {
      Issue.record("no body")
      return
    }
    // The body's condition becomes a value it computes (its state), after the state is computed.
    body.nodes.removeFirst()
    body.nodes.append(ONNXNode(name: "cond_from_data", opType: "Identity", inputs: ["h_out"], outputs: ["cond_out"]))
    let attributeIndex = try #require(loopModel.graph.nodes[loopIndex].attributes.firstIndex { $0.name == "body" })
    loopModel.graph.nodes[loopIndex].attributes[attributeIndex].value = .graph(body)
    #expect {
      _ = try ONNXGraphImporter.importGraph(loopModel, path: "loop.onnx")
    } throws: { error in
      guard case ONNXImportError.invalidNode(_, _, let opType, let detail) = error else { return false }
      return opType == "Loop" && detail.contains("stops on its data")
    }
  }

  /// tf2onnx's Keras Embedding on float ids: `Cast(to INT32)` of a computed float tensor read by a Gather
  /// from a constant table converts (the embedding looks the ids up as whole numbers); the same cast read
  /// by anything else is refused, naming the Cast node.
  @Test func floatIdsCastToIntegersOnlyAsEmbeddingIds() throws {
    let table = ONNXTestModels.floats("table", [10, 4], (0..<40).map { Float($0) / 10 })
    let cast = ONNXProtos.node(
      "Cast", name: "to_ids", inputs: ["x"], outputs: ["ids"], attributes: [ONNXTestModels.intAttribute("to", 6)])
    let embedding = try ONNXTestModels.model(
      nodes: [cast, ONNXProtos.node("Gather", name: "lookup", inputs: ["table", "ids"], outputs: ["y"])],
      inputs: [("x", [1, 5])], outputs: [("y", [1, 5, 4])], initializers: [table], opset: 13)
    for format in [ModelFormat.mlProgram, .neuralNetwork] {
      try ONNXTestModels.convertAndVerify(embedding, format: format)
    }
    let arithmetic = try ONNXTestModels.model(
      nodes: [
        cast,
        ONNXProtos.node(
          "Cast", name: "back", inputs: ["ids"], outputs: ["y"], attributes: [ONNXTestModels.intAttribute("to", 1)]),
      ],
      inputs: [("x", [1, 5])], outputs: [("y", [1, 5])], opset: 13)
    #expect {
      _ = try ONNXGraphImporter.importGraph(arithmetic, path: "m.onnx")
    } throws: { error in
      guard case ONNXImportError.invalidNode(_, let node, let opType, let detail) = error else { return false }
      return node == "to_ids" && opType == "Cast" && detail.contains("embedding")
    }
  }

  /// A reduction over the steps of a sequence (tf2onnx's GlobalAveragePooling1D is ReduceMean over axis 1
  /// of `[1, T, C]`) in a classic network: the steps moved into a row, a global pooling, for a sum times T.
  @Test(arguments: ["ReduceMean", "ReduceMax", "ReduceSum"])
  func reductionOverStepsInAClassicNetwork(_ opType: String) throws {
    var attributes = [ONNXTestModels.intAttribute("keepdims", 0)]
    var inputs = ["x"]
    var initializers: [[UInt8]] = []
    if opType == "ReduceSum" {
      inputs.append("axes")
      initializers.append(ONNXProtos.tensor(name: "axes", dims: [1], dataType: 7, raw: (0..<8).map { $0 == 0 ? 1 : 0 }))
    } else {
      attributes.append(ONNXTestModels.intsAttribute("axes", [1]))
    }
    let model = try ONNXTestModels.model(
      nodes: [ONNXProtos.node(opType, name: "pool", inputs: inputs, outputs: ["y"], attributes: attributes)],
      inputs: [("x", [1, 6, 4])], outputs: [("y", [1, 4])], initializers: initializers, opset: 13)
    let written = try ONNXTestModels.convertAndVerify(model, format: .neuralNetwork)
    let spec = try CoreMLSpecReader.read(contentsOf: written)
    #expect(spec.layers.contains { $0.kind == "pooling" }, "\(spec.layers.map(\.kind))")
  }
}
