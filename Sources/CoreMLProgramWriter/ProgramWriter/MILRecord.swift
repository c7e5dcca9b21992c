import CoreMLCommon
import ModelIR

/// One operation as the emitters described it to `MILBuilder`: its type, its parameters (computed
/// tensors by name, constants by value) and its outputs. A `const` the emitters made themselves has one
/// parameter, `val`.
package struct MILRecord {
  package var type: String
  package var params: [(String, MILParam)]
  package var outputs: [MILTensor]

  package func param(_ key: String) -> MILParam? { params.first { $0.0 == key }?.1 }
}

/// The operations of a float32 program for a graph, as `MILRecord`s, for a writer that lowers MIL
/// operations into another form (the classic rank-N network, as coremltools' neural-network backend
/// lowers MIL): inputs and outputs as the ML Program declares them (`[1] + S`, images `[1, C, H, W]`).
/// Image preprocessing and a classifier's `classify` are left to that writer; the probabilities are an
/// output like any other.
package struct MILRecordedProgram {
  package var inputs: [MILTensor]
  package var records: [MILRecord]
  /// The graph's outputs, in order: the tensors named after the output features.
  package var outputs: [MILTensor]
}

extension MLProgramWriter {
  package static func recordedProgram(_ graph: Graph, options: CoreMLWriterOptions) throws -> MILRecordedProgram {
    var plain = options
    plain.precision = .float32
    plain.classifier = nil
    plain.imageInputs = options.imageInputs.mapValues { _ in ImagePreprocessing() }
    let builder = MILBuilder(arena: MessageArena())
    _ = try MLProgramWriter().buildModel(
      graph, options: plain, target: .iOS15, opset: DeploymentTarget.iOS15.opset!, builder: builder)
    let inputs = try graph.inputs.map { id -> MILTensor in
      let value = graph[id]
      if options.imageInputs[value.name] != nil {
        return MILTensor(name: value.name, dataType: .fp32, shape: MILLayout.channelsFirst.shape(value.type.shape))
      }
      let declared = try declaredArray(value.name, shape: value.type.shape, options: plain)
      return MILTensor(name: value.name, dataType: .fp32, shape: declared?.shape ?? [1] + value.type.shape)
    }
    var produced: [String: MILTensor] = [:]
    for record in builder.records { for output in record.outputs { produced[output.name] = output } }
    let outputs = try graph.outputs.map { id -> MILTensor in
      guard let tensor = produced[graph[id].name] ?? inputs.first(where: { $0.name == graph[id].name }) else {
        throw CoreMLWriterError.unsupportedOperation(
          layer: graph[id].name, detail: "the program has no value named after this output")
      }
      return tensor
    }
    return MILRecordedProgram(inputs: inputs, records: builder.records, outputs: outputs)
  }
}
