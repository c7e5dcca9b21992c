import CoreMLFormat
import CoreMLMutations
import Foundation
import ModelConverter
import ModelIR

// mutation-check MODEL.h5 [convert options]
//
// Converts the model, verifies the correct conversion, then breaks the written file in every way
// CoreMLMutator knows and verifies each broken file: every mutation that changes what the model
// computes must be killed (verify fails). Exit status 0 only when all of them are.

func fail(_ message: String) -> Never {
  FileHandle.standardError.write(Data(("mutation-check: " + message + "\n").utf8))
  exit(2)
}

let usage = """
  usage: mutation-check MODEL.h5 [--input-names a,b] [--image-input name] [--image-scale s]
         [--red-bias b] [--green-bias b] [--blue-bias b] [--gray-bias b] [--bgr] [--labels-file path] [--labels a,b,...]
  """
var arguments = Array(CommandLine.arguments.dropFirst())
guard !arguments.isEmpty, !arguments.contains("--help") else { fail(usage) }
var modelPath: String?
var options = ConversionOptions()
func value(_ flag: String) -> String {
  guard !arguments.isEmpty else { fail("\(flag) needs a value\n" + usage) }
  return arguments.removeFirst()
}
func number(_ flag: String) -> Float {
  guard let number = Float(value(flag)) else { fail("\(flag) needs a number") }
  return number
}
func list(_ text: String) -> [String] { text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) } }
do {
  while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--input-names": options.inputNames = list(value(argument))
    case "--image-input", "--image-inputs": options.imageInputNames += list(value(argument))
    case "--image-scale": options.imageScale = number(argument)
    case "--red-bias": options.redBias = number(argument)
    case "--green-bias": options.greenBias = number(argument)
    case "--blue-bias": options.blueBias = number(argument)
    case "--gray-bias": options.grayBias = number(argument)
    case "--bgr": options.isBGR = true
    case "--labels-file": options.classLabels = try ClassLabels.load(fromFile: value(argument))
    case "--labels": options.classLabels = try ClassLabels.parse(list(value(argument)))
    default:
      guard !argument.hasPrefix("-"), modelPath == nil else { fail("unexpected argument '\(argument)'\n" + usage) }
      modelPath = argument
    }
  }
} catch {
  fail("\(error)")
}
guard let modelPath else { fail(usage) }

let source = URL(fileURLWithPath: modelPath)
let directory = FileManager.default.temporaryDirectory.appendingPathComponent("mutation-check-\(UUID().uuidString)")
do {
  try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
} catch {
  fail("cannot create \(directory.path): \(error)")
}
defer { try? FileManager.default.removeItem(at: directory) }

let verification = VerificationOptions(expectedLabels: options.classLabels?.descriptions)
let model: ConvertedModel
do {
  model = try KerasConverter.convert(modelAt: source, options: options)
  let url = directory.appendingPathComponent("correct.mlmodel")
  try Data(model.bytes).write(to: url)
  let report = try ParityVerifier.verify(source: source, converted: url, options: verification)
  print("correct conversion: \(report.passed ? "passes" : "FAILS") verify")
  if !report.passed { fail("the correct conversion already fails verify; mutations would prove nothing") }
} catch {
  fail("\(error)")
}

// Core ML leaves sequence lengths to run time; the Keras graph fixes them (as verify does).
var sequenceLengths: [String: Int] = [:]
if let spec = try? CoreMLSpecReader.read(model.bytes) {
  for (feature, id) in zip(spec.inputs, model.graph.inputs) {
    let shape = model.graph[id].type.shape
    let tokens = model.graph.nodes.contains { node in
      if case .embedding = node.operation { return node.inputs == [id] }
      return false
    }
    if shape.count == 2 || shape.count == 4 || (shape.count == 1 && tokens) { sequenceLengths[feature.name] = shape[0] }
  }
}

let mutations: [CoreMLMutation]
do {
  mutations = try CoreMLMutator.mutations(of: model.bytes)
} catch {
  fail("cannot list mutations: \(error)")
}
var killed = 0, survived = 0, equivalent = 0
for (index, mutation) in mutations.enumerated() {
  let where_ = mutation.layer.map { "'\($0)'" } ?? "model"
  let prefix = "\(mutation.kind.rawValue)  \(where_)  \(mutation.detail)"
  do {
    let bytes = try CoreMLMutator.apply(mutation, to: model.bytes)
    let effect = try MutationEffect.measure(original: model.bytes, mutated: bytes, mutation: mutation, sequenceLengths: sequenceLengths)
    if effect == 0 {
      equivalent += 1
      print("\(prefix)  effect 0  equivalent (skipped)")
      continue
    }
    let url = directory.appendingPathComponent("mutant-\(index).mlmodel")
    try Data(bytes).write(to: url)
    var verdict: String
    do {
      let report = try ParityVerifier.verify(source: source, converted: url, options: verification)
      verdict = report.passed ? "SURVIVED" : "killed"
    } catch {
      verdict = "killed (verify error: \(error))"
    }
    if verdict == "SURVIVED" { survived += 1 } else { killed += 1 }
    print("\(prefix)  effect \(String(format: "%.3g", Double(effect)))  \(verdict)")
  } catch {
    // A mutation that cannot be applied or measured is not proof of anything: count it as surviving.
    survived += 1
    print("\(prefix)  ERROR \(error)  SURVIVED")
  }
}
let total = killed + survived
let rate = total == 0 ? 100 : Double(killed) / Double(total) * 100
print("kill rate: \(killed)/\(total) (\(String(format: "%.1f", rate))%), \(equivalent) equivalent skipped")
exit(survived == 0 ? 0 : 1)
