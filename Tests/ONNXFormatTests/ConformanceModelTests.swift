import Foundation
import ONNXFormat
import ONNXTestSupport
import Testing

/// Every model and tensor file of Debian's libonnx-testdata (ONNX 1.12's conformance suites) reads.
@Suite struct ConformanceModelTests {
  @Test(arguments: ONNXTestData.suites)
  func everyModelReads(suite: String) throws {
    let models = ONNXTestData.models(in: suite)
    #expect(
      models.count >= ONNXTestData.minimumModelCount[suite, default: 1],
      "libonnx-testdata missing? \(ONNXTestData.root.path)/\(suite)")
    var failures: [String] = []
    for (name, url) in models {
      do { _ = try ONNXModelReader.read(contentsOf: url) } catch { failures.append("\(name): \(error)") }
    }
    #expect(
      failures.isEmpty, "\(failures.count) of \(models.count) models failed:\n\(failures.joined(separator: "\n"))")
  }

  /// `input_K.pb` holds the model's K-th fed input (graph inputs that are not initializers), `output_K.pb`
  /// its K-th output. Tensor values must read with the declared element type and a shape that fits the
  /// declaration; sequence, map and optional values are other messages (onnx-data.proto's SequenceProto,
  /// MapProto, OptionalProto), which the tensor reader must refuse with an error.
  @Test(arguments: ONNXTestData.suites)
  func everyTensorFileReads(suite: String) throws {
    var read = 0
    var refused = 0
    var failures: [String] = []
    for (name, url) in ONNXTestData.models(in: suite) {
      let graph = try ONNXModelReader.read(contentsOf: url).graph
      let initializers = Set(graph.initializers.map(\.name))
      let fed = graph.inputs.filter { !initializers.contains($0.name) }
      let folder = url.deletingLastPathComponent()
      for set in (try? FileManager.default.contentsOfDirectory(atPath: folder.path))?.filter({
        $0.hasPrefix("test_data_set_")
      }) ?? [] {
        let setFolder = folder.appendingPathComponent(set)
        for file in (try? FileManager.default.contentsOfDirectory(atPath: setFolder.path)) ?? []
        where file.hasSuffix(".pb") {
          let label = "\(name)/\(set)/\(file)"
          let parts = file.dropLast(3).split(separator: "_")
          let values = parts.first == "input" ? fed : graph.outputs
          guard parts.count == 2, let index = Int(parts[1]), values.indices.contains(index) else {
            failures.append("\(label): no graph value matches the file name")
            continue
          }
          let declared = values[index]
          let result = Result { try ONNXTensorReader.read(contentsOf: setFolder.appendingPathComponent(file)) }
          guard case .tensor(let elementType, let shape) = declared.type else {
            if case .failure(let error) = result, error is ONNXFormatError {
              refused += 1
            } else {
              failures.append("\(label): a \(declared.type.description) value was not refused")
            }
            continue
          }
          switch result {
          case .failure(let error): failures.append("\(label): \(error)")
          case .success(let tensor):
            read += 1
            if tensor.dataType != elementType {
              failures.append("\(label): \(tensor.dataType) tensor for a declared \(elementType)")
            }
            if let shape, !fits(tensor.dims, shape) {
              failures.append("\(label): dims \(tensor.dims) for a declared \(declared.type.description)")
            }
            if tensor.elementCount != tensor.dims.reduce(1, *) {
              failures.append("\(label): \(tensor.elementCount) values for dims \(tensor.dims)")
            }
          }
        }
      }
    }
    #expect(read >= ONNXTestData.minimumTensorFileCount[suite, default: 1])
    failures.removeAll { failure in ONNXTestData.tensorFileMismatches.contains { failure.hasPrefix($0) } }
    #expect(failures.isEmpty, "\(failures.count) tensor files failed:\n\(failures.joined(separator: "\n"))")
    // Only the node suite has sequence and optional values.
    #expect(suite != "node" || refused >= 40)
  }

  private func fits(_ dims: [Int], _ shape: [ONNXDimension]) -> Bool {
    dims.count == shape.count
      && zip(dims, shape).allSatisfy { size, dim in
        if case .value(let fixed) = dim { return fixed == size } else { return true }
      }
  }
}
