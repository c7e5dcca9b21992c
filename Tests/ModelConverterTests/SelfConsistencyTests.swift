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
      return files.filter {
        ($0.hasSuffix(".h5") && !$0.hasSuffix(".reference.h5") && !$0.hasSuffix(".weights.h5"))
          || $0.hasSuffix(".keras")
      }
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
        report = try ParityVerifier.verify(
          source: source, converted: output,
          options: VerificationOptions(samples: 2, reference: hasReference ? reference : nil))
      } catch {
        Issue.record("\(relative) (\(format)): verify refused the file convert wrote: \(error)")
        continue
      }
      let failures =
        report.layers.filter { !$0.passed }.prefix(3).map { "\($0)" }
        + report.outputs.filter { !$0.passed }.map { "\($0.name): max abs \($0.maxAbsoluteError)" }
      #expect(report.passed, "\(relative) (\(format)): parity broken: \(failures)")
    }
  }

  /// Every ONNX and Core ML source among the fixtures (and the committed hostile ONNX and Core ML sample,
  /// `Samples/Fixtures/hostile_onnx_coreml`), relative to `Samples/Fixtures`.
  static var onnxAndCoreMLSources: [String] {
    func files(_ folder: String, _ keep: (String) -> Bool) -> [String] {
      ((try? FileManager.default.contentsOfDirectory(atPath: Fixtures.url(folder).path)) ?? []).filter(keep).sorted()
        .map { "\(folder)/\($0)" }
    }
    var found = files("coremltools") { $0.hasSuffix(".mlmodel") || $0.hasSuffix("_program.mlpackage") }
    found += files("legacy_coreml") { $0.hasSuffix(".mlmodel") }
    found += files("onnx") { $0.hasSuffix(".onnx") && !["not_really.onnx", "truncated.onnx"].contains($0) }
    found += files("onnx/tf2onnx") { $0.hasSuffix(".onnx") }
    found += files("onnx/recurrent") { $0.hasSuffix(".onnx") }
    found += files("onnx/control_flow") { $0.hasSuffix(".onnx") }
    found += files("onnx/old_opsets") { $0.hasSuffix(".onnx") }
    found += ["onnx/external_data/mlp_external.onnx"]
    found += files("hostile_onnx_coreml") {
      $0.hasSuffix(".onnx") || $0.hasSuffix(".mlmodel") || $0.hasSuffix(".mlpackage")
    }
    return found
  }

  /// Sources that no format takes, on purpose (shapes a written model cannot declare, a list the IR does not
  /// hold): each is refused with an error, in both formats.
  static let onnxAndCoreMLRefusedOnPurpose: Set<String> = [
    // A dense kernel holding -1.48e37 (a hostile mutation): weights of 2^112 or more are refused.
    "case_00086.mlmodel",
    // Two outputs named 'Identity' (a hostile mutation): feature names must be distinct.
    "case_00087.mlpackage",
  ]

  @Test func theOnnxAndCoreMLSourcesIncludeEveryKind() {
    let sources = Self.onnxAndCoreMLSources
    for prefix in [
      "coremltools/", "legacy_coreml/", "onnx/", "onnx/tf2onnx/", "onnx/external_data/", "hostile_onnx_coreml/",
    ] {
      #expect(sources.contains { $0.hasPrefix(prefix) }, "no source in \(prefix)")
    }
    #expect(sources.filter { $0.hasPrefix("hostile_onnx_coreml/") }.count >= 20)
  }

  /// What convert writes from an ONNX or Core ML source (issue 34's self-consistency): either format may
  /// refuse a source it cannot express (a classic network has no rank-5 reshape), but what it writes, our
  /// own reader reads and `verify` passes against the source, and every source but the ones refused on
  /// purpose converts to at least one format.
  @Test(arguments: onnxAndCoreMLSources)
  func convertedOnnxOrCoreMLFileReadsBackAndVerifies(_ relative: String) throws {
    let source = Fixtures.url(relative)
    let name = source.lastPathComponent
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    var written = 0
    for format in [ModelFormat.neuralNetwork, .mlProgram] {
      var options = ConversionOptions()
      options.format = format
      let converted: ConvertedModel
      do { converted = try Converter.convert(modelAt: source, options: options) } catch { continue }
      let output = directory.appendingPathComponent("converted." + format.fileExtension)
      try converted.write(to: output)
      written += 1
      let report: ParityReport
      do {
        report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 2))
      } catch {
        Issue.record("\(relative) (\(format)): verify refused the file convert wrote: \(error)")
        continue
      }
      let failures =
        report.layers.filter { !$0.passed }.prefix(3).map { "\($0)" }
        + report.outputs.filter { !$0.passed }.map { "\($0.name): max abs \($0.maxAbsoluteError)" }
      #expect(
        report.passed, "\(relative) (\(format)): parity broken: \(failures) \(report.interface?.differences ?? [])")
    }
    if Self.onnxAndCoreMLRefusedOnPurpose.contains(name) {
      #expect(written == 0, "\(relative) is listed as refused on purpose but converted")
    } else {
      #expect(written > 0, "\(relative): neither format took it")
    }
  }
}
