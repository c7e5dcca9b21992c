import CoreMLFormat
import CoreMLTestSupport
import Dispatch
import Foundation
import KerasFormat
import ModelConverter
import TestSupport
import Testing

/// Untrusted input files: corrupt HDF5, blocking paths, other formats, `.keras` archives, threads.
@Suite struct HardeningTests {
  struct Result {
    var status: Int32
    var signaled: Bool
    var stderr: String
  }

  /// Runs the built `modelconv` with a short reader timeout.
  static func modelconv(_ arguments: [String], timeout: String = "5") throws -> Result {
    let result = try Modelconv.run(arguments, readTimeout: timeout)
    return Result(status: result.status, signaled: result.signaled, stderr: result.stderr)
  }

  // MARK: corrupt HDF5

  /// Single-bit flips over a deterministic sample of positions, and truncations: every run ends in a
  /// model or a clean error (exit 65 naming the file), never a crash, a hang or a partial output.
  @Test func bitFlipsAndTruncationsNeverCrashTheTool() throws {
    let source = try [UInt8](Data(contentsOf: Fixtures.url("tfkeras215/sequential_plain.h5")))
    let directory = try Fixtures.temporaryDirectory()
    var cases: [(String, [UInt8])] = []
    var random = SplitMix64(seed: 9)
    for index in 0..<160 {
      var bytes = source
      // Half the flips land in the first 4 KiB (superblock, object headers, heaps), half anywhere.
      let position = index % 2 == 0 ? Int(random.next() % 4096) : Int(random.next() % UInt64(bytes.count))
      bytes[position] ^= UInt8(1 << (random.next() % 8))
      cases.append(("flip\(index)_at\(position)", bytes))
    }
    for length in stride(from: 0, to: source.count, by: source.count / 12) {
      cases.append(("cut\(length)", Array(source.prefix(length))))
    }
    var outcomes: [Int32: Int] = [:]
    for (name, bytes) in cases {
      let input = directory.appendingPathComponent(name + ".h5")
      let output = directory.appendingPathComponent(name + ".mlmodel")
      try Data(bytes).write(to: input)
      let start = Date()
      let result = try Self.modelconv(["convert", input.path, "-o", output.path], timeout: "3")
      #expect(!result.signaled, "\(name): modelconv died of a signal")
      #expect(Date().timeIntervalSince(start) < 20, "\(name): took too long")
      #expect([0, 65].contains(result.status), "\(name): exit \(result.status): \(result.stderr)")
      if result.status != 0 {
        // The file, or (for a flipped letter in the config) the layer and field.
        #expect(result.stderr.contains(input.path) || result.stderr.contains("layer '"), "\(name): \(result.stderr)")
        #expect(!FileManager.default.fileExists(atPath: output.path), "\(name): partial output")
      }
      outcomes[result.status, default: 0] += 1
    }
    #expect(outcomes[65, default: 0] > 0)
  }

  /// An input the HDF5 fuzzer found (Scripts/fuzz.sh hdf5): libhdf5 1.10 loops forever in H5Aread of the
  /// variable-length `model_config` string. In process it hangs; through modelconv it is a clean exit 65.
  @Test func fuzzerFoundHangIsContained() throws {
    let path = Fixtures.url("bad/fuzz_hdf5_hang.h5").path
    let start = Date()
    let result = try Self.modelconv(
      ["convert", path, "-o", try Fixtures.temporaryDirectory().appendingPathComponent("x.mlmodel").path], timeout: "2")
    #expect(result.status == 65)
    #expect(
      result.stderr.contains(path) && result.stderr.contains("did not finish reading the file within 2 s"),
      "\(result.stderr)")
    #expect(Date().timeIntervalSince(start) < 15)
  }

  /// A `--reference` file is read by the same limited child: a damaged one is a clean exit 65.
  @Test func damagedReferenceIsContained() throws {
    let converted = Fixtures.url("coremltools/digits_cnn.mlmodel").path
    let source = Fixtures.digits.appendingPathComponent("digits_cnn.h5").path
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    var bytes = [UInt8](try Data(contentsOf: Fixtures.digits.appendingPathComponent("digits_cnn.reference.h5")))
    for offset in stride(from: 0, to: min(bytes.count, 4096), by: 97) { bytes[offset] ^= 0x10 }
    let damaged = directory.appendingPathComponent("damaged.reference.h5")
    try Data(bytes).write(to: damaged)
    for reference in [Fixtures.url("bad/fuzz_hdf5_hang.h5").path, damaged.path] {
      let start = Date()
      let result = try Self.modelconv(["verify", source, converted, "--reference", reference], timeout: "2")
      #expect(result.status == 65, "\(reference): \(result.stderr)")
      #expect(result.stderr.contains(reference))
      #expect(Date().timeIntervalSince(start) < 30)
    }
  }

  /// The isolated reader turns a child that crashes or hangs into `readerFailed`.
  @Test func isolatedReaderReportsCrashesAndTimeouts() throws {
    // `/bin/sh -c 'kill -SEGV $$' __read-keras ...`-like children: a shell script standing in for the reader.
    let directory = try Fixtures.temporaryDirectory()
    let model = Fixtures.url("tfkeras215/sequential_plain.h5").path
    for (script, expected) in [
      ("kill -SEGV $$", "crashed"), ("sleep 30", "did not finish reading the file within 1 s"),
    ] {
      let executable = directory.appendingPathComponent("reader-\(expected.count).sh")
      try "#!/bin/sh\n\(script)\n".write(to: executable, atomically: true, encoding: .utf8)
      try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: executable.path)
      let isolation = KerasReaderIsolation(executable: executable.path, timeout: 1, cpuSeconds: 1)
      let start = Date()
      do {
        _ = try isolation.read(.model(path: model))
        Issue.record("no error for \(script)")
      } catch let error as KerasReaderError {
        guard case .readerFailed(let path, let detail) = error else {
          Issue.record("\(error)")
          continue
        }
        #expect(path == model)
        #expect(detail.contains(expected), "\(detail)")
      }
      #expect(Date().timeIntervalSince(start) < 10)
    }
  }

  /// The wire format round-trips, and every truncation or flipped byte of it is refused, not trusted.
  @Test func snapshotWireFormatIsValidated() throws {
    let snapshot = try KerasModelSnapshot.read(path: Fixtures.url("keras3/batchnorm.h5").path)
    let bytes = snapshot.encoded()
    #expect(try KerasModelSnapshot.decodeForTesting(bytes) == snapshot)
    for length in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 400)) {
      #expect(throws: (any Error).self) { try KerasModelSnapshot.decodeForTesting(Array(bytes.prefix(length))) }
    }
    var random = SplitMix64(seed: 3)
    for _ in 0..<300 {
      var corrupt = bytes
      corrupt[Int(random.next() % UInt64(corrupt.count))] ^= UInt8(1 << (random.next() % 8))
      _ = try? KerasModelSnapshot.decodeForTesting(corrupt)  // must not crash; may decode to other values
    }
  }

  /// The Debian libhdf5 is not thread-safe: conversions from many threads must match one at a time.
  @Test func concurrentConversionsMatchSerialOnes() throws {
    let models = [
      "keras3/batchnorm.h5", "tfkeras215/sequential_plain.h5", "keras3/merge.h5", "keras3/nested.h5",
      "keras_zip/sequential_cnn.keras", "keras_zip/functional.keras", "tfkeras2/pooling.h5", "keras3/conv_variants.h5",
    ]
    let serial = try models.map { try KerasConverter.convert(modelAt: Fixtures.url($0)).bytes }
    final class Box: @unchecked Sendable {
      var results: [[UInt8]?]
      let lock = NSLock()
      init(_ count: Int) { results = Array(repeating: nil, count: count) }
    }
    let box = Box(models.count * 3)
    DispatchQueue.concurrentPerform(iterations: models.count * 3) { index in
      let bytes = try? KerasConverter.convert(modelAt: Fixtures.url(models[index % models.count])).bytes
      box.lock.withLock { box.results[index] = bytes }
    }
    for (index, bytes) in box.results.enumerated() {
      #expect(
        bytes == serial[index % models.count], "\(models[index % models.count]) differs when converted concurrently")
    }
  }

  // MARK: blocking inputs

  @Test func fifosAreRefusedEverywhere() throws {
    let directory = try Fixtures.temporaryDirectory()
    let fifo = directory.appendingPathComponent("pipe.h5").path
    #expect(mkfifo(fifo, 0o600) == 0)
    let model = Fixtures.url("keras3/dense_classifier.h5").path
    let converted = directory.appendingPathComponent("m.mlmodel").path
    #expect(try Self.modelconv(["convert", model, "-o", converted]).status == 0)
    let runs: [[String]] = [
      ["convert", fifo, "-o", directory.appendingPathComponent("a.mlmodel").path],
      ["convert", model, "--labels-file", fifo, "-o", directory.appendingPathComponent("b.mlmodel").path],
      ["convert", model, "--architecture", fifo, "-o", directory.appendingPathComponent("c.mlmodel").path],
      ["verify", fifo, converted],
      ["verify", model, fifo],
      ["verify", model, converted, "--reference", fifo],
    ]
    for arguments in runs {
      let result = try Self.modelconv(arguments)
      #expect(result.status == 66, "\(arguments): \(result.status) \(result.stderr)")
      #expect(result.stderr.contains("FIFO"), "\(arguments): \(result.stderr)")
    }
  }

  @Test func externalLinksAreRefused() throws {
    let path = Fixtures.url("bad/external_link.h5").path
    #expect(throws: KerasReaderError.externalLink(path: path, object: "/model_weights/conv2d/conv2d/kernel:0")) {
      try KerasModelFile(path: path)
    }
    let result = try Self.modelconv([
      "convert", path, "-o", try Fixtures.temporaryDirectory().appendingPathComponent("x.mlmodel").path,
    ])
    #expect(result.status == 65)
    #expect(result.stderr.contains("external link"))
  }

  // MARK: other formats

  @Test func otherFormatsSayWhatTheyAre() throws {
    let directory = try Fixtures.temporaryDirectory()
    func file(_ name: String, _ bytes: [UInt8]) throws -> String {
      let url = directory.appendingPathComponent(name)
      try Data(bytes).write(to: url)
      return url.path
    }
    let savedModel = directory.appendingPathComponent("saved")
    try FileManager.default.createDirectory(at: savedModel, withIntermediateDirectories: true)
    try Data([0x12, 0x00]).write(to: savedModel.appendingPathComponent("saved_model.pb"))
    // A tiny zip holding one stored entry "a.txt" (not a .keras file).
    let zip: [UInt8] = [
      0x50, 0x4B, 0x03, 0x04, 0x0A, 0, 0, 0, 0, 0, 0, 0, 0x21, 0, 0x43, 0xBE, 0xB7, 0xE8, 1, 0, 0, 0, 1, 0, 0, 0, 5, 0,
      0, 0,
      0x61, 0x2E, 0x74, 0x78, 0x74, 0x61,
      0x50, 0x4B, 0x01, 0x02, 0x14, 0, 0x0A, 0, 0, 0, 0, 0, 0, 0, 0x21, 0, 0x43, 0xBE, 0xB7, 0xE8, 1, 0, 0, 0, 1, 0, 0,
      0, 5, 0,
      0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x61, 0x2E, 0x74, 0x78, 0x74,
      0x50, 0x4B, 0x05, 0x06, 0, 0, 0, 0, 1, 0, 1, 0, 0x33, 0, 0, 0, 0x24, 0, 0, 0, 0, 0,
    ]
    let cases: [(String, String)] = [
      (try file("empty.h5", []), "an empty file"),
      (try file("notes.h5", Array("just some notes\n".utf8)), "a text file"),
      (try file("model.json", Array("{\"class_name\": \"Sequential\"}".utf8)), "architecture from model.to_json()"),
      (savedModel.path, "SavedModel"),
      // An ONNX header with no graph or operator set: read by the ONNX frontend, which says what is missing.
      (
        try file("model.onnx", [0x08, 0x07, 0x12, 0x07] + Array("pytorch".utf8) + [0x1A, 0x03, 0x31, 0x2E, 0x30]),
        "imports no operator set"
      ),
      (try file("model.bin", [0x08, 0x07, 0x12, 0x07] + Array("pytorch".utf8)), "imports no operator set"),
      (
        try file(
          "model_page.onnx",
          Array("<!DOCTYPE html><html><head><title>Download</title></head><body>sign in</body></html>\n".utf8)),
        "an HTML page"
      ),
      (try file("model.tflite", [0x1C, 0, 0, 0] + Array("TFL3".utf8) + [0, 0, 0x12, 0]), "TensorFlow Lite"),
      (try file("archive.keras", zip), "not a Keras .keras file"),
      (try file("garbage.keras", Array("PK\u{3}\u{4}garbage".utf8)), "not a readable .keras archive"),
    ]
    for (path, expected) in cases {
      let output = directory.appendingPathComponent("out.mlmodel").path
      let result = try Self.modelconv(["convert", path, "-o", output])
      #expect(result.status == 65, "\(path): \(result.status) \(result.stderr)")
      #expect(result.stderr.contains(path) && result.stderr.contains(expected), "\(path): \(result.stderr)")
      #expect(!FileManager.default.fileExists(atPath: output))
    }
  }

  // MARK: .keras

  /// Keras 3 `.keras` archives convert, and verify against the outputs real Keras saved.
  @Test(arguments: ["sequential_cnn", "functional"]) func kerasArchivesConvertAndVerify(_ name: String) throws {
    let directory = try Fixtures.temporaryDirectory()
    let model = Fixtures.url("keras_zip/\(name).keras").path
    let output = directory.appendingPathComponent("\(name).mlmodel").path
    let convert = try Self.modelconv(["convert", model, "-o", output])
    #expect(convert.status == 0, "\(convert.stderr)")
    let verify = try Self.modelconv([
      "verify", model, output, "--reference", Fixtures.url("keras_zip/\(name).reference.h5").path,
    ])
    #expect(verify.status == 0, "\(verify.stderr)")
    // The archive and the legacy .h5 of the same model give the same Core ML model but for the source note.
    let archive = try KerasConverter.convert(modelAt: URL(fileURLWithPath: model))
    let legacy = try KerasConverter.convert(modelAt: Fixtures.url("keras_zip/\(name).h5"))
    #expect(archive.graph == legacy.graph)
    #expect(archive.sourceProducerVersion == legacy.sourceProducerVersion)
  }

  @Test func labelsParserTakesHostileText() throws {
    #expect(throws: ConversionError.self) { try ClassLabels.parse([]) }
    #expect(throws: ConversionError.self) { try ClassLabels.parse(["a", " "]) }
    #expect(try ClassLabels.parse(["99999999999999999999", "1"]) == .strings(["99999999999999999999", "1"]))
  }
}
