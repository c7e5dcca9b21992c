import CoreMLFormat
import CoreMLTestSupport
import Foundation
import TestSupport
import Testing

/// `modelconv` end to end: exit codes, printed summaries and no partial output on failure.
@Suite struct CommandLineTests {
  /// The built `modelconv`, beside the test bundle.
  static var executable: URL { Modelconv.executable }

  struct Result {
    var status: Int32
    var stdout: String
    var stderr: String
  }

  func run(_ arguments: [String]) throws -> Result {
    let result = try Modelconv.run(arguments)
    return Result(status: result.status, stdout: result.stdout, stderr: result.stderr)
  }

  @Test func convertsTheDigitsClassifier() throws {
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("Digits.mlmodel")
    let result = try run([
      "convert", Fixtures.digits.appendingPathComponent("digits_cnn.h5").path, "--input-names", "image",
      "--output-names", "probabilities", "--image-input", "image", "--image-scale", "0.00392156862745098",
      "--labels-file", Fixtures.digits.appendingPathComponent("labels.txt").path, "--author", "tests", "-o",
      output.path,
    ])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("input   image: image 8x8 GRAYSCALE"))
    #expect(result.stdout.contains("output  classLabel: int64"))
    let spec = try CoreMLSpecReader.read(contentsOf: output)
    #expect(spec.modelType == "neuralNetworkClassifier")
    #expect(spec.author == "tests")
  }

  @Test func jsonSummaryAndDefaultOutputPath() throws {
    let directory = try Fixtures.temporaryDirectory()
    let input = directory.appendingPathComponent("pets.h5")
    try FileManager.default.copyItem(at: Fixtures.url("keras3/dense_classifier.h5"), to: input)
    let result = try run(["convert", input.path, "--labels", "cat,dog,bird,fish", "--json"])
    #expect(result.status == 0, "\(result.stderr)")
    let json = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(json?["output"] as? String == directory.appendingPathComponent("pets.mlmodel").path)
    #expect((json?["summary"] as? [String: Any])?["labels"] as? [String] == ["cat", "dog", "bird", "fish"])
    #expect(FileManager.default.fileExists(atPath: directory.appendingPathComponent("pets.mlmodel").path))
  }

  @Test func versionAndHelp() throws {
    #expect(try run(["--version"]).status == 0)
    let help = try run(["convert", "--help"])
    #expect(help.status == 0)
    #expect(help.stdout.contains("--image-input"))
  }

  /// Command lines that must fail, with the exit code each must give.
  static let failures: [ExitCase] = [
    ExitCase(["convert"], 64),
    ExitCase(["convert", "a.h5", "--no-such-option"], 64),
    ExitCase(["frobnicate"], 64),
    ExitCase(["convert", "/nonexistent/model.h5"], 66),
    ExitCase(["convert", Fixtures.url("bad/not_hdf5.h5").path], 65),
    ExitCase(["convert", Fixtures.url("bad/weights_only.h5").path], 65),
    ExitCase(["convert", Fixtures.url("bad/missing_dataset.h5").path], 65),
    ExitCase(["convert", Fixtures.url("bad/wrong_shape.h5").path], 65),
    ExitCase(["convert", Fixtures.url("bad/unsupported.h5").path], 65),
    ExitCase(["convert", Fixtures.url("tfkeras215/dense_classifier.h5").path, "--labels", "a,b"], 65),
    ExitCase(
      ["convert", Fixtures.url("tfkeras215/dense_classifier.h5").path, "--labels-file", "/nonexistent/labels.txt"], 66),
    ExitCase(["convert", Fixtures.url("tfkeras215/dense_classifier.h5").path, "--precision", "int3"], 64),
  ]

  struct ExitCase: Sendable, CustomStringConvertible {
    var arguments: [String]
    var expected: Int32
    init(_ arguments: [String], _ expected: Int32) {
      self.arguments = arguments
      self.expected = expected
    }
    var description: String { arguments.joined(separator: " ") }
  }

  @Test(arguments: failures)
  func exitCodes(case exitCase: ExitCase) throws {
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("out.mlmodel")
    let result = try run(exitCase.arguments + ["-o", output.path])
    #expect(result.status == exitCase.expected, "\(exitCase): \(result.stderr)")
    #expect(!result.stderr.isEmpty)
    // Nothing is left behind: no output and no temporary file.
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path).isEmpty)
  }

  @Test func unsupportedLayersAreNamedTogether() throws {
    let result = try run(["convert", Fixtures.url("bad/unsupported.h5").path, "-o", "/tmp/unused.mlmodel"])
    #expect(result.stderr.contains("Conv3D"))
    #expect(result.stderr.contains("Lambda"))
  }

  @Test func unwritableOutputExits73() throws {
    let result = try run([
      "convert", Fixtures.url("tfkeras215/dense_classifier.h5").path, "-o", "/nonexistent/dir/out.mlmodel",
    ])
    #expect(result.status == 73)
  }

  @Test func failedConversionKeepsTheExistingOutput() throws {
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("keep.mlmodel")
    try Data("previous".utf8).write(to: output)
    let result = try run(["convert", Fixtures.url("bad/unsupported.h5").path, "-o", output.path])
    #expect(result.status == 65)
    #expect(try Data(contentsOf: output) == Data("previous".utf8))
  }

  // MARK: verify

  static let digitsModel = Fixtures.digits.appendingPathComponent("digits_cnn.h5").path
  static let digitsReference = Fixtures.digits.appendingPathComponent("digits_cnn.reference.h5").path

  /// Converts the digits classifier with these labels into a temporary file.
  func convertDigits(labels: String, in directory: URL, extra: [String] = []) throws -> (Result, URL) {
    let output = directory.appendingPathComponent("Digits.mlmodel")
    let result = try run(
      [
        "convert", Self.digitsModel, "--image-input", "input1", "--image-scale", "0.00392156862745098", "--labels",
        labels, "-o", output.path,
      ] + extra)
    return (result, output)
  }

  @Test func verifyPassesAndPrintsJSON() throws {
    let directory = try Fixtures.temporaryDirectory()
    let (converted, output) = try convertDigits(labels: "0,1,2,3,4,5,6,7,8,9", in: directory)
    #expect(converted.status == 0, "\(converted.stderr)")
    let text = try run(["verify", Self.digitsModel, output.path, "--reference", Self.digitsReference])
    #expect(text.status == 0, "\(text.stdout)\(text.stderr)")
    #expect(text.stdout.contains("PASS"))
    let json = try run(["verify", Self.digitsModel, output.path, "--samples", "3", "--seed", "7", "--json"])
    #expect(json.status == 0)
    let report = try JSONSerialization.jsonObject(with: Data(json.stdout.utf8)) as? [String: Any]
    #expect(report?["passed"] as? Bool == true)
    #expect(report?["samples"] as? Int == 3)
    #expect((report?["timing"] as? [String: Any])?["convertedSecondsPerSample"] is Double)
    #expect((report?["classifier"] as? [String: Any])?["top1Agreement"] as? Double == 1)
  }

  /// `verify` takes coremltools' ML Program packages as it takes .mlmodel files, float32 and float16.
  @Test(arguments: ["digits_cnn_program", "digits_cnn_program_fp16"])
  func verifyReadsMLPackages(_ name: String) throws {
    let package = Fixtures.url("coremltools/\(name).mlpackage").path
    // The names make_mlpackage_golden.py gave coremltools, as a user gives them.
    let names = try Fixtures.coremltoolsNames(URL(fileURLWithPath: package))
    let result = try run([
      "verify", Self.digitsModel, package, "--reference", Fixtures.url("coremltools/\(name).reference.h5").path,
      "--json",
      "--input-names", names.inputs.joined(separator: ","), "--output-names", names.outputs.joined(separator: ","),
    ])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    let report = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
    #expect(report?["passed"] as? Bool == true)
    #expect((report?["classifier"] as? [String: Any])?["top1Agreement"] as? Double == 1)
  }

  @Test func verifyFailsWithExitOneOnSwappedLabels() throws {
    let directory = try Fixtures.temporaryDirectory()
    let (_, output) = try convertDigits(labels: "0,1,2,3,4,5,6,8,7,9", in: directory)
    let result = try run(["verify", Self.digitsModel, output.path, "--reference", Self.digitsReference])
    #expect(result.status == 1)
    #expect(result.stdout.contains("FAIL"))
    #expect(result.stdout.contains("class labels differ"))
    // Without expected labels the swap cannot be seen from the outputs alone; --labels states them.
    let labelled = try run(["verify", Self.digitsModel, output.path, "--labels", "0,1,2,3,4,5,6,7,8,9"])
    #expect(labelled.status == 1)
  }

  @Test func convertWithVerifyKeepsTheFileAndReports() throws {
    let directory = try Fixtures.temporaryDirectory()
    let (result, output) = try convertDigits(labels: "0,1,2,3,4,5,6,7,8,9", in: directory, extra: ["--verify"])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("PASS"))
    #expect(FileManager.default.fileExists(atPath: output.path))
  }

  @Test func verifyChecksTheGivenPreprocessingAndPrintsTheLayerTable() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let (_, output) = try convertDigits(labels: "0,1,2,3,4,5,6,7,8,9", in: directory, extra: ["--gray-bias", "0.25"])
    let unchecked = try run(["verify", Self.digitsModel, output.path, "--samples", "2"])
    #expect(unchecked.status == 0)
    #expect(unchecked.stdout.contains("network input = 0.00392157 x pixel + 0.25, GRAYSCALE (not checked"))
    let checked = try run([
      "verify", Self.digitsModel, output.path, "--samples", "2", "--image-scale", "0.00392156862745098", "--json",
    ])
    #expect(checked.status == 1)
    let report = try JSONSerialization.jsonObject(with: Data(checked.stdout.utf8)) as? [String: Any]
    let layers = report?["layers"] as? [[String: Any]] ?? []
    #expect(layers.count >= 8)
    #expect(layers.first?["sourceType"] as? String == "input")
    #expect((report?["firstMismatch"] as? [String: Any])?["convertedType"] as? String == "imageScaler")
    #expect((report?["preprocessing"] as? [[String: Any]])?.first?["passed"] as? Bool == false)
    let text = try run([
      "verify", Self.digitsModel, output.path, "--samples", "2", "--image-scale", "0.00392156862745098", "--layers",
    ])
    #expect(text.stdout.contains("FAIL preprocessing of 'input1'"))
    #expect(text.stdout.contains("source 'conv1' (Conv2D) conv1_output <-> Core ML 'conv1' (convolution)"))
  }

  @Test func convertWithVerifyChecksItsOwnPreprocessingAndWarns() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("Digits.mlmodel")
    let noScale = try run([
      "convert", Self.digitsModel, "--image-input", "input1", "-o", output.path, "--verify", "--samples", "2", "--atol",
      "1e-4",
    ])
    #expect(noScale.status == 0, "\(noScale.stderr)")
    #expect(noScale.stderr.contains("warning: image input 'input1': no image scale or bias"))
    #expect(noScale.stdout.contains("2 random samples"))
    #expect(noScale.stdout.contains("0.0001 x max(1, RMS)"))
    let misplaced = try run(["convert", Self.digitsModel, "-o", output.path, "--samples", "2"])
    #expect(misplaced.status == 64)
  }

  static let verifyFailures: [ExitCase] = [
    ExitCase(["verify", digitsModel], 64),
    ExitCase(["verify", digitsModel, "x.mlmodel", "--samples", "-2"], 64),
    ExitCase(["verify", digitsModel, "/nonexistent/model.mlmodel"], 66),
    ExitCase(["verify", "/nonexistent/model.h5", Fixtures.url("coremltools/digits_cnn.mlmodel").path], 66),
    ExitCase(["verify", digitsModel, Fixtures.url("bad/not_hdf5.h5").path], 65),
    ExitCase(["verify", digitsModel, Fixtures.url("coremltools/rgb_classifier_program.mlpackage").path], 65),
    ExitCase(["verify", digitsModel, Fixtures.url("coremltools/rgb_classifier.mlmodel").path], 65),
    ExitCase(
      [
        "verify", digitsModel, Fixtures.url("coremltools/digits_cnn.mlmodel").path, "--reference",
        Fixtures.url("bad/not_hdf5.h5").path,
      ], 65),
  ]

  @Test(arguments: verifyFailures)
  func verifyExitCodes(case exitCase: ExitCase) throws {
    let result = try run(exitCase.arguments)
    #expect(result.status == exitCase.expected, "\(exitCase): \(result.stdout) \(result.stderr)")
    #expect(!result.stderr.isEmpty)
  }

  /// Unknown layers fail the conversion (65) unless --custom-layers makes them Core ML custom layers;
  /// verify then says it cannot run them (65), and a sequence model verifies end to end (0).
  @Test func customLayersAndSequencesFromTheCommandLine() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let custom = Fixtures.url("layers/keras3/custom_layer.h5").path
    let output = directory.appendingPathComponent("custom.mlmodel").path
    #expect(try run(["convert", custom, "-o", output]).status == 65)
    #expect(try run(["convert", custom, "--custom-layers", "-o", output]).status == 0)
    let refused = try run(["verify", custom, output])
    #expect(refused.status == 65)
    #expect(refused.stderr.contains("custom layer ScaleShift"))
    let text = Fixtures.url("layers/keras3/text_bilstm.h5").path
    let converted = directory.appendingPathComponent("text.mlmodel").path
    let result = try run(["convert", text, "--labels", "neg,neu,pos", "-o", converted, "--verify"])
    #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
    #expect(result.stdout.contains("PASS"))
  }
}
