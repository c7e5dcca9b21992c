import CoreMLCommon
import Foundation
import KerasFormat
import ModelConverter
import TestSupport
import Testing

/// Every file `convert` writes passes its own reader and `verify`: each Keras fixture that converts, and
/// each case of the committed hostile sample (`Samples/Fixtures/hostile`, seeded cases of
/// `Samples/make_hostile_corpus.py` that convert accepts), is written in both formats, read back and
/// verified against its source. A self-rejection (verify cannot read what convert wrote) or a parity
/// failure fails the test, naming the case.
@Suite struct SelfConsistencyTests {
  /// Every Keras source among the fixtures, relative to `Samples/Fixtures` (the digits samples by path).
  static var sources: [String] {
    let folders = Fixtures.dialects + ["layers/tfkeras215", "layers/keras3", "keras_zip", "hostile"]
    var found = folders.flatMap { folder -> [String] in
      let files = (try? FileManager.default.contentsOfDirectory(atPath: Fixtures.url(folder).path)) ?? []
      // Whole models only: not reference outputs, nor weights-only files (they need their architecture JSON).
      return files.filter { ($0.hasSuffix(".h5") && !$0.hasSuffix(".reference.h5") && !$0.hasSuffix(".weights.h5")) || $0.hasSuffix(".keras") }
        .sorted().map { "\(folder)/\($0)" }
    }
    found += ["../Digits/digits_cnn.h5", "../DigitsMobile/digits_mobile.h5"]
    return found
  }

  /// The layer fixtures whose import is refused on purpose (`LayerCoverageTests.importErrors`).
  static let refusedOnPurpose: Set<String> = ["resizing_error", "center_crop_error", "lambda_error", "custom_layer"]

  /// The committed hostile sample.
  static var hostileCases: [String] { sources.filter { $0.hasPrefix("hostile/") } }

  @Test func theSourcesIncludeEveryKindOfFixture() {
    // The property is only as good as its inputs: every folder must contribute.
    let sources = Self.sources
    for folder in Fixtures.dialects + ["layers/tfkeras215", "layers/keras3", "keras_zip", "hostile"] {
      #expect(sources.contains { $0.hasPrefix(folder + "/") }, "no fixture in \(folder)")
    }
    #expect(Self.hostileCases.count >= 20, "the hostile sample has \(Self.hostileCases.count) cases")
  }

  @Test(arguments: sources)
  func convertedFileReadsBackAndVerifies(_ relative: String) throws {
    let source = Fixtures.url(relative)
    let name = source.deletingPathExtension().lastPathComponent
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    for format in [ModelFormat.neuralNetwork, .mlProgram] {
      var options = ConversionOptions()
      options.format = format
      let converted: ConvertedModel
      do {
        converted = try Converter.convert(modelAt: source, options: options)
      } catch {
        // The hostile sample holds only cases convert accepted (in both formats) when it was drawn, and
        // every fixture converts but the ones refused on purpose: any other refusal is a regression.
        #expect(Self.refusedOnPurpose.contains(name), "\(relative) (\(format)): convert refused it: \(error)")
        continue
      }
      let output = directory.appendingPathComponent(format == .mlProgram ? "\(name).mlpackage" : "\(name).mlmodel")
      try converted.write(to: output)
      let report: ParityReport
      do {
        // Where real Keras saved reference outputs, they are compared too (a fixture's ML Program against Keras).
        let reference = source.deletingPathExtension().appendingPathExtension("reference.h5")
        let hasReference = FileManager.default.fileExists(atPath: reference.path) && source.pathExtension == "h5"
        report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 2, reference: hasReference ? reference : nil))
      } catch {
        Issue.record("\(relative) (\(format)): verify refused the file convert wrote: \(error)")
        continue
      }
      let failures = report.layers.filter { !$0.passed }.prefix(3).map { "\($0)" } + report.outputs.filter { !$0.passed }.map { "\($0.name): max abs \($0.maxAbsoluteError)" }
      #expect(report.passed, "\(relative) (\(format)): parity broken: \(failures)")
    }
  }
}
