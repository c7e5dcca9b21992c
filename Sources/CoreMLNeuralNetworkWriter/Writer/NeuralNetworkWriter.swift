import CoreMLCommon
import ModelIR

/// The classic `NeuralNetwork` `.mlmodel` writer (`CoreMLWriter`) behind the common interface.
public struct NeuralNetworkWriter: CoreMLModelWriter {
  /// The largest specification written (`CoreMLLimits.maximumSpecificationBytes`; smaller in tests).
  let maximumSpecificationBytes: Int

  public init() { maximumSpecificationBytes = CoreMLLimits.maximumSpecificationBytes }

  init(maximumSpecificationBytes: Int) { self.maximumSpecificationBytes = maximumSpecificationBytes }
  public var format: ModelFormat { .neuralNetwork }

  public func encode(_ graph: Graph, options: CoreMLWriterOptions) throws -> EncodedModel {
    let (specification, version, shapes, compressed) = try CoreMLWriter.streamed(
      graph, options: options, maximumBytes: maximumSpecificationBytes)
    if let target = options.target, version > target.specificationVersion {
      throw CoreMLWriterError.targetTooOld(
        target: target.name, needs: version, reason: "the layers of this model need specification \(version)")
    }
    var encoded = EncodedModel(format: .neuralNetwork, streamed: specification, specificationVersion: version)
    encoded.arrayShapes = shapes
    encoded.compressedTensors = compressed
    return encoded
  }
}
