import Foundation
import ModelIR
import ONNXFormat
import ReferenceRuntime

/// ONNX's backend tests (libonnx-testdata) run through the importer and the reference runtime: each
/// test's first input is computed, the others are bound as constants (as weights are initializers in
/// real models), and every output is compared with the stored one at the ONNX backend's tolerance
/// (`|actual - expected| <= 1e-7 + 1e-3 * |expected|`).
public enum BackendConformance {
  public enum Outcome: Equatable {
    case passed
    /// The runtime's numbers differ (or an output is missing).
    case failed(String)
    /// An operator has no handler at the model's opset.
    case notSupported(String)
    /// A handler refused the node (an attribute or input form it does not compute).
    case refused(String)

    public var label: String {
      switch self {
      case .passed: return "passed"
      case .failed: return "failed"
      case .notSupported: return "not supported"
      case .refused: return "refused"
      }
    }
  }

  public static let absoluteTolerance: Float = 1e-7
  public static let relativeTolerance: Float = 1e-3

  /// The data sets of a test: its input and output tensor files, in index order.
  public static func dataSets(_ folder: URL) -> [(inputs: [URL], outputs: [URL])] {
    let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter {
      $0.hasPrefix("test_data_set_")
    }.sorted()
    return names.map { name in
      let set = folder.appendingPathComponent(name)
      func files(_ prefix: String) -> [URL] {
        var result: [URL] = []
        while FileManager.default.fileExists(atPath: set.appendingPathComponent("\(prefix)_\(result.count).pb").path) {
          result.append(set.appendingPathComponent("\(prefix)_\(result.count).pb"))
        }
        return result
      }
      return (files("input"), files("output"))
    }
  }

  public static func run(suite: String, name: String) -> Outcome {
    let folder = ONNXTestData.test(suite, name)
    let model: ONNXModel
    do { model = try ONNXModelReader.read(contentsOf: folder.appendingPathComponent("model.onnx")) } catch {
      return .refused("read: \(error)")
    }
    let unsupported = ONNXGraphImporter.unsupportedOperators(in: model)
    guard unsupported.isEmpty else { return .notSupported(unsupported.joined(separator: ", ")) }
    let sets = dataSets(folder)
    guard !sets.isEmpty else { return .refused("no test data") }
    let graphInputs = model.graph.inputs.filter { input in !model.graph.initializers.contains { $0.name == input.name }
    }
    for set in sets {
      var tensors: [ONNXTensor] = []
      do { tensors = try set.inputs.map { try ONNXTensorReader.read(contentsOf: $0) } } catch {
        return .refused("input data: \(error)")
      }
      guard tensors.count == graphInputs.count else {
        return .refused("\(tensors.count) inputs for \(graphInputs.count) graph inputs")
      }
      if ONNXTestData.tensorFileMismatches.contains(where: { $0.hasPrefix(name + "/") }) {
        return .refused("its test data disagrees with its model")
      }
      guard let first = tensors.first else { return compareConstant(model, name: name, expected: set.outputs) }
      var constants: [String: ONNXConstant] = [:]
      do {
        for (input, tensor) in zip(graphInputs, tensors).dropFirst() {
          constants[input.name] = try ONNXConstant(tensor)
        }
      } catch { return .refused("input data: \(error)") }
      let data: ONNXConstant
      do { data = try ONNXConstant(first) } catch { return .refused("input data: \(error)") }
      guard data.count > 0 else { return .refused("an empty input") }
      let imported: ONNXImportedGraph
      do {
        imported = try ONNXGraphImporter.importGraph(
          model, path: name, inputShapes: [graphInputs[0].name: first.dims.isEmpty ? [1] : first.dims],
          constants: constants)
      } catch let error as ONNXImportError {
        if case .unsupportedOperators = error { return .notSupported("\(error)") }
        return .refused("\(error)")
      } catch { return .refused("\(error)") }
      // A graph whose outputs do not depend on the computed input still runs (it computes constants).
      let inputs = imported.graph.inputs.map { _ in
        Tensor(shape: first.dims.isEmpty ? [1] : first.dims, values: data.floats)
      }
      if let problem = Interpreter.unsupportedOperations(in: imported.graph).first {
        return .refused("runtime: \(problem)")
      }
      let outputs = Interpreter(graph: imported.graph).run(inputs)
      if let mismatch = compare(outputs, set.outputs) { return mismatch }
    }
    return .passed
  }

  /// A graph without inputs: its outputs are constants, run as such.
  public static func compareConstant(_ model: ONNXModel, name: String, expected: [URL]) -> Outcome {
    do {
      let imported = try ONNXGraphImporter.importGraph(model, path: name)
      return compare(Interpreter(graph: imported.graph).run([]), expected) ?? .passed
    } catch { return .refused("\(error)") }
  }

  /// Nil when every output matches its stored tensor.
  public static func compare(_ outputs: [Tensor], _ files: [URL]) -> Outcome? {
    guard outputs.count == files.count else { return .failed("\(outputs.count) outputs, expected \(files.count)") }
    for (index, (actual, file)) in zip(outputs, files).enumerated() {
      let expected: ONNXConstant
      do { expected = try ONNXConstant(ONNXTensorReader.read(contentsOf: file)) } catch {
        return .refused("output data: \(error)")
      }
      guard actual.values.count == expected.count else {
        return .failed("output \(index): \(actual.shape) for expected \(expected.shape)")
      }
      for (a, e) in zip(actual.values, expected.floats) {
        if a.isNaN && e.isNaN { continue }
        if a == e { continue }
        guard abs(a - e) <= absoluteTolerance + relativeTolerance * abs(e) else {
          return .failed("output \(index): \(a) for \(e)")
        }
      }
    }
    return nil
  }
}
