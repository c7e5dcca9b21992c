import Foundation
import ModelConverter
import ModelFormats

/// `modelconv inspect`: what a model file holds, without converting or running it.
enum InspectCommand: Subcommand {
  static let name = "inspect"
  static let abstract = "Show what a \(Frontends.formatNames) model holds: inputs, outputs, labels, layers, weights"
  static let synopsis = "modelconv inspect <\(Frontends.sourcePlaceholder("model"))> [--json]"
  static let discussion = """
    Prints what the format's reader says of the file: its format and version (the tool that wrote it;
    for Core ML the specification version, ML Program opset and the oldest iOS, macOS, tvOS and
    watchOS releases that load it), the inputs and outputs as Xcode shows them, each image input's
    color space, scale and biases, the class labels (the first few and the count), the metadata, a
    table of layers (operations, nodes) with their output shapes and parameter counts, the total
    parameter count and the weight bytes by storage type. Output shapes are written as the format
    writes them (some without the batch axis, as (None, ...)); --input-shape gives an input's unknown
    sizes for them. Models that are not
    neural networks (Core ML pipelines, GLM, tree ensembles, text classifiers, ...) are described
    without layers: type, inputs, outputs, metadata, labels and a pipeline's sub-models. --json prints
    the same as one document, schema modelconv.inspect/2.
    """

  static let specs: [OptionSpec] = Options.shapes + [Options.json]

  static let examples = [
    "modelconv inspect Emotion.mlmodel",
    "modelconv inspect model_v6.h5 --json",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    guard parsed.positionals.count == 1 else {
      throw UsageError(message: "expected one model file\n\n" + usage)
    }
    let inspection = try ModelInspector.inspect(
      contentsOf: URL(fileURLWithPath: parsed.positionals[0]), inputShapes: try parsed.inputShapes())
    if parsed.flag(Options.json) {
      guard case .object(let fields) = try JSONValueEncoder.encode(inspection) else { return .failure }
      Console.out(
        JSONValue.object(
          [("schema", .string("modelconv.inspect/2"))] + fields + [
            ("weightBytes", .number(Double(inspection.weightBytes)))
          ]
        ).rendered)
    } else {
      Console.out(inspection.description)
    }
    return .success
  }
}
