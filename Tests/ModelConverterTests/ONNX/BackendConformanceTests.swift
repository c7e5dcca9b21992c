import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ONNXFormat
import ONNXTestSupport
import TestSupport
import Testing

/// ONNX's own backend tests as the standard. Every test of libonnx-testdata runs
/// (`BackendConformance`); those on the pass list kept in the repository (`BackendPassList.txt`) must
/// pass, so a regression fails CI. The table of outcomes per operator and the current passing list are
/// written to `.build/onnx-backend-table.txt` and `.build/onnx-backend-passing.txt`
/// (`Scripts/update-onnx-pass-list.sh` copies the latter over the pass list).
@Suite struct BackendConformanceTests {
  static let here = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  static let passListURL = here.appendingPathComponent("BackendPassList.txt")
  static let buildFolder = Fixtures.packageRoot.appendingPathComponent(".build")

  static func passList() throws -> [String] {
    try String(contentsOf: passListURL, encoding: .utf8).split(separator: "\n").map(String.init).filter {
      !$0.hasPrefix("#") && !$0.isEmpty
    }
  }

  @Test func passListHoldsAndTableIsWritten() throws {
    var outcomes: [(test: String, outcome: BackendConformance.Outcome)] = []
    for suite in ["node", "pytorch-converted", "pytorch-operator", "simple"] {
      let models = ONNXTestData.models(in: suite)
      #expect(models.count >= ONNXTestData.minimumModelCount[suite] ?? 1, "\(suite): \(models.count) models")
      for (name, _) in models {
        outcomes.append(("\(suite)/\(name)", BackendConformance.run(suite: suite, name: name)))
      }
    }
    let list = try Self.passList()
    #expect(list.count >= 100, "the pass list is shorter than expected: \(list.count)")
    let byTest = Dictionary(outcomes.map { ($0.test, $0.outcome) }, uniquingKeysWith: { a, _ in a })
    let regressions = list.filter { byTest[$0] != .passed }.map { "\($0): \(byTest[$0].map { "\($0)" } ?? "missing")" }
    #expect(
      regressions.isEmpty,
      "\(regressions.count) backend tests on the pass list no longer pass:\n\(regressions.joined(separator: "\n"))")

    // The table: per operator (the op types of each model), how many of its tests pass, fail, are refused or not supported.
    var rows: [String: [String: Int]] = [:]
    for (test, outcome) in outcomes {
      let parts = test.split(separator: "/").map(String.init)
      let ops =
        (try? ONNXModelReader.read(contentsOf: ONNXTestData.model(parts[0], parts[1])))
        .map { Set($0.graph.nodes.map(\.opType)).sorted().joined(separator: "+") } ?? "?"
      rows[ops, default: [:]][outcome.label, default: 0] += 1
    }
    var table = "operators | passed | failed | refused | not supported\n"
    for (ops, counts) in rows.sorted(by: { $0.key < $1.key }) {
      table +=
        "\(ops) | \(counts["passed", default: 0]) | \(counts["failed", default: 0]) | \(counts["refused", default: 0]) | \(counts["not supported", default: 0])\n"
    }
    let totals = Dictionary(grouping: outcomes, by: { $0.outcome.label }).mapValues(\.count)
    table +=
      "total | \(totals["passed", default: 0]) | \(totals["failed", default: 0]) | \(totals["refused", default: 0]) | \(totals["not supported", default: 0])\n"
    table +=
      "\nfailed and refused:\n"
      + outcomes.filter { $0.outcome.label == "failed" || $0.outcome.label == "refused" }.map {
        "\($0.test): \($0.outcome)"
      }.joined(separator: "\n") + "\n"
    try FileManager.default.createDirectory(at: Self.buildFolder, withIntermediateDirectories: true)
    try table.write(
      to: Self.buildFolder.appendingPathComponent("onnx-backend-table.txt"), atomically: true, encoding: .utf8)
    let passing = outcomes.filter { $0.outcome == .passed }.map(\.test)
    try (passing.joined(separator: "\n") + "\n").write(
      to: Self.buildFolder.appendingPathComponent("onnx-backend-passing.txt"), atomically: true, encoding: .utf8)
    print("ONNX backend tests: \(totals)")
  }

  static let conversionListURL = here.appendingPathComponent("BackendConversionPassList.txt")

  /// Every test on the pass list converted to both Core ML formats: the conversions on the conversion
  /// pass list (`BackendConversionPassList.txt`, lines `suite/test format`) must write a model that
  /// verifies against the graph; the rest must be refused by name, never written wrong. The outcomes
  /// are written to `.build/onnx-backend-conversions.txt` (and the passing ones to
  /// `.build/onnx-backend-conversions-passing.txt`).
  @Test func passingTestsConvert() throws {
    let directory = try FileManager.default.url(
      for: .itemReplacementDirectory, in: .userDomainMask, appropriateFor: Self.buildFolder, create: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    var lines: [String] = []
    var passing: [String] = []
    var failures: [String] = []
    var counts: [String: Int] = [:]
    for entry in try Self.passList() {
      let parts = entry.split(separator: "/").map(String.init)
      for format in [ModelFormat.mlProgram, .neuralNetwork] {
        let key = "\(entry) \(format == .mlProgram ? "mlprogram" : "neuralnetwork")"
        let outcome = BackendConversion.run(suite: parts[0], name: parts[1], format: format, directory: directory)
        switch outcome {
        case .verified:
          passing.append(key)
          counts["verified", default: 0] += 1
        case .notExpressible: counts["not expressible", default: 0] += 1
        case .failed(let detail):
          failures.append("\(key): \(detail)")
          counts["failed", default: 0] += 1
        }
        lines.append("\(key): \(outcome)")
      }
    }
    try lines.joined(separator: "\n").write(
      to: Self.buildFolder.appendingPathComponent("onnx-backend-conversions.txt"), atomically: true, encoding: .utf8)
    try (passing.joined(separator: "\n") + "\n").write(
      to: Self.buildFolder.appendingPathComponent("onnx-backend-conversions-passing.txt"), atomically: true,
      encoding: .utf8)
    print("ONNX backend tests converted: \(counts)")
    // A converted model that does not verify is a wrong conversion: none may be written.
    #expect(
      failures.isEmpty,
      "\(failures.count) conversions wrote a model that does not verify:\n\(failures.prefix(20).joined(separator: "\n"))"
    )
    let expected = try String(contentsOf: Self.conversionListURL, encoding: .utf8).split(separator: "\n").map(
      String.init
    ).filter { !$0.hasPrefix("#") && !$0.isEmpty }
    let missing = expected.filter { !passing.contains($0) }
    #expect(
      missing.isEmpty,
      "\(missing.count) conversions on the conversion pass list no longer verify:\n\(missing.prefix(20).joined(separator: "\n"))"
    )
    #expect(expected.count >= 50)
  }
}
