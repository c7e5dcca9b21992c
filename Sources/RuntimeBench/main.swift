// runtime-bench: how fast modelconv's runtime runs a model, for Benchmarks/ (a developer tool, not
// part of the product).
//
//   runtime-bench MODEL [--threads N] [--runs R] [--warmup W] [--images I] [--input-shape NAME=H,W,C]
//
// MODEL is a Keras file (its graph, as `predict` and `verify` run it) or a Core ML model. Prints one
// JSON object: single-thread latency (median and minimum of R runs after W warm-ups, batch 1, one
// random input uniform in [-1, 1]) and, with --threads N, throughput: I inputs classified by N threads,
// each running whole inputs (images per second). `backend` names the kernels the runtime picked.
import CoreMLFormat
import Dispatch
import Foundation
import KerasFormat
import ModelConverter
import ModelIR
import ReferenceRuntime

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data("runtime-bench: \(message)\n".utf8))
  exit(64)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var options: [String: String] = [:]
var positionals: [String] = []
while let argument = arguments.first {
  arguments.removeFirst()
  if argument.hasPrefix("--") {
    guard let value = arguments.first else { fail("\(argument) needs a value") }
    options[argument] = value
    arguments.removeFirst()
  } else {
    positionals.append(argument)
  }
}
guard positionals.count == 1 else {
  fail("usage: runtime-bench MODEL [--threads N] [--runs R] [--warmup W] [--images I]")
}
func integer(_ name: String, _ fallback: Int) -> Int {
  guard let text = options[name] else { return fallback }
  guard let value = Int(text), value >= 1 else { fail("\(name) needs a positive integer") }
  return value
}
let runs = integer("--runs", 20)
let warmup = integer("--warmup", 3)
let threads = integer("--threads", 1)
let images = integer("--images", max(4 * threads, 16))
var inputShapes: [String: [Int]] = [:]
if let shape = options["--input-shape"] {
  let parts = shape.split(separator: "=")
  guard parts.count == 2 else { fail("--input-shape NAME=H,W,C") }
  inputShapes[String(parts[0])] = parts[1].split(separator: ",").compactMap { Int($0) }
}

let url = URL(fileURLWithPath: positionals[0])
let graph: Graph
let kind: String
do {
  // A source as the converter reads it: the graph in the IR's conventions, whatever the format.
  let source = try Frontends.frontend(for: url).importSource(at: url, options: SourceOptions(inputShapes: inputShapes))
  // As `predict` runs it: the standard passes first (they only remove work, such as the transposes
  // around an ONNX or Core ML graph's spatial operators).
  var passed = source.graph
  try Pipelines.runtime.run(&passed)
  graph = passed
  kind = source.format
} catch {
  fail("\(url.path): \(error)")
}

// Inputs uniform in [-1, 1] from a fixed seed (SplitMix64).
var state: UInt64 = 0x9E37_79B9_7F4A_7C15
func nextUniform() -> Float {
  state &+= 0x9E37_79B9_7F4A_7C15
  var z = state
  z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
  z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
  z ^= z >> 31
  return Float(z >> 40) / Float(1 << 24) * 2 - 1
}
let inputs = graph.inputs.map { id -> Tensor in
  let shape = graph[id].type.shape
  return Tensor(shape: shape, values: (0..<shape.reduce(1, *)).map { _ in nextUniform() })
}

let interpreter = Interpreter(graph: graph)
for _ in 0..<warmup { _ = interpreter.run(inputs) }
var times: [Double] = []
for _ in 0..<runs {
  let start = ContinuousClock.now
  _ = interpreter.run(inputs)
  let elapsed = ContinuousClock.now - start
  times.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
}
times.sort()
let median = times.count % 2 == 1 ? times[times.count / 2] : (times[times.count / 2 - 1] + times[times.count / 2]) / 2

var throughput: Double? = nil
if options["--threads"] != nil {
  let start = ContinuousClock.now
  DispatchQueue.concurrentPerform(iterations: threads) { worker in
    var index = worker
    while index < images {
      _ = interpreter.run(inputs)
      index += threads
    }
  }
  let elapsed = ContinuousClock.now - start
  throughput = Double(images) / (Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
}

func number(_ value: Double?) -> String { value.map { String(format: "%.6g", $0) } ?? "null" }
let escapedPath = url.path.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
print(
  """
  {"model": "\(escapedPath)", "kind": "\(kind)", "backend": "\(Interpreter.backendDescription)", "runs": \(runs), "warmup": \(warmup), \
  "latencyMedianMs": \(number(median * 1000)), "latencyMinMs": \(number(times[0] * 1000)), "threads": \(threads), "images": \(options["--threads"] == nil ? 0 : images), \
  "imagesPerSecond": \(number(throughput))}
  """)
