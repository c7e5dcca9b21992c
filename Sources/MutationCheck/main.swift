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

let outcomes: [MutationCampaign.Outcome]
do {
  outcomes = try MutationCampaign.run(source: source, conversion: options, directory: directory)
} catch {
  fail("\(error)")
}
for outcome in outcomes {
  let place = outcome.mutation.layer.map { "'\($0)'" } ?? "model"
  let effect = String(format: "%.3g", Double(outcome.effect))
  print(
    "\(outcome.mutation.kind.rawValue)  \(place)  \(outcome.mutation.detail)  effect \(effect)  \(outcome.verdict.rawValue)  \(outcome.named)"
  )
}
print(MutationCampaign.summary(outcomes))
exit(outcomes.allSatisfy { $0.verdict == .killed || $0.verdict == .equivalent } ? 0 : 1)
