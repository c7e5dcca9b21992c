import Foundation

/// Debian's libonnx-testdata: the ONNX conformance models (`<suite>/<test>/model.onnx`) with their
/// `test_data_set_N/{input,output}_K.pb` tensors. The tests fail, not skip, when it is missing
/// (Scripts/setup.sh and .ci/run install it).
public enum ONNXTestData {
  public static let root = URL(fileURLWithPath: "/usr/share/libonnx-testdata/data")
  /// The suites with models (`real/` holds only download links, no models).
  public static let suites = ["node", "pytorch-converted", "pytorch-operator", "simple"]

  /// The folder of one test, e.g. `test("node", "test_abs")`.
  public static func test(_ suite: String, _ name: String) -> URL {
    root.appendingPathComponent(suite).appendingPathComponent(name)
  }

  public static func model(_ suite: String, _ name: String) -> URL {
    test(suite, name).appendingPathComponent("model.onnx")
  }

  /// Every model.onnx of a suite, by test name.
  public static func models(in suite: String) -> [(name: String, url: URL)] {
    let folder = root.appendingPathComponent(suite)
    let names = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    return names.sorted().map { ($0, folder.appendingPathComponent($0).appendingPathComponent("model.onnx")) }
      .filter { FileManager.default.fileExists(atPath: $0.1.path) }
  }
}

extension ONNXTestData {
  /// How many models each suite of libonnx-testdata 1.12.0 holds (a smaller count means data is missing).
  public static let minimumModelCount = ["node": 932, "pytorch-converted": 82, "pytorch-operator": 35, "simple": 23]
}

extension ONNXTestData {
  /// How many tensor files of each suite hold tensors (node: 2887 .pb files, of which 51 hold sequences,
  /// maps or optionals).
  public static let minimumTensorFileCount = [
    "node": 2836, "pytorch-converted": 164, "pytorch-operator": 87, "simple": 67,
  ]
}

extension ONNXTestData {
  /// Files of ONNX 1.12's test data that disagree with their model, read as what they hold: the
  /// BFLOAT16 cast tests store their bfloat16 values as UINT16 tensors (numpy has no bfloat16), and
  /// the CastLike tests' second input (only its type matters) is one value where the model declares [3, 4].
  public static let tensorFileMismatches =
    [
      "test_cast_BFLOAT16_to_FLOAT/test_data_set_0/input_0.pb: uint16 tensor for a declared bfloat16",
      "test_cast_FLOAT_to_BFLOAT16/test_data_set_0/output_0.pb: uint16 tensor for a declared bfloat16",
    ]
    + ["test_castlike_BFLOAT16_to_FLOAT", "test_castlike_BFLOAT16_to_FLOAT_expanded"].flatMap {
      [
        "\($0)/test_data_set_0/input_0.pb: uint16 tensor for a declared bfloat16",
        "\($0)/test_data_set_0/input_1.pb: dims [1] for a declared tensor(FLOAT)[3, 4]",
      ]
    }
    + ["test_castlike_FLOAT_to_BFLOAT16", "test_castlike_FLOAT_to_BFLOAT16_expanded"].flatMap {
      [
        "\($0)/test_data_set_0/output_0.pb: uint16 tensor for a declared bfloat16",
        "\($0)/test_data_set_0/input_1.pb: uint16 tensor for a declared bfloat16",
        "\($0)/test_data_set_0/input_1.pb: dims [1] for a declared tensor(BFLOAT16)[3, 4]",
      ]
    }
}
