import CoreMLFormat
import Foundation
import ModelConverter
import ModelFormats
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

@testable import modelconv

/// A source format that exists only here, to prove that a frontend plugs in through the protocol and
/// the registry alone: no module above it names the format, yet `inspect`, `convert`, `verify` and
/// the exit codes work for it.
///
/// The toy format is text: `TOYNET 1`, then `input NAME SIZE`, then layers, one per line:
/// `dense UNITS` followed by a line `w ...` (the `[inputs, units]` kernel, row-major) and `b ...`, or
/// `relu`. The output is the last layer's.
struct ToyFrontend: ModelFrontend {
  let name = "toy"
  let displayName = "Toy"
  let fileExtensions = ["toy"]
  let summary = "A toy network (.toy) converts as written."
  let kinds: Set<ModelFileKind> = []

  /// A text file whose first bytes are the signature: the sniffer knows it only as text.
  func recognizes(kind: ModelFileKind, header: [UInt8]) -> Bool { header.starts(with: Array("TOYNET ".utf8)) }

  struct ToyError: Error, KindedError, CustomStringConvertible {
    var path: String
    var line: Int
    var detail: String
    var kind: ErrorKind { .badModel }
    var description: String { "\(path): line \(line): \(detail)" }
  }

  struct Parsed {
    var input: (name: String, size: Int)
    var layers: [(kind: String, dense: Dense?)]
  }

  func parse(_ url: URL) throws -> Parsed {
    let lines = try String(contentsOf: url, encoding: .utf8).split(separator: "\n").map {
      $0.split(separator: " ").map(String.init)
    }
    func fail(_ line: Int, _ detail: String) -> ToyError { ToyError(path: url.path, line: line + 1, detail: detail) }
    guard lines.count >= 2, lines[0] == ["TOYNET", "1"] else { throw fail(0, "not TOYNET 1") }
    guard lines[1].count == 3, lines[1][0] == "input", let size = Int(lines[1][2]), size > 0, size <= 1024 else {
      throw fail(1, "expected 'input NAME SIZE' with 0 < SIZE <= 1024")
    }
    var parsed = Parsed(input: (lines[1][1], size), layers: [])
    var width = size
    var index = 2
    while index < lines.count {
      let words = lines[index]
      switch words.first {
      case "relu":
        parsed.layers.append(("relu", nil))
        index += 1
      case "dense":
        guard words.count == 2, let units = Int(words[1]), units > 0, units <= 1024, index + 2 < lines.count,
          lines[index + 1].first == "w", lines[index + 2].first == "b"
        else { throw fail(index, "expected 'dense UNITS' then 'w ...' and 'b ...'") }
        let kernel = lines[index + 1].dropFirst().compactMap(Float.init)
        let bias = lines[index + 2].dropFirst().compactMap(Float.init)
        guard kernel.count == width * units, bias.count == units else {
          throw fail(index, "dense \(units) after \(width) values needs \(width * units) weights and \(units) biases")
        }
        parsed.layers.append(
          (
            "dense",
            Dense(
              kernel: Constant(shape: [width, units], values: kernel), bias: Constant(shape: [units], values: bias))
          ))
        width = units
        index += 3
      default: throw fail(index, "unknown layer '\(words.first ?? "")'")
      }
    }
    return parsed
  }

  func importSource(at url: URL, options: SourceOptions) throws -> ImportedSource {
    let parsed = try parse(url)
    var builder = GraphBuilder()
    var value = try builder.addInput(
      name: options.inputNames?.first ?? parsed.input.name, type: TensorType([parsed.input.size]))
    for (index, layer) in parsed.layers.enumerated() {
      let operation: ModelIR.Operation = layer.dense.map { .dense($0) } ?? .activation(.relu)
      value = try builder.add(operation, name: "\(layer.kind)_\(index)", inputs: [value])
    }
    var graph = builder.build(outputs: [value])
    try graph.rename(value, to: options.outputNames?.first ?? "output")
    return ImportedSource(format: name, modelKind: "toy", path: url.path, graph: graph)
  }

  func inspect(at url: URL, options: SourceOptions) throws -> ModelInspection {
    let parsed = try parse(url)
    let parameters = parsed.layers.compactMap(\.dense).reduce(0) {
      $0 + $1.kernel.values.count + ($1.bias?.values.count ?? 0)
    }
    return ModelInspection(
      path: url.path, format: .init("toy"), kind: .init("toynet"), isRunnable: true,
      presentation: .init(format: "Toy network, version 1", layerNoun: "stage"),
      inputs: [
        .init(name: parsed.input.name, type: .init(kind: "multiArray", shape: [parsed.input.size], dataType: "float32"))
      ], outputs: [],
      metadata: .init(name: nil, userDefined: []),
      layers: parsed.layers.enumerated().map {
        .init(name: "\($0.element.kind)_\($0.offset)", type: $0.element.kind, outputShape: nil, parameterCount: 0)
      },
      shapesUnavailable: nil, parameterCount: parameters,
      weights: [.init(dataType: "float32", count: parameters, bytes: parameters * 4)])
  }
}

@Suite(.serialized) struct ToyFrontendTests {
  init() { Frontends.register(ToyFrontend()) }

  static let network = """
    TOYNET 1
    input x 3
    dense 2
    w 0.5 -1 2 0.25 1 -0.5
    b 0.1 -0.2
    relu
    """

  func write(_ text: String, _ name: String) throws -> URL {
    let url = try Fixtures.temporaryDirectory().appendingPathComponent(name)
    try text.write(to: url, atomically: true, encoding: .utf8)
    return url
  }

  @Test func inspectShowsWhatTheFrontendSays() throws {
    let url = try write(Self.network, "net.toy")
    #expect(try Frontends.frontend(for: url).name == "toy")
    let inspection = try ModelInspector.inspect(contentsOf: url)
    #expect(inspection.format.rawValue == "toy" && inspection.parameterCount == 8)
    #expect(inspection.description.contains("Toy network, version 1"))
    #expect(inspection.description.contains("8 in 2 stages"))
    #expect(ModelConvCommand.run(["inspect", url.path]) == .success)
  }

  /// The converted model computes what the toy network means: relu(x W + b), worked by hand for x = (1, 2, 3):
  /// x W = (0.5 + 4 + 3, -1 + 0.5 - 1.5) = (7.5, -2); + b = (7.6, -2.2); relu = (7.6, 0).
  @Test(arguments: ["mlmodel", "mlpackage"]) func convertsAndVerifies(format: String) throws {
    let url = try write(Self.network, "net.toy")
    let output = url.deletingLastPathComponent().appendingPathComponent("Net.\(format)")
    #expect(ModelConvCommand.run(["convert", url.path, "-o", output.path, "--verify"]) == .success)
    let report = try ParityVerifier.verify(source: url, converted: output)
    #expect(report.passed && report.layers.count >= 2)
    // Run as the Core ML reader reads it back: a classic network takes the vector as (C) = [3, 1, 1].
    let model = try CoreMLGraphImporter.importModel(contentsOf: output)
    let input = Tensor(shape: model.graph[model.graph.inputs[0]].type.shape, values: [1, 2, 3])
    let values = try #require(Interpreter(graph: model.graph).run([input]).first).values
    // float16 weights in the ML Program: within 2^-11 of each term.
    #expect(values.count == 2 && abs(values[0] - 7.6) < 1e-2 && values[1] == 0)
    #expect(ModelConvCommand.run(["verify", url.path, output.path]) == .success)
  }

  /// Verification compares: another network's conversion fails against this one (exit 1).
  @Test func verifyFailsAnotherNetwork() throws {
    let url = try write(Self.network, "net.toy")
    let other = try write(Self.network.replacingOccurrences(of: "b 0.1 -0.2", with: "b 0.1 0.7"), "other.toy")
    let output = url.deletingLastPathComponent().appendingPathComponent("Other.mlmodel")
    #expect(ModelConvCommand.run(["convert", other.path, "-o", output.path]) == .success)
    #expect(try !ParityVerifier.verify(source: url, converted: output).passed)
    #expect(ModelConvCommand.run(["verify", url.path, output.path]) == .failure)
  }

  /// Exit codes follow from the frontend's error kinds: a malformed file is a bad model (65), and nothing is written.
  @Test func badFilesGetTheirExitCodes() throws {
    let bad = try write("TOYNET 1\ninput x -3\n", "bad.toy")
    let output = bad.deletingLastPathComponent().appendingPathComponent("Bad.mlmodel")
    #expect(ModelConvCommand.run(["convert", bad.path, "-o", output.path]) == .badModel)
    #expect(!FileManager.default.fileExists(atPath: output.path))
    #expect(ModelConvCommand.run(["inspect", bad.path]) == .badModel)
    #expect(ModelConvCommand.run(["inspect", bad.path + ".missing"]) == .noInput)
  }
}
