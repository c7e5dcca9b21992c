import Foundation
import ONNXFormat
import ONNXTestSupport
import Testing

/// What known conformance files hold, checked against values from outside the files: the ONNX 1.12
/// test generators (onnx/backend/test/case/node/*.py, which wrote these files) and numeric relations
/// between a test's input and output files.
@Suite struct ModelFactsTests {
  /// conv.py, export_conv_with_strides: Conv with kernel_shape [3, 3], pads [1, 1, 1, 1], strides
  /// [2, 2]; x is 0..<35 as (1, 1, 7, 5), W ones (1, 1, 3, 3), y (1, 1, 4, 3) as listed there.
  @Test func convWithStridesPadding() throws {
    let folder = ONNXTestData.test("node", "test_conv_with_strides_padding")
    let model = try ONNXModelReader.read(contentsOf: folder.appendingPathComponent("model.onnx"))
    #expect(model.irVersion >= 3 && model.opsetVersion(domain: "") ?? 0 >= 1)
    #expect(model.producerName == "backend-test")
    #expect(model.graph.nodes.count == 1)
    let conv = try #require(model.graph.nodes.first)
    #expect(conv.opType == "Conv" && conv.domain == "" && conv.inputs == ["x", "W"] && conv.outputs == ["y"])
    #expect(conv.attribute("kernel_shape") == .ints([3, 3]))
    #expect(conv.attribute("pads") == .ints([1, 1, 1, 1]))
    #expect(conv.attribute("strides") == .ints([2, 2]))
    #expect(conv.attribute("group") == nil)
    #expect(model.graph.inputs.map(\.name) == ["x", "W"])
    #expect(model.graph.inputs[0].elementType == .float)
    #expect(model.graph.inputs[0].shape == [.value(1), .value(1), .value(7), .value(5)])
    #expect(model.graph.inputs[1].shape == [.value(1), .value(1), .value(3), .value(3)])
    #expect(model.graph.outputs[0].shape == [.value(1), .value(1), .value(4), .value(3)])

    let data = folder.appendingPathComponent("test_data_set_0")
    let x = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("input_0.pb"))
    #expect(x.name == "x" && x.dataType == .float && x.dims == [1, 1, 7, 5])
    #expect(try x.floatValues() == (0..<35).map(Float.init))
    let w = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("input_1.pb"))
    #expect(try w.floatValues() == [Float](repeating: 1, count: 9))
    let y = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("output_0.pb"))
    #expect(y.dims == [1, 1, 4, 3])
    #expect(try y.floatValues() == [12, 27, 24, 63, 108, 81, 123, 198, 141, 112, 177, 124])
  }

  /// abs.py: x is random (3, 4, 5) float32 and y = |x|, so the two files must agree value by value.
  @Test func absOutputIsAbsoluteInput() throws {
    let data = ONNXTestData.test("node", "test_abs").appendingPathComponent("test_data_set_0")
    let x = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("input_0.pb"))
    let y = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("output_0.pb"))
    #expect(x.dims == [3, 4, 5] && y.dims == [3, 4, 5])
    let input = try x.floatValues()
    #expect(input.contains { $0 < 0 })
    #expect(try y.floatValues() == input.map(abs))
  }

  /// cast.py: the FLOAT16 output is the float32 input rounded to half precision, the DOUBLE output the
  /// input widened; both decode through their own storage.
  @Test func castOutputsMatchTheirInputs() throws {
    for (test, convert) in [
      ("test_cast_FLOAT_to_FLOAT16", { (x: Float) in Float(Float16(x)) }), ("test_cast_FLOAT_to_DOUBLE", { $0 }),
    ] {
      let data = ONNXTestData.test("node", test).appendingPathComponent("test_data_set_0")
      let x = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("input_0.pb"))
      let y = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("output_0.pb"))
      #expect(y.dataType == (test.hasSuffix("FLOAT16") ? .float16 : .double))
      #expect(try y.floatValues() == x.floatValues().map(convert), "\(test)")
    }
  }

  /// where.py, export (long): condition [[1, 0], [1, 1]], x [[1, 2], [3, 4]], y [[9, 8], [7, 6]] give [[1, 8], [3, 4]].
  @Test func whereExampleBooleans() throws {
    let data = ONNXTestData.test("node", "test_where_example").appendingPathComponent("test_data_set_0")
    let condition = try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("input_0.pb"))
    #expect(condition.dataType == .bool && condition.storage == .bool([true, false, true, true]))
    #expect(try condition.intValues() == [1, 0, 1, 1])
    #expect(
      try ONNXTensorReader.read(contentsOf: data.appendingPathComponent("output_0.pb")).floatValues() == [1, 8, 3, 4])
  }

  /// constantofshape.py, export_float_ones: the value attribute is a one-element FLOAT tensor 1, the
  /// INT64 input shape [4, 3, 2].
  @Test func constantOfShapeTensorAttribute() throws {
    let folder = ONNXTestData.test("node", "test_constantofshape_float_ones")
    let node = try #require(
      try ONNXModelReader.read(contentsOf: folder.appendingPathComponent("model.onnx")).graph.nodes.first)
    let value = try #require(node.attribute("value")?.tensor)
    #expect(value.dataType == .float && value.dims == [1] && value.storage == .float32([1]))
    let shape = try ONNXTensorReader.read(contentsOf: folder.appendingPathComponent("test_data_set_0/input_0.pb"))
    #expect(shape.dataType == .int64)
    #expect(try shape.intValues() == [4, 3, 2])
    #expect(throws: ONNXFormatError.self) { try value.intValues() }
  }

  /// strnormalizer.py, export_monday_casesensintive_nochangecase: stopwords ["monday"] take "monday"
  /// out of ["monday", "tuesday", "wednesday", "thursday"].
  @Test func stringTensorsAndAttributes() throws {
    let folder = ONNXTestData.test("node", "test_strnormalizer_export_monday_casesensintive_nochangecase")
    let node = try #require(
      try ONNXModelReader.read(contentsOf: folder.appendingPathComponent("model.onnx")).graph.nodes.first)
    #expect(node.opType == "StringNormalizer" && node.attribute("stopwords") == .strings(["monday"]))
    #expect(node.attribute("is_case_sensitive") == .int(1))
    let x = try ONNXTensorReader.read(contentsOf: folder.appendingPathComponent("test_data_set_0/input_0.pb"))
    #expect(x.storage == .string(["monday", "tuesday", "wednesday", "thursday"]))
    let y = try ONNXTensorReader.read(contentsOf: folder.appendingPathComponent("test_data_set_0/output_0.pb"))
    #expect(y.storage == .string(["tuesday", "wednesday", "thursday"]))
  }

  /// if.py: the If node's then_branch and else_branch are graphs, each with one Constant node.
  @Test func subgraphAttributes() throws {
    let model = try ONNXModelReader.read(contentsOf: ONNXTestData.model("node", "test_if"))
    let node = try #require(model.graph.nodes.first)
    #expect(node.opType == "If")
    let then = try #require(node.attribute("then_branch")?.graph)
    let otherwise = try #require(node.attribute("else_branch")?.graph)
    #expect(then.nodes.map(\.opType) == ["Constant"] && otherwise.nodes.map(\.opType) == ["Constant"])
    #expect(try then.nodes[0].attribute("value")?.tensor?.floatValues() == [1, 2, 3, 4, 5])
    #expect(try otherwise.nodes[0].attribute("value")?.tensor?.floatValues() == [5, 4, 3, 2, 1])
  }
}
