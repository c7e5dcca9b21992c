import CoreMLFormat
import CoreMLTestSupport
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

/// No library error names a command-line flag (issue 36): the library is used without the CLI, whose
/// own hints add the flags. Every string literal in the library sources is checked (the command line,
/// the benchmark and mutation tools, and the Keras reader's own child-process arguments aside).
@Suite struct LibraryMessageTests {
  @Test func noLibraryMessageNamesAFlag() throws {
    let sources = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
      .deletingLastPathComponent()
      .appendingPathComponent("Sources")
    let exempt = ["modelconv", "RuntimeBench", "MutationCheck"]
    let enumerator = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
    var offenders: [String] = []
    var checked = 0
    for case let url as URL in enumerator where url.pathExtension == "swift" {
      let relative = url.path.dropFirst(sources.path.count + 1)
      guard !exempt.contains(where: { relative.hasPrefix($0 + "/") }), !relative.hasSuffix("KerasReaderIsolation.swift")
      else { continue }
      checked += 1
      let text = try String(contentsOf: url, encoding: .utf8)
      for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
        let code = line.trimmingCharacters(in: .whitespaces)
        guard !code.hasPrefix("//") else { continue }
        // A flag inside a string literal: a quote, then text, then `--` and a letter, before the next quote.
        if code.range(of: #""[^"]*--[a-z][a-z-]*[^"]*""#, options: .regularExpression) != nil {
          offenders.append("\(relative):\(number + 1): \(code.prefix(120))")
        }
      }
    }
    #expect(checked > 100)
    #expect(offenders.isEmpty, "\(offenders)")
  }
}
