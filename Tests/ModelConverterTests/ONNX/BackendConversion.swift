import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ONNXFormat
import ONNXTestSupport

/// ONNX's backend tests converted to Core ML: a test whose graph passes in the reference runtime is
/// converted to each format (its first input computed, the others bound as constants) and the written
/// model is verified against the graph (`ParityVerifier`, random inputs, the Core ML side as Apple
/// documents it). Shapes a written model cannot declare, and operations a format has no layer for, are
/// "not expressible" (the converter refuses them by name).
enum BackendConversion {
  enum Outcome: Equatable {
    case verified
    case notExpressible(String)
    case failed(String)
  }

  static func run(suite: String, name: String, format: ModelFormat, directory: URL) -> Outcome {
    let folder = ONNXTestData.test(suite, name)
    do {
      let model = try ONNXModelReader.read(contentsOf: folder.appendingPathComponent("model.onnx"))
      guard let set = BackendConformance.dataSets(folder).first else { return .failed("no test data") }
      let graphInputs = model.graph.inputs.filter { input in
        !model.graph.initializers.contains { $0.name == input.name }
      }
      let tensors = try set.inputs.map { try ONNXTensorReader.read(contentsOf: $0) }
      var constants: [String: ONNXConstant] = [:]
      for (input, tensor) in zip(graphInputs, tensors).dropFirst() { constants[input.name] = try ONNXConstant(tensor) }
      let shapes = tensors.first.map { [graphInputs[0].name: $0.dims.isEmpty ? [1] : $0.dims] } ?? [:]
      let source: ImportedSource
      do {
        source = try ONNXFrontend.source(
          model, path: name, options: SourceOptions(inputShapes: shapes), constants: constants)
      } catch { return .notExpressible("\(error)") }
      let converted: ConvertedModel
      do {
        converted = try Converter.convert(source, options: ConversionOptions(format: format, precision: .float32))
      } catch { return .notExpressible("\(error)") }
      let output = directory.appendingPathComponent(name + "." + format.fileExtension)
      try converted.write(to: output)
      defer { try? FileManager.default.removeItem(at: output) }
      let report = try ParityVerifier.verify(
        source: source, converted: output, options: VerificationOptions(samples: 2))
      return report.passed
        ? .verified
        : .failed(
          "\(report.firstMismatch.map { "\($0)" } ?? "") \(report.outputs.filter { !$0.passed }) \(report.violations)")
    } catch {
      return .failed("\(error)")
    }
  }
}
