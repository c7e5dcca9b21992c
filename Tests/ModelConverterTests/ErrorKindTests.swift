import CoreMLFormat
import Foundation
import ImageFormat
import KerasFormat
import ModelConverter
import ModelFormats
import ModelIR
import ONNXFormat
import Testing

/// Every library error says what kind of failure it is (issue 36): the command line's exit codes follow
/// from these kinds alone (66 missing input, 65 bad model, 64 usage, 73 cannot write), with no list of
/// error types. One error of each type, and the kinds its cases fall into.
@Suite struct ErrorKindTests {
  static let cases: [(any Error, ErrorKind)] = [
    (KerasReaderError.fileNotFound(path: "m.h5"), .missingInput),
    (KerasReaderError.notRegularFile(path: "m.h5", kind: "a FIFO"), .missingInput),
    (KerasReaderError.invalidConfig(path: "m.h5", detail: "x"), .badModel),
    (HDF5Error.notHDF5(path: "m.h5"), .badModel),
    (CoreMLReaderError.unreadable(path: "m.mlmodel"), .missingInput),
    (CoreMLReaderError.malformed(path: "m.mlmodel"), .badModel),
    (ONNXFormatError.unreadable(path: "m.onnx", detail: "x"), .missingInput),
    (ONNXFormatError.notONNX(path: "m.onnx", kind: "text"), .badModel),
    (ONNXImportError.invalidNode(path: "m.onnx", node: "n", opType: "Cast", detail: "x"), .badModel),
    (VerificationError.referenceNotFound(path: "r.h5"), .missingInput),
    (VerificationError.notRunnable(["x"]), .badModel),
    (ImageFileError.unreadable(path: "a.png", reason: "x"), .missingInput),
    (ImageFileError.corrupt(path: "a.png", detail: "x"), .badModel),
    (GraphError.duplicateName("x"), .badModel),
    (CoreMLWriterError.invalidOption("x"), .badModel),
    (SourceFormatError.notFound(path: "m"), .missingInput),
    (SourceFormatError.unsupported(path: "m", what: "a PDF", advice: "x"), .badModel),
    (PredictionError.notAnImageModel(path: "m", detail: "x"), .badModel),
    (ConversionError.labelsFileUnreadable(path: "l.txt"), .missingInput),
  ]

  @Test func everyLibraryErrorSaysItsKind() {
    for (error, expected) in Self.cases {
      #expect((error as? any KindedError)?.kind == expected, "\(type(of: error)): \(error)")
    }
  }
}
