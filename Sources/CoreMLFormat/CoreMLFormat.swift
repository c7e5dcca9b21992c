// The Core ML format, as one import: the reader (`CoreMLReader`), the two writers
// (`CoreMLNeuralNetworkWriter`, `CoreMLProgramWriter`) and what they share (`CoreMLCommon`: package and
// weight-file I/O, the model description, the options every writer takes).

@_exported import CoreMLCommon
@_exported import CoreMLNeuralNetworkWriter
@_exported import CoreMLProgramWriter
@_exported import CoreMLReader

/// The writers of both formats.
public enum CoreMLWriters {
  public static func writer(for format: ModelFormat) -> any CoreMLModelWriter {
    switch format {
    case .neuralNetwork: return NeuralNetworkWriter()
    case .mlProgram: return MLProgramWriter()
    }
  }
}
