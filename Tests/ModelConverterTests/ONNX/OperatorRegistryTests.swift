import Foundation
import ModelConverter
import ONNXFormat
import TestSupport
import Testing

/// The ONNX operators converted are the registry's keys: the README's list is that list (with the opsets
/// each handler starts at), and `inspect` marks an operator supported exactly when the registry has it.
@Suite struct OperatorRegistryTests {
  /// The README paragraph as the registry makes it.
  static var expectedParagraph: String {
    ONNXOperatorRegistry.supported.map { "`\($0.opType)` (\($0.since.map(String.init).joined(separator: ", ")))" }
      .joined(separator: ", ") + "."
  }

  @Test func readmeListsExactlyTheRegisteredOperators() throws {
    let readme = try String(contentsOf: Fixtures.packageRoot.appendingPathComponent("Docs/ONNX.md"), encoding: .utf8)
    let marker =
      "ONNX operators converted (the keys of `ONNXOperatorRegistry` with the opsets each handler starts at):\n"
    let start = try #require(readme.range(of: marker))
    let paragraph = String(readme[start.upperBound...]).components(separatedBy: "\n\n")[0].replacingOccurrences(
      of: "\n", with: " ")
    #expect(paragraph == Self.expectedParagraph, "Docs/ONNX.md should read:\n\(Self.expectedParagraph)")
  }

  /// `inspect --json` carries the same table (`onnx.supportedOperators`).
  @Test func inspectionListsTheRegistry() throws {
    let inspection = try ModelInspector.inspect(contentsOf: Fixtures.url("onnx/tiny_cnn.onnx"))
    let table = try #require(inspection.graphDetails).supportedOperators
    #expect(table.map(\.opType) == ONNXOperatorRegistry.supported.map(\.opType))
    #expect(table.map(\.since) == ONNXOperatorRegistry.supported.map(\.since))
    #expect(table.contains { $0.opType == "Conv" } && table.contains { $0.opType == "LRN" })
  }

  @Test func everyHandlerAnswersFromItsOwnOpsetOn() {
    for (opType, since) in ONNXOperatorRegistry.supported {
      #expect(!since.isEmpty && since == since.sorted(), "\(opType)")
      for version in since {
        #expect(
          ONNXOperatorRegistry.entry(domain: "", opType: opType, opset: version)?.since == version,
          "\(opType) \(version)")
      }
      #expect(
        ONNXOperatorRegistry.entry(domain: "", opType: opType, opset: since[0] - 1) == nil,
        "\(opType) before \(since[0])")
      #expect(ONNXOperatorRegistry.entry(domain: "com.example", opType: opType, opset: since[0]) == nil)
    }
  }
}

/// What operators say of a layout is a fact on their registry entries, as ONNX's operator
/// definitions state it: elementwise and explicit-axis operators pass a layout through, the spatial
/// operators compute on `[N, C, ...]`, the others have their own.
@Suite struct OperatorLayoutTests {
  @Test func layoutsAreOnTheEntries() {
    for op in ["Relu", "Add", "Mul", "Sqrt", "Cast", "Identity", "Dropout", "Pad", "Slice", "Clip", "LeakyRelu"] {
      #expect(ONNXOperatorRegistry.layout(of: op) == .neutral, "\(op)")
    }
    for op in [
      "Conv", "ConvTranspose", "MaxPool", "AveragePool", "GlobalAveragePool", "BatchNormalization",
      "InstanceNormalization", "LRN", "Resize", "PRelu",
    ] {
      #expect(ONNXOperatorRegistry.layout(of: op) == .channelsFirst, "\(op)")
    }
    for op in ["Transpose", "Reshape", "Flatten", "Gemm", "ReduceMean", "Concat", "Softmax", "NoSuchOperator"] {
      #expect(ONNXOperatorRegistry.layout(of: op) == .own, "\(op)")
    }
  }
}
