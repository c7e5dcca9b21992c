import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import Testing

/// Operations the ML Program writer emits on rank-5 tensors (an image per step of a sequence, or an image
/// that kept its batch axis, as MaxViT and DenseNet exports do) read back as MIL documents them.
@Suite struct ProgramRankTests {
  /// A batch normalization of `[T, H, W, C]` values is MIL's `batch_norm` on `[1, C, T, H, W]`, which MIL
  /// allows (`x: [n, C, *D]` with 1 to 3 spatial axes); the package verifies against the graph, and a
  /// wrong mean in the written file would not.
  @Test func batchNormalizationOfARankFiveTensorVerifies() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([2, 3, 4, 5]))
    let c = 5
    let norm = BatchNormalization(
      gamma: Constant(shape: [c], values: [1, 2, 0.5, -1, 3]),
      beta: Constant(shape: [c], values: [0, 0.25, -1, 2, 0.5]),
      mean: Constant(shape: [c], values: [0.5, -0.5, 1, 0, 2]),
      variance: Constant(shape: [c], values: [1, 4, 0.25, 2, 9]), epsilon: 1e-3)
    let y = try b.add(.batchNormalization(norm), name: "bn", inputs: [x])
    let graph = b.build(outputs: [y])
    let source = ImportedSource(format: "ir", modelKind: "ir", path: "bn.ir", graph: graph)
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("rank5-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("bn.mlpackage")
    try Converter.convert(source, options: ConversionOptions(format: .mlProgram, precision: .float32)).write(to: output)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 2))
    #expect(report.passed, "\(report.outputs) \(report.violations)")
    let program = try String(
      contentsOf: output.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel"), encoding: .isoLatin1)
    #expect(program.contains("batch_norm"))
  }
}
