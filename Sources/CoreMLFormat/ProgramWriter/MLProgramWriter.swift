import ModelIR

/// Writes an IR graph as an ML Program (`.mlpackage`). Work in progress (issue 10).
public struct MLProgramWriter: CoreMLModelWriter {
  public init() {}
  public var format: ModelFormat { .mlProgram }

  public func encode(_ graph: Graph, options: CoreMLWriterOptions) throws -> EncodedModel {
    throw CoreMLWriterError.invalidOption("ML Program writing is not implemented yet")
  }
}
