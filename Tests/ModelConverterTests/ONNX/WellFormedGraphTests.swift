import Foundation
import ModelConverter
import ONNXFormat
import ONNXTestSupport
import Testing

/// A graph that is not in ONNX's single-assignment form is refused at import, naming what clashes
/// (issue 34): duplicates, dangling references, outputs nothing computes, no outputs, an initializer
/// that is a graph input of another shape, an attribute given twice, an operator input left empty.
@Suite struct WellFormedGraphTests {
  static func importError(
    nodes: [[UInt8]], inputs: [(String, [Int])] = [("x", [1, 4])], outputs: [(String, [Int])] = [("y", [1, 4])],
    initializers: [[UInt8]] = []
  ) -> String? {
    do {
      let model = try ONNXTestModels.model(
        nodes: nodes, inputs: inputs, outputs: outputs, initializers: initializers, opset: 13)
      _ = try ONNXFrontend.source(model, path: "m.onnx", options: SourceOptions(), constants: [:])
      return nil
    } catch {
      return "\(error)"
    }
  }

  @Test func aWellFormedGraphImports() {
    #expect(Self.importError(nodes: [ONNXProtos.node("Relu", inputs: ["x"], outputs: ["y"])]) == nil)
  }

  @Test func clashesAreRefusedNamingBoth() {
    let relu = ONNXProtos.node("Relu", name: "r1", inputs: ["x"], outputs: ["y"])
    let cases: [(String?, [String])] = [
      // A second node computing the same value.
      (
        Self.importError(nodes: [relu, ONNXProtos.node("Sigmoid", name: "s1", inputs: ["x"], outputs: ["y"])]),
        ["node 's1' (Sigmoid) computes 'y'", "r1"]
      ),
      // A node reading a value nothing defines.
      (
        Self.importError(nodes: [ONNXProtos.node("Relu", name: "r1", inputs: ["nothing"], outputs: ["y"])]),
        ["reads 'nothing'", "no graph input"]
      ),
      // A value read before the node that computes it.
      (
        Self.importError(nodes: [
          ONNXProtos.node("Relu", name: "r2", inputs: ["t"], outputs: ["y"]),
          ONNXProtos.node("Relu", name: "r1", inputs: ["x"], outputs: ["t"]),
        ]), ["reads 't'"]
      ),
      // A declared output nothing computes.
      (Self.importError(nodes: [relu], outputs: [("y", [1, 4]), ("z", [1, 4])]), ["output 'z' is not computed"]),
      // An output declared twice, an input declared twice.
      (Self.importError(nodes: [relu], outputs: [("y", [1, 4]), ("y", [1, 4])]), ["output 'y' is declared twice"]),
      (
        Self.importError(nodes: [relu], inputs: [("x", [1, 4]), ("x", [1, 4])]), ["graph input 'x' is declared twice"]
      ),
      // No outputs at all.
      (Self.importError(nodes: [relu], outputs: []), ["declares no outputs"]),
      // An initializer given twice, one named like a node's output.
      (
        Self.importError(
          nodes: [relu],
          initializers: [
            ONNXTestModels.floats("w", [4], [1, 2, 3, 4]), ONNXTestModels.floats("w", [4], [1, 2, 3, 4]),
          ]), ["initializer 'w' is given twice"]
      ),
      (
        Self.importError(nodes: [relu], initializers: [ONNXTestModels.floats("y", [4], [1, 2, 3, 4])]),
        ["computes 'y', which is already an initializer"]
      ),
      // An initializer that is a graph input's default value, of another shape (this crashed in the reduction handler).
      (
        Self.importError(
          nodes: [
            ONNXProtos.node(
              "ReduceSum", name: "sum", inputs: ["x"], outputs: ["y"],
              attributes: [ONNXTestModels.intAttribute("keepdims", 1)])
          ],
          outputs: [("y", [1, 1])], initializers: [ONNXTestModels.floats("x", [2, 2], [1, 2, 3, 4])]),
        ["initializer 'x' has shape [2, 2]", "graph input of that name declares"]
      ),
      // An attribute given twice; a binary operator whose first input is left empty.
      (
        Self.importError(nodes: [
          ONNXProtos.node(
            "LeakyRelu", name: "l", inputs: ["x"], outputs: ["y"],
            attributes: [
              ONNXProtos.attribute("alpha", type: 1) { $0.float(2, 0.1) },
              ONNXProtos.attribute("alpha", type: 1) { $0.float(2, 0.2) },
            ])
        ]),
        ["attribute 'alpha' is given twice"]
      ),
      (
        Self.importError(nodes: [ONNXProtos.node("Add", name: "a", inputs: ["", "x"], outputs: ["y"])]),
        ["node 'a' (Add): input 0 is missing"]
      ),
    ]
    for (index, (error, fragments)) in cases.enumerated() {
      guard let error else {
        Issue.record("case \(index) imported: \(fragments)")
        continue
      }
      for fragment in fragments { #expect(error.contains(fragment), "case \(index): \(error)") }
      #expect(error.contains("m.onnx"), "case \(index) names no file: \(error)")
    }
  }
}
