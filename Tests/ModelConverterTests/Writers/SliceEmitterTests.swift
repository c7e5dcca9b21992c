import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import Testing

/// A strided slice of an image becomes classic slice layers (one per cut axis), which the reader reads
/// back as Apple documents them and which compute what the IR's slice computes.
@Suite struct SliceEmitterTests {
  @Test func imageSlicesAreClassicSliceLayers() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([5, 6, 4]))
    // Rows 1..<4, every column, channels 1 and 3.
    let cut = try builder.add(
      .slice(StridedSlice(begin: [1, 0, 1], end: [4, 6, 4], strides: [1, 1, 2])), name: "cut", inputs: [x])
    let out = try builder.add(.activation(.relu), name: "out", inputs: [cut])
    let graph = builder.build(outputs: [out])
    let bytes = try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions())
    let spec = try CoreMLSpecReader.read(bytes, path: "slice.mlmodel")
    #expect(spec.layers.map(\.kind) == ["slice", "slice", "activation.ReLU"])
    let model = try CoreMLGraphImporter.importModel(spec, path: "slice.mlmodel")
    let report = try ParityVerifier.verify(
      source: graph, converted: model, sourceName: "graph", convertedName: "slice.mlmodel",
      options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(report.outputs)")
  }

  /// A slice of the sequence axis has no rank-5 layer: a rank-N network's `sliceStatic` (verified), or for
  /// an iOS 12 target the refusal by name.
  @Test func sequenceAxisSlicesAreRankNOrRefused() throws {
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([5, 3]))
    let cut = try builder.add(
      .slice(StridedSlice(begin: [1, 0], end: [3, 3], strides: [1, 1])), name: "cut", inputs: [x])
    let graph = builder.build(outputs: [cut])
    let spec = try CoreMLSpecReader.read(
      try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions()), path: "slice.mlmodel")
    #expect(spec.exactArrayMapping && spec.layers.map(\.kind) == ["sliceStatic"])
    let model = try CoreMLGraphImporter.importModel(spec, path: "slice.mlmodel")
    let report = try ParityVerifier.verify(
      source: graph, converted: model, sourceName: "graph", convertedName: "slice.mlmodel",
      options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(report.outputs)")
    #expect(
      throws: CoreMLWriterError.unsupportedOperation(
        layer: "cut", detail: "a slice of the sequence axis of [5, 3] (classic slices cut C, H or W)")
    ) {
      _ = try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions(target: DeploymentTarget.parse("iOS12")))
    }
  }
}
