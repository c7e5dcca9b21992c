import CProtobufC
import CoreMLSpec
import Foundation
import ModelIR

/// A Core ML pipeline (Model.proto's `Pipeline`): a model of models, each written by its own writer, run
/// in order (`[rule PIPELINE]` in Schemas/Model.proto). Its inputs are the stages' inputs that no earlier
/// stage writes, in stage order; its outputs are the last stage's; its specification version is the
/// highest of its stages'. An ML Program stage keeps its weights, which go in the package's weights
/// folder as a single-program package's do.
public enum PipelineModel {
  /// The pipeline of `stages` (packed specifications), named `names` (one per stage, or none).
  public static func encode(_ stages: [EncodedModel], names: [String] = [], metadata: ModelMetadata = ModelMetadata())
    throws -> EncodedModel
  {
    guard stages.count >= 2 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: "pipeline", detail: "a pipeline needs at least two models, got \(stages.count)")
    }
    guard names.isEmpty || names.count == stages.count else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: "pipeline", detail: "\(names.count) names for \(stages.count) models")
    }
    let programs = stages.filter { $0.weights != nil }
    guard programs.count <= 1 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: "pipeline", detail: "more than one ML Program stage with weights")
    }
    // Our own packed stages, unpacked to be embedded; freed after the pipeline is packed.
    var unpacked: [UnsafeMutablePointer<CoreML__Specification__Model>] = []
    defer { for model in unpacked { core_ml__specification__model__free_unpacked(model, nil) } }
    for (index, stage) in stages.enumerated() {
      let bytes = stage.specification
      guard
        let model = bytes.withUnsafeBufferPointer({
          core_ml__specification__model__unpack(nil, $0.count, $0.baseAddress)
        })
      else {
        throw CoreMLWriterError.unsupportedOperation(layer: "pipeline", detail: "model \(index) is not a Core ML model")
      }
      unpacked.append(model)
    }
    func features(_ model: UnsafeMutablePointer<CoreML__Specification__Model>, inputs: Bool)
      -> [UnsafeMutablePointer<CoreML__Specification__FeatureDescription>]
    {
      guard let description = model.pointee.description else { return [] }
      let (list, count) =
        inputs
        ? (description.pointee.input, description.pointee.n_input)
        : (description.pointee.output, description.pointee.n_output)
      return (0..<count).compactMap { list?[$0] }
    }
    func name(_ feature: UnsafeMutablePointer<CoreML__Specification__FeatureDescription>) -> String {
      feature.pointee.name.map { String(cString: $0) } ?? ""
    }
    var inputs: [UnsafeMutablePointer<CoreML__Specification__FeatureDescription>] = []
    var written = Set<String>()
    for model in unpacked {
      for feature in features(model, inputs: true)
      where !written.contains(name(feature)) && !inputs.contains(where: { name($0) == name(feature) }) {
        inputs.append(feature)
      }
      for feature in features(model, inputs: false) { written.insert(name(feature)) }
    }
    let outputs = features(unpacked[unpacked.count - 1], inputs: false)

    let arena = MessageArena()
    let description = arena.message(core_ml__specification__model_description__init)
    description.pointee.n_input = inputs.count
    description.pointee.input = arena.pointerArray(inputs)
    description.pointee.n_output = outputs.count
    description.pointee.output = arena.pointerArray(outputs)
    description.pointee.metadata = ModelDescription.metadata(metadata, arena: arena)
    let pipeline = arena.message(core_ml__specification__pipeline__init)
    pipeline.pointee.n_models = unpacked.count
    pipeline.pointee.models = arena.pointerArray(unpacked)
    pipeline.pointee.n_names = names.count
    pipeline.pointee.names = arena.pointerArray(names.map { arena.string($0) })
    let model = arena.message(core_ml__specification__model__init)
    let version = stages.map(\.specificationVersion).max() ?? 1
    model.pointee.specificationversion = Int32(version)
    model.pointee.description = description
    model.pointee.type_case = CORE_ML__SPECIFICATION__MODEL__TYPE_PIPELINE
    model.pointee.pipeline = pipeline
    var bytes = [UInt8](repeating: 0, count: core_ml__specification__model__get_packed_size(model))
    _ = core_ml__specification__model__pack(model, &bytes)
    let format: ModelFormat = programs.isEmpty ? .neuralNetwork : .mlProgram
    return EncodedModel(
      format: format, specification: bytes, weights: programs.first?.weights, specificationVersion: version)
  }
}
