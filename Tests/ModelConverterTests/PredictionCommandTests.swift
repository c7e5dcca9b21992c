import Foundation
import TestSupport
import Testing

/// `modelconv predict`, `evaluate`, help pages and JSON documents, end to end.
@Suite struct PredictionCommandTests {
  /// The built `modelconv`.
  struct Runner {
    func run(_ arguments: [String]) throws -> Modelconv.Result { try Modelconv.run(arguments) }
  }
  let cli = Runner()
  static let model = Fixtures.digits.appendingPathComponent("digits_cnn.h5").path
  static let labels = Fixtures.digits.appendingPathComponent("labels.txt").path
  static let folder = Fixtures.digits.appendingPathComponent("test_images").path

  func json(_ text: String) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(text.utf8)) as? [String: Any])
  }

  @Test func predictPrintsTopLabelsAndReportsUnreadableImages() throws {
    let files = try ImageModelTests.files()
    let reference = try ImageModelTests.reference()
    let picked = [0, 17, 33]
    let images = picked.map { Self.folder + "/" + files[$0] }
    let bad = Fixtures.url("images/truncated.png").path
    let result = try cli.run(
      ["predict", Self.model] + images + [bad, "--image-scale", "1/255", "--labels-file", Self.labels, "--top-k", "2"])
    #expect(result.status == 1, "one image is unreadable")
    #expect(result.stderr.contains("truncated.png"))
    let lines = result.stdout.split(separator: "\n").map(String.init)
    #expect(lines.count == picked.count * 3)
    for (n, index) in picked.enumerated() {
      let outputs = reference.outputs[index]
      let best = outputs.indices.max { outputs[$0] < outputs[$1] }!
      #expect(lines[n * 3] == images[n])
      #expect(lines[n * 3 + 1].hasPrefix("  \(best) "), "\(lines[n * 3 + 1]) for \(files[index])")
      #expect(lines[n * 3 + 1].hasSuffix(String(format: "%.1f%%", Double(outputs[best]) * 100)))
    }
  }

  @Test func predictJSON() throws {
    let image =
      Self.folder + "/7/" + (try FileManager.default.contentsOfDirectory(atPath: Self.folder + "/7").sorted()[0])
    let result = try cli.run([
      "predict", Self.model, image, "/nonexistent.png", "--image-scale", "0.00392156862745098", "--json",
    ])
    let document = try json(result.stdout)
    #expect(document["schema"] as? String == "modelconv.predict/1")
    let items = try #require(document["images"] as? [[String: Any]])
    #expect(items.count == 2)
    #expect(items[0]["error"] is NSNull)
    #expect(((items[0]["top"] as? [[String: Any]])?.first?["label"] as? String) == "7")
    #expect(items[1]["top"] is NSNull)
    #expect((items[1]["error"] as? String)?.contains("nonexistent.png") == true)
  }

  @Test func evaluateAgainstTheConversion() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let converted = directory.appendingPathComponent("Digits.mlmodel").path
    let convert = try cli.run([
      "convert", Self.model, "--image-input", "input1", "--image-scale", "1/255", "--labels-file", Self.labels, "-o",
      converted,
    ])
    #expect(convert.status == 0, "\(convert.stderr)")
    let report = directory.appendingPathComponent("report.html").path
    let result = try cli.run([
      "evaluate", converted, Self.folder, "--against", Self.model, "--image-scale", "1/255", "--labels-file",
      Self.labels, "--report", report,
    ])
    #expect(result.status == 0, "\(result.stderr)")
    #expect(result.stdout.contains("accuracy 98.0%"))
    #expect(result.stdout.contains("agreement 100.0%"))
    #expect(
      result.stderr.isEmpty || result.stderr.contains("ignored"),
      "no progress line when stderr is not a terminal: \(result.stderr)")
    let html = try String(contentsOfFile: report, encoding: .utf8)
    #expect(html.contains("<svg") && html.contains("data:image/png;base64,"))
    #expect(!html.contains("src=\"http") && !html.contains("<script"), "self-contained")

    let json = try json(try cli.run(["evaluate", converted, Self.folder, "--json"]).stdout)
    #expect(json["schema"] as? String == "modelconv.evaluate/1")
    #expect(json["against"] is NSNull)
    #expect((json["confusion"] as? [[Int]])?.count == 10)
  }

  @Test func helpListsEveryCommandAndOption() throws {
    let top = try cli.run(["--help"])
    for command in ["convert", "verify", "inspect", "predict", "evaluate"] {
      #expect(top.stdout.contains("  \(command) "), "\(command) listed")
      let page = try cli.run(["help", command])
      #expect(page.status == 0)
      #expect(page.stdout.contains("EXAMPLES:") && page.stdout.contains("EXIT CODES:"), "\(command)")
      #expect(try cli.run([command, "--help"]).stdout == page.stdout)
    }
    let convert = try cli.run(["help", "convert"]).stdout
    for option in [
      "--format", "--target", "--precision", "--model-version", "--labels-file", "--image-scale", "--verify",
    ] {
      #expect(convert.contains(option), "\(option) in convert's help")
    }
  }

  @Test func usageMistakes() throws {
    let typo = try cli.run(["convert", Self.model, "--label", "a"])
    #expect(typo.status == 64)
    #expect(typo.stderr.contains("did you mean '--labels'?"))
    let command = try cli.run(["evalute"])
    #expect(command.stderr.contains("did you mean 'evaluate'?"))
    let version = try cli.run(["convert", Self.model, "--version", "1.0"])
    #expect(version.status == 64, "--version belongs to modelconv itself; the metadata option is --model-version")
    let error = try json(try cli.run(["verify", "/nonexistent.h5", "/nonexistent.mlmodel", "--json"]).stdout)
    #expect(error["schema"] as? String == "modelconv.error/1")
    #expect(error["exitCode"] as? Int == 66)
  }
}
