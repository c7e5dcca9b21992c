import Foundation
import TestSupport
import Testing

/// `convert --palettize` / `--quantize` end to end: the summary's sizes, the JSON report, the usage errors
/// (exit 64) and the refusals (exit 65) with no output left behind.
@Suite struct CompressionCommandTests {
  static let digits = Fixtures.digits.appendingPathComponent("digits_cnn.h5").path
  static let common = ["--image-input", "input1", "--image-scale", "1/255", "--labels", "0,1,2,3,4,5,6,7,8,9"]

  @Test func palettizeAndQuantizeReportTheirSizesAndVerify() throws {
    let directory = try Fixtures.temporaryDirectory()
    for (flags, method) in [
      (["--palettize", "4"], "palettized 4-bit"),
      (["--quantize", "8", "--quantize-mode", "affine"], "linear 8-bit affine"),
    ] {
      let output = directory.appendingPathComponent("digits-\(flags[1]).mlpackage").path
      let result = try Modelconv.run(
        ["convert", Self.digits, "-o", output, "--verify", "--json"] + Self.common + flags)
      #expect(result.status == 0, "\(result.stderr)")
      let document = try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any]
      let summary = document?["summary"] as? [String: Any]
      let compression = try #require(summary?["compression"] as? [String: Any], "\(result.stdout)")
      #expect(compression["method"] as? String == method)
      let before = try #require(compression["weightBytesBefore"] as? Int)
      let after = try #require(compression["weightBytesAfter"] as? Int)
      #expect(after < before)
      let tensors = try #require(compression["tensors"] as? [[String: Any]])
      #expect(tensors.count == 9)
      #expect(
        tensors.filter { $0["skipped"] is String }.allSatisfy { ($0["skipped"] as! String).contains("fewer than 2048") }
      )
      #expect((document?["verification"] as? [String: Any])?["passed"] as? Bool == true)
      let text = try Modelconv.run(["convert", Self.digits, "-o", output] + Self.common + flags)
      #expect(text.stdout.contains("weights \(method): \(before) -> \(after) bytes"), "\(text.stdout)")
    }
  }

  @Test func wrongCompressionOptionsAreUsageErrors() throws {
    let directory = try Fixtures.temporaryDirectory()
    let output = directory.appendingPathComponent("x.mlpackage").path
    for flags in [
      ["--palettize", "5"], ["--palettize-groups", "8"], ["--quantize", "8", "--palettize-groups", "4"],
      ["--palettize", "4", "--palettize-groups", "0"], ["--palettize", "4", "--quantize", "8"], ["--quantize", "2"],
      ["--quantize-block-size", "8"], ["--palettize", "4", "--quantize-block-size", "8"],
      ["--quantize-mode", "affine"],
      ["--palettize", "4", "--quantize-mode", "affine"], ["--quantize", "8", "--compress-min-size", "0"],
      ["--prune", "1"], ["--prune", "0"], ["--prune", "0.5", "--palettize", "4"],
    ] {
      let result = try Modelconv.run(["convert", Self.digits, "-o", output] + Self.common + flags)
      #expect(result.status == 64, "\(flags): \(result.stderr)")
      #expect(!FileManager.default.fileExists(atPath: output))
    }
  }

  @Test func formatsAndTargetsThatCannotHoldCompressedWeightsAreRefused() throws {
    let directory = try Fixtures.temporaryDirectory()
    for (output, flags) in [
      ("x.mlmodel", ["--palettize", "4", "--target", "iOS11"]),
      ("x.mlpackage", ["--quantize", "8", "--target", "iOS15"]),
    ] {
      let path = directory.appendingPathComponent(output).path
      let result = try Modelconv.run(["convert", Self.digits, "-o", path] + Self.common + flags)
      #expect(result.status == 65, "\(flags): \(result.stderr)")
      #expect(result.stderr.contains("iOS 16") || result.stderr.contains("specification 3"), "\(result.stderr)")
      #expect(!FileManager.default.fileExists(atPath: path))
    }
  }
}
