import CoreMLCommon
import ModelIR

/// The classic `NeuralNetwork` `.mlmodel` writer (`CoreMLWriter`) behind the common interface.
public struct NeuralNetworkWriter: CoreMLModelWriter {
  /// The largest specification written (`CoreMLLimits.maximumSpecificationBytes`; smaller in tests).
  let maximumSpecificationBytes: Int

  public init() { maximumSpecificationBytes = CoreMLLimits.maximumSpecificationBytes }

  init(maximumSpecificationBytes: Int) { self.maximumSpecificationBytes = maximumSpecificationBytes }
  public var format: ModelFormat { .neuralNetwork }

  /// The multiarray shape a model input or output of this IR shape gets in the description: `[D]`,
  /// `[D]` for `[T, D]` (time on the sequence axis), `[C, H, W]` for `[H, W, C]` (nil beyond rank 4).
  public static func featureShape(_ shape: [Int]) -> [Int]? { CoreMLLayerEmitter.coreMLShape(shape) }

  public func encode(_ graph: Graph, options: CoreMLWriterOptions) throws -> EncodedModel {
    let (specification, version) = try CoreMLWriter.streamed(graph, options: options, maximumBytes: maximumSpecificationBytes)
    if let target = options.target, version > target.specificationVersion {
      throw CoreMLWriterError.targetTooOld(target: target.name, needs: version, reason: "the layers of this model need specification \(version)")
    }
    return EncodedModel(format: .neuralNetwork, streamed: specification, specificationVersion: version)
  }
}
