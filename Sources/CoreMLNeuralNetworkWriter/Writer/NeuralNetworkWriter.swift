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
    if let compression = options.compression {
      throw CoreMLWriterError.invalidOption("\(compression.summary) weights are written in ML Programs (.mlpackage); a neural network (.mlmodel) keeps float32 or float16 weights")
    }
    let (specification, version, shapes) = try CoreMLWriter.streamed(graph, options: options, maximumBytes: maximumSpecificationBytes)
    if let target = options.target, version > target.specificationVersion {
      throw CoreMLWriterError.targetTooOld(target: target.name, needs: version, reason: "the layers of this model need specification \(version)")
    }
    var encoded = EncodedModel(format: .neuralNetwork, streamed: specification, specificationVersion: version)
    encoded.arrayShapes = shapes
    return encoded
  }
}
