import CoreMLFormat
import CoreMLTestSupport
import Foundation
import TestSupport
import Testing

/// `modelconv` never destroys a user's file and refuses options and labels that cannot be right, with
/// the documented exit codes.
@Suite struct CommandLineSafetyTests {
  let cli = CommandLineTests()
  static let digits = Fixtures.digits.appendingPathComponent("digits_cnn.h5").path
  static let tinyCNN = Fixtures.url("onnx/tiny_cnn.onnx").path

  func copyOfDigits(in directory: URL) throws -> URL {
    let copy = directory.appendingPathComponent("model.h5")
    try FileManager.default.copyItem(at: URL(fileURLWithPath: Self.digits), to: copy)
    return copy
  }

  @Test func outputThatIsTheInputIsRefused() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let input = try copyOfDigits(in: directory)
    let original = try Data(contentsOf: input)
    let symbolic = directory.appendingPathComponent("link.mlmodel")
    try FileManager.default.createSymbolicLink(at: symbolic, withDestinationURL: input)
    let hard = directory.appendingPathComponent("hard.mlmodel")
    try FileManager.default.linkItem(at: input, to: hard)
    for output in [input.path, symbolic.path, hard.path, directory.appendingPathComponent("./model.h5").path] {
      let result = try cli.run(["convert", input.path, "-o", output])
      #expect(result.status == 64, "\(output): \(result.stderr)")
      #expect(result.stderr.contains("the input"))
    }
    #expect(try Data(contentsOf: input) == original)
    // The labels file is an input too.
    let labels = directory.appendingPathComponent("labels.txt")
    try Data("0\n1\n2\n3\n4\n5\n6\n7\n8\n9\n".utf8).write(to: labels)
    #expect(try cli.run(["convert", input.path, "--labels-file", labels.path, "-o", labels.path]).status == 64)
  }

  /// Every file under `url` (or the file itself) with its bytes, to compare before and after.
  static func snapshot(_ url: URL) throws -> [String: Data] {
    var result: [String: Data] = [:]
    var isFolder: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isFolder) else { return result }
    guard isFolder.boolValue else { return [url.path: try Data(contentsOf: url)] }
    for case let path as String in FileManager.default.enumerator(atPath: url.path) ?? NSEnumerator() {
      let file = url.appendingPathComponent(path)
      var folder: ObjCBool = false
      if FileManager.default.fileExists(atPath: file.path, isDirectory: &folder), !folder.boolValue {
        result[path] = try Data(contentsOf: file)
      }
    }
    return result
  }

  /// A package given as its own output (also with a slash, through a link, or a file inside it) is
  /// refused with 64 and left as it was; so is an output over an ONNX model's external data file.
  @Test func packagesAndExternalDataAreNeverReplaced() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let package = directory.appendingPathComponent("p.mlpackage")
    try FileManager.default.copyItem(at: Fixtures.url("coremltools/dense_classifier_program.mlpackage"), to: package)
    let before = try Self.snapshot(package)
    let link = directory.appendingPathComponent("q.mlpackage")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: package)
    let inside = package.appendingPathComponent("Data/com.apple.CoreML/model.mlmodel").path
    for output in [
      package.path, package.path + "/", link.path, inside, package.appendingPathComponent("Data/new.mlmodel").path,
    ] {
      for extra in [[], ["--verify"]] {
        let result = try cli.run(["convert", package.path, "-o", output] + extra)
        #expect(result.status == 64, "\(output): \(result.stderr)")
        #expect(result.stderr.contains("the input"), "\(result.stderr)")
      }
    }
    // The source given through the link, the output the real folder.
    #expect(try cli.run(["convert", link.path, "-o", package.path]).status == 64)
    #expect(try Self.snapshot(package) == before)
    #expect(!FileManager.default.fileExists(atPath: package.appendingPathComponent("Data/new.mlmodel").path))
    // Another output beside it is fine.
    #expect(
      try cli.run(["convert", package.path, "-o", directory.appendingPathComponent("other.mlpackage").path]).status == 0
    )

    // An ONNX model whose external data file is named like a Core ML model (same-length rename of the
    // location inside the model, so the protobuf stays valid).
    let onnx = [UInt8](try Data(contentsOf: Fixtures.url("onnx/external_data/mlp_external.onnx")))
    let (old, new) = (Array("weights.bin".utf8), Array("wei.mlmodel".utf8))
    var renamed = onnx
    for start in 0...(renamed.count - old.count) where Array(renamed[start..<start + old.count]) == old {
      renamed.replaceSubrange(start..<start + old.count, with: new)
    }
    #expect(renamed != onnx)
    let model = directory.appendingPathComponent("m.onnx")
    try Data(renamed).write(to: model)
    let weights = directory.appendingPathComponent("wei.mlmodel")
    try FileManager.default.copyItem(at: Fixtures.url("onnx/external_data/weights.bin"), to: weights)
    let weightBytes = try Data(contentsOf: weights)
    let hard = directory.appendingPathComponent("hard.mlmodel")
    try FileManager.default.linkItem(at: weights, to: hard)
    for output in [weights.path, hard.path] {
      let result = try cli.run(["convert", model.path, "-o", output])
      #expect(result.status == 64, "\(output): \(result.stderr)")
      #expect(result.stderr.contains("wei.mlmodel"))
    }
    #expect(try Data(contentsOf: weights) == weightBytes)
    #expect(
      try cli.run(["convert", model.path, "-o", directory.appendingPathComponent("fine.mlmodel").path]).status == 0)

    // evaluate's report never goes over the model or into the folder it reads.
    let images = directory.appendingPathComponent("images")
    try FileManager.default.copyItem(at: Fixtures.digits.appendingPathComponent("test_images"), to: images)
    let converted = directory.appendingPathComponent("digits.mlmodel")
    #expect(
      try cli.run([
        "convert", Self.digits, "--image-input", "input1", "--image-scale", "0.00392156862745098", "--labels-file",
        Fixtures.digits.appendingPathComponent("labels.txt").path, "-o", converted.path,
      ]).status == 0)
    let imagesBefore = try Self.snapshot(images)
    for report in [converted.path, images.appendingPathComponent("report.html").path] {
      let result = try cli.run(["evaluate", converted.path, images.path, "--report", report])
      #expect(result.status == 64, "\(report): \(result.stderr)")
    }
    #expect(try Self.snapshot(images) == imagesBefore)
  }

  @Test func specialFilesAreNeverReplaced() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let fifo = directory.appendingPathComponent("pipe")
    #expect(mkfifo(fifo.path, 0o600) == 0)
    var targets = [fifo]
    // A copy of /dev/null (needs root, as CI runs; skipped otherwise).
    let device = directory.appendingPathComponent("null")
    let mknod = Process()
    mknod.executableURL = URL(fileURLWithPath: "/usr/bin/mknod")
    mknod.arguments = [device.path, "c", "1", "3"]
    if (try? mknod.run()) != nil {
      mknod.waitUntilExit()
      if mknod.terminationStatus == 0 { targets.append(device) }
    }
    for target in targets {
      let before = AtomicFile.nodeKind(target.path)
      let result = try cli.run(["convert", Self.digits, "-o", target.path])
      #expect(result.status == 64, "\(target.path): \(result.stderr)")
      #expect(result.stderr.contains("not a regular file"))
      #expect(AtomicFile.nodeKind(target.path)?.kind == before?.kind)
      #expect(AtomicFile.nodeKind(target.path)?.kind != "a regular file")
    }
    // An existing folder is never replaced: the model goes into it under the input's name.
    let folder = directory.appendingPathComponent("models")
    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    #expect(try cli.run(["convert", Self.digits, "-o", folder.path]).status == 0)
    #expect(AtomicFile.nodeKind(folder.path)?.kind == "a folder")
    #expect(AtomicFile.nodeKind(folder.appendingPathComponent("digits_cnn.mlmodel").path)?.kind == "a regular file")
    // A symbolic link to a regular file is written through: the link stays, its target gets the model.
    let target = directory.appendingPathComponent("real.mlmodel")
    try Data("old".utf8).write(to: target)
    let link = directory.appendingPathComponent("link.mlmodel")
    try FileManager.default.createSymbolicLink(at: link, withDestinationURL: target)
    #expect(try cli.run(["convert", Self.digits, "-o", link.path]).status == 0)
    #expect(try FileManager.default.destinationOfSymbolicLink(atPath: link.path) == target.path)
    #expect(try CoreMLSpecReader.read(contentsOf: target).layers.count > 0)
  }

  static let refusals: [CommandLineTests.ExitCase] = [
    .init(["convert", digits, "--labels", ",,,"], 64),
    .init(["convert", digits, "--labels", "a,,b"], 64),
    .init(["convert", digits, "--input-names", ","], 64),
    .init(["convert", digits, "--labels", "0,1,2,3,4,5,6,7,8,-0"], 65),
    .init(["convert", digits, "--labels", "a,b,c,d,e,f,g,h,i,a"], 65),
    .init(["convert", digits, "--labels", "0,1,2,3,4,5,6,7,8,9", "--predicted-feature-name", "input1"], 65),
    .init(["convert", digits, "--labels", "0,1,2,3,4,5,6,7,8,9", "--predicted-feature-name", "output1"], 65),
    .init(["convert", digits, "--samples", "2"], 64),
    .init(["convert", digits, "--verify", "--atol", "-1"], 64),
    .init(["verify", digits, digits, "--samples", "1000000000"], 64),
    .init(["verify", digits, digits, "--rtol", "-0.5"], 64),
    .init(
      [
        "verify", digits, Fixtures.url("coremltools/digits_cnn.mlmodel").path, "--reference",
        "/nonexistent/reference.h5",
      ], 66),
    // Options that name nothing or cannot apply as given (issue 34): never silently dropped.
    .init(["convert", tinyCNN, "--input-shape", "nosuch=1,3,32,32"], 64),
    .init(["convert", digits, "--input-shape", "nosuch=1,8,8,1"], 64),
    .init(["convert", tinyCNN, "--architecture", digits], 64),
    .init(["convert", tinyCNN, "--image-input", "input", "--image-mean", "0.5"], 64),
    .init(["convert", digits, "--image-input", "input1", "--image-mean", "0.5,0.5,0.5"], 64),
  ]

  /// An output named with an extension the tool does not write is refused before anything is written.
  @Test func outputsOfNoFormatAreRefused() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    for name in ["Model.aimodel", "Model", "Model.mlmodel.bak", "Model.onnx"] {
      let output = directory.appendingPathComponent(name)
      let result = try cli.run(["convert", Self.digits, "-o", output.path])
      #expect(result.status == 64, "\(name): \(result.stderr)")
      #expect(result.stderr.contains("neither NAME.mlmodel"), "\(name): \(result.stderr)")
      #expect(!FileManager.default.fileExists(atPath: output.path))
    }
  }

  @Test(arguments: refusals)
  func refusedWithTheDocumentedCode(_ exitCase: CommandLineTests.ExitCase) throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("out.mlmodel")
    let arguments =
      exitCase.arguments.first == "convert" ? exitCase.arguments + ["-o", output.path] : exitCase.arguments
    let result = try cli.run(arguments)
    #expect(result.status == exitCase.expected, "\(exitCase): \(result.stdout) \(result.stderr)")
    #expect(!result.stderr.isEmpty)
    #expect(!FileManager.default.fileExists(atPath: output.path), "no output after a refusal")
  }

  @Test func expectedLabelsOnAModelWithoutLabelsFail() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("plain.mlmodel")
    #expect(try cli.run(["convert", Self.digits, "-o", output.path]).status == 0)
    let result = try cli.run(["verify", Self.digits, output.path, "--labels", "0,1,2", "--samples", "1"])
    #expect(result.status == 1)
    #expect(result.stdout.contains("class labels differ"))
  }

  @Test func referenceWithoutSamplesOrInputsIsRefused() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let converted = Fixtures.url("coremltools/digits_cnn.mlmodel").path
    // A Keras file is an HDF5 file without inputs/0: not a reference.
    let notReference = try cli.run(["verify", Self.digits, converted, "--reference", Self.digits])
    #expect(notReference.status == 65)
    #expect(notReference.stderr.contains("inputs/0"))
  }

  @Test func verificationThatCannotRunLeavesTheOldFileAndNoStagedOnes() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("Custom.mlmodel")
    try Data("previous".utf8).write(to: output)
    // A custom layer converts, but verify cannot run it (exit 65): the conversion is not put in place.
    let result = try cli.run([
      "convert", Fixtures.url("layers/tfkeras215/custom_layer.h5").path, "--custom-layers", "-o", output.path,
      "--verify", "--samples", "1",
    ])
    #expect(result.status == 65, "\(result.stderr)")
    #expect(try Data(contentsOf: output) == Data("previous".utf8))
    let leftovers = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter {
      $0 != "Custom.mlmodel"
    }
    #expect(leftovers.isEmpty, "\(leftovers)")
  }
}
