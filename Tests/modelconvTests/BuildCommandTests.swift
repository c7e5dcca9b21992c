import CoreMLFormat
import CoreMLTestSupport
import Foundation
import TestSupport
import Testing

/// `modelconv build` end to end: a manifest of several models, each reported by name, broken ones not
/// stopping the others; a second run skips what is up to date; a changed option rebuilds only its entry.
@Suite struct BuildCommandTests {
  static let digits = Fixtures.packageRoot.appendingPathComponent("Samples/Digits")

  static func manifest(_ entries: [[String: Any]], in directory: URL) throws -> URL {
    let url = directory.appendingPathComponent("modelconv.json")
    try JSONSerialization.data(withJSONObject: ["models": entries], options: [.prettyPrinted, .sortedKeys]).write(
      to: url)
    return url
  }

  static func lines(_ stdout: String) throws -> [[String: Any]] {
    try stdout.split(separator: "\n").map { try JSONSerialization.jsonObject(with: Data($0.utf8)) as! [String: Any] }
  }

  static let good: [String: Any] = [
    "name": "digits", "source": digits.appendingPathComponent("digits_cnn.h5").path, "output": "out/Digits.mlmodel",
    "input-names": "image", "image-input": "image", "image-scale": "1/255",
    "labels-file": digits.appendingPathComponent("labels.txt").path,
    "verify": true, "samples": 2,
  ]

  @Test func brokenEntriesAreReportedByNameWhileTheOthersFinish() throws {
    let directory = try Fixtures.temporaryDirectory()
    let source = Self.digits.appendingPathComponent("digits_cnn.h5").path
    let manifest = try Self.manifest(
      [
        Self.good,
        [
          "name": "program", "source": source, "output": "out/Digits.mlpackage", "precision": "float32", "verify": true,
          "samples": 2,
        ],
        ["name": "missing", "source": "nothere.h5"],
        ["name": "labels", "source": source, "output": "out/labels.mlmodel", "labels": ["one", "two"]],
        // float16 weights checked with no tolerance at all: a parity failure.
        [
          "name": "strict", "source": source, "output": "out/strict.mlpackage", "precision": "float16", "verify": true,
          "atol": 0, "rtol": 0, "samples": 2,
        ],
      ], in: directory)
    let result = try Modelconv.run(["build", "--manifest", manifest.path, "--json", "-j", "2"], readTimeout: "60")
    #expect(result.status == 65, "\(result.stderr)")
    let reports = try Self.lines(result.stdout)
    let byName = Dictionary(uniqueKeysWithValues: reports.dropLast().map { ($0["name"] as! String, $0) })
    #expect(
      byName["digits"]?["status"] as? String == "converted" && byName["program"]?["status"] as? String == "converted")
    #expect(
      byName["missing"]?["status"] as? String == "bad-input"
        && (byName["missing"]?["message"] as? String ?? "").contains("nothere.h5"))
    #expect(
      byName["labels"]?["status"] as? String == "bad-input"
        && (byName["labels"]?["message"] as? String ?? "").contains("2 class labels"))
    #expect(
      byName["strict"]?["status"] as? String == "parity-failed"
        && (byName["strict"]?["message"] as? String ?? "").contains("FAIL"))
    let summary = try #require(reports.last)
    #expect(
      summary["schema"] as? String == "modelconv.build-summary/1" && summary["converted"] as? Int == 2
        && summary["badInput"] as? Int == 2)
    #expect(summary["parityFailed"] as? Int == 1)
    // The good outputs are complete models; the refused ones were never written.
    #expect(
      try CoreMLSpecReader.read(contentsOf: directory.appendingPathComponent("out/Digits.mlmodel")).int64ClassLabels
        == Array(0...9))
    #expect(
      FileManager.default.fileExists(
        atPath: directory.appendingPathComponent("out/Digits.mlpackage/Manifest.json").path))
    #expect(!FileManager.default.fileExists(atPath: directory.appendingPathComponent("out/labels.mlmodel").path))
    // Without the broken entries only the parity failure is left: exit 1.
    _ = try Self.manifest(
      [
        Self.good,
        [
          "name": "strict", "source": source, "output": "out/strict.mlpackage", "precision": "float16", "verify": true,
          "atol": 0, "rtol": 0, "samples": 2,
        ],
      ], in: directory)
    #expect(try Modelconv.run(["build", "--manifest", manifest.path], readTimeout: "60").status == 1)
  }

  @Test func aSecondRunSkipsAndAChangedLabelRebuildsOnlyItsEntry() throws {
    let directory = try Fixtures.temporaryDirectory()
    let labels = directory.appendingPathComponent("labels.txt")
    try (0..<10).map { "digit \($0)" }.joined(separator: "\n").write(to: labels, atomically: true, encoding: .utf8)
    var first = Self.good
    first["labels-file"] = "labels.txt"
    let other: [String: Any] = [
      "name": "plain", "source": Self.digits.appendingPathComponent("digits_cnn.h5").path,
      "output": "out/plain.mlmodel",
    ]
    let manifest = try Self.manifest([first, other], in: directory)
    func statuses() throws -> [String: String] {
      let result = try Modelconv.run(["build", "--manifest", manifest.path, "--json"], readTimeout: "60")
      #expect(result.status == 0, "\(result.stderr) \(result.stdout)")
      return Dictionary(
        uniqueKeysWithValues: try Self.lines(result.stdout).dropLast().map {
          ($0["name"] as! String, $0["status"] as! String)
        })
    }
    #expect(try statuses() == ["digits": "converted", "plain": "converted"])
    #expect(try statuses() == ["digits": "skipped", "plain": "skipped"])
    // A label changes in the labels file: that model is converted again, with the new label.
    try (0..<10).map { $0 == 3 ? "three" : "digit \($0)" }.joined(separator: "\n").write(
      to: labels, atomically: true, encoding: .utf8)
    #expect(try statuses() == ["digits": "converted", "plain": "skipped"])
    #expect(
      try CoreMLSpecReader.read(contentsOf: directory.appendingPathComponent("out/Digits.mlmodel")).stringClassLabels[3]
        == "three")
    // An option changes in the manifest: that model again.
    var changed = first
    changed["image-scale"] = "1/256"
    _ = try Self.manifest([changed, other], in: directory)
    #expect(try statuses() == ["digits": "converted", "plain": "skipped"])
    // A deleted output is written again.
    try FileManager.default.removeItem(at: directory.appendingPathComponent("out/plain.mlmodel"))
    #expect(try statuses() == ["digits": "skipped", "plain": "converted"])
  }

  /// A bad manifest names the entry and the key, and nothing runs.
  @Test(arguments: [
    (
      #"{"models": [{"source": "a.h5", "image-scal": "1/255"}]}"#,
      #"models[0] ("a"): unknown key 'image-scal'; did you mean 'image-scale'?"#
    ),
    (#"{"models": [{"name": "x"}]}"#, #"models[0]: "source" (the model file) is required"#),
    (#"{"models": [{"source": "a.h5", "verify": "yes"}]}"#, #"models[0] ("a"): 'verify' is a flag: true or false"#),
    (#"{"models": [{"source": "a.h5", "samples": true}]}"#, #"models[0] ("a"): 'samples' needs a string or a number"#),
    (
      #"{"models": [{"source": "a.h5"}, {"source": "b/a.h5"}]}"#,
      #"models[1] ("a"): the name 'a' is used by another entry"#
    ),
    (#"{"model": []}"#, "unknown key 'model'"),
    ("[1, 2]", "the manifest must be a JSON object"),
    ("{", "not valid JSON"),
  ])
  func badManifestsNameTheEntryAndKey(_ text: String, _ expected: String) throws {
    let directory = try Fixtures.temporaryDirectory()
    let manifest = directory.appendingPathComponent("modelconv.json")
    try Data(text.utf8).write(to: manifest)
    let result = try Modelconv.run(["build", "--manifest", manifest.path], readTimeout: "60")
    #expect(result.status == 65)
    #expect(result.stderr.contains(expected), "\(result.stderr)")
  }

  /// The schema in Schemas/ is the one generated from convert's options (so neither can drift).
  @Test func theSchemaFileIsTheGeneratedOne() throws {
    let generated = try Modelconv.run(["build", "--print-schema"])
    #expect(generated.status == 0)
    let file = try String(
      contentsOf: Fixtures.packageRoot.appendingPathComponent("Schemas/modelconv-manifest.schema.json"), encoding: .utf8
    )
    #expect(
      file == generated.stdout,
      "regenerate with: modelconv build --print-schema > Schemas/modelconv-manifest.schema.json")
    let schema = try JSONSerialization.jsonObject(with: Data(file.utf8)) as! [String: Any]
    let items = ((schema["properties"] as! [String: Any])["models"] as! [String: Any])["items"] as! [String: Any]
    let keys = Set((items["properties"] as! [String: Any]).keys)
    #expect(
      keys.isSuperset(of: [
        "source", "output", "labels-file", "image-input", "image-mean", "image-std", "precision", "target", "verify",
        "atol", "reference",
      ]))
    #expect(!keys.contains("json") && !keys.contains("help"))
  }

  /// A manifest's list value for `input-shape` enumerates an input's shapes, a range is a string: both
  /// verified at each size (verify is given the same shapes), and the packages declare them.
  @Test func flexibleShapesInAManifest() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let flexible = Fixtures.url("flexible")
    let manifest = try Self.manifest(
      [
        [
          "name": "enumerated", "source": flexible.appendingPathComponent("conv1d.h5").path,
          "output": "out/Enumerated.mlpackage", "input-shape": ["signal=1,16,6", "signal=1,24,6"], "verify": true,
          "samples": 2,
        ],
        [
          "name": "range", "source": flexible.appendingPathComponent("conv1d.h5").path,
          "output": "out/Range.mlpackage", "input-shape": "signal=1,8:64:16,6", "verify": true, "samples": 2,
        ],
      ], in: directory)
    let result = try Modelconv.run(["build", "--manifest", manifest.path, "--json"], readTimeout: "60")
    #expect(result.status == 0, "\(result.stderr)")
    let inspected = try Modelconv.run([
      "inspect", directory.appendingPathComponent("out/Enumerated.mlpackage").path, "--json",
    ])
    #expect(inspected.stdout.contains("\"enumeratedShapes\""), "\(inspected.stdout)")
    let range = try Modelconv.run(["inspect", directory.appendingPathComponent("out/Range.mlpackage").path])
    #expect(range.stdout.contains("1 × 8...64 × 6"), "\(range.stdout)")
  }
}
