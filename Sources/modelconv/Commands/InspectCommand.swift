import Foundation
import ModelFormats
import ModelConverter

/// `modelconv inspect`: what a Keras file or a Core ML model holds, without converting or running it.
enum InspectCommand: Subcommand {
  static let name = "inspect"
  static let abstract = "Show what a \(Frontends.formatNames) model holds: inputs, outputs, labels, layers, weights"
  static let synopsis = "modelconv inspect <\(Frontends.sourcePlaceholder("model"))> [--json]"
  static let discussion = """
    Prints the format and version (Keras version; Core ML specification version, ML Program opset and
    the oldest iOS, macOS, tvOS and watchOS releases that load it), the inputs and outputs as Xcode
    shows them, each image input's color space, scale and biases, the class labels (the first few and
    the count), the metadata, a table of layers (ML Program operations) with their output shapes and
    parameter counts, the total parameter count and the weight bytes by storage type. Keras output
    shapes omit the batch axis like model.summary()'s None; Core ML shapes are as Core ML lays them out.
    Other Core ML model types (pipelines, GLM, tree ensembles, text classifiers, scalers, ...) are
    described without layers: type, inputs, outputs, metadata, labels and a pipeline's sub-models.
    """

  static let specs: [OptionSpec] = [
    .option("--input-shape", value: "NAME=1,H,W,C", help: "Shape for a Keras input with unknown dimensions (for the output shapes)."),
    .flag("--json", help: "Print the same as one JSON document (schema modelconv.inspect/1; errors as modelconv.error/1)."),
  ]

  static let examples = [
    "modelconv inspect Emotion.mlmodel",
    "modelconv inspect model_v6.h5 --json",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 1 else {
      throw UsageError(message: "expected one model file\n\n" + usage)
    }
    let inspection = try ModelInspector.inspect(
      contentsOf: URL(fileURLWithPath: parsed.positionals[0]), inputShapes: try ConvertCommand.inputShapes(parsed))
    if parsed.flag("--json") {
      guard case .object(let fields) = try JSONValueEncoder.encode(inspection) else { return .failure }
      Console.out(JSONValue.object([("schema", .string("modelconv.inspect/1"))] + fields + [("weightBytes", .number(Double(inspection.weightBytes)))]).rendered)
    } else {
      Console.out(inspection.description)
    }
    return .success
  }
}
