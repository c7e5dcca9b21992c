import Foundation
import ModelIR
import ReferenceRuntime

/// Every named pass pipeline, declared in one place (as coremltools' `pass_pipeline.py`), and every
/// pass registered once by its name: a pipeline is a list of names, and the registry makes each pass
/// for a conversion's context (its image inputs, its precision, whether non-finite weights are allowed).
///
/// - `conversion`: what `Converter` runs on a source graph before a writer sees it.
/// - `runtime`: what `predict`, `evaluate` and the runtime benchmark run before planning a graph: the
///   rewrites that only remove work (the transposes around a channels-first graph's spatial operators).
/// - `verificationSource`: nothing. `verify` runs the source as its frontend read it, so that a pass
///   that changed what a graph computes shows up as a difference from the converted model.
/// - `mixedPrecision` and `float32Fallback`: after the conversion, when float16 cannot hold a float16
///   ML Program's weights (their operations computed in float32) or values (float32 throughout).
public enum Pipelines {
  /// What a pass may need from the conversion it runs in.
  public struct Context: Sendable {
    /// Per-channel factors Core ML's image scaler cannot hold, by input name, computed in the graph.
    public var channelScales: [String: [Float]] = [:]
    /// The image inputs and their scalers, where a first scale-and-offset layer folds.
    var imageInputs = ImageInputLedger([:])
    /// Whether the writer computes in float32 (float16 casts of a source program go).
    public var computesInFloat32 = true
    /// Whether weights that are not finite are allowed through.
    public var allowsNonFinite = false

    public init(channelScales: [String: [Float]] = [:], computesInFloat32: Bool = true, allowsNonFinite: Bool = false) {
      self.channelScales = channelScales
      self.computesInFloat32 = computesInFloat32
      self.allowsNonFinite = allowsNonFinite
    }
  }

  /// A pass by name, made for a context (nil when the context leaves it out).
  struct Registered: Sendable {
    let name: String
    let make: @Sendable (Context) -> (any GraphPass)?

    init(_ name: String, _ make: @escaping @Sendable (Context) -> (any GraphPass)?) {
      self.name = name
      self.make = make
    }
  }

  /// Every pass by name, each once. (The standard rewrites are `GraphPipeline.standard`'s, declared
  /// with the passes in `ModelIR`.)
  static let registry: [Registered] =
    [
      Registered("scale-input-channels") {
        $0.channelScales.isEmpty ? nil : ImageChannelScalesPass(factors: $0.channelScales)
      },
      Registered("remove-float16-casts") { $0.computesInFloat32 ? RemoveFloat16CastsPass() : nil },
    ] + GraphPipeline.standard.passes.map { pass in Registered(pass.name) { _ in pass } } + [
      Registered("fold-constants") { _ in ConstantFoldingPass() },
      Registered("fold-input-preprocessing") { InputPreprocessingFoldPass(ledger: $0.imageInputs) },
      Registered("fold-channel-scales") { _ in ChannelScaleFoldPass() },
      Registered("check-weight-values") { $0.allowsNonFinite ? nil : WeightValueCheckPass() },
      Registered("float32-islands") { _ in Float32IslandsPass() },
    ]

  /// The rewrites every graph goes through before it is written or planned: they only fuse, cancel and
  /// move operations, never change what the graph computes.
  static var standardRewrites: [String] { GraphPipeline.standard.names }

  /// Every pipeline by name, as lists of pass names.
  public static let declared: [(name: String, passes: [String])] = [
    (
      "conversion",
      ["scale-input-channels", "remove-float16-casts"] + standardRewrites
        + ["fold-constants", "fold-input-preprocessing", "fold-channel-scales", "check-weight-values"]
    ),
    ("runtime", standardRewrites),
    ("verificationSource", []),
    ("mixedPrecision", ["float32-islands"]),
    ("float32Fallback", ["remove-float16-casts"]),
  ]

  /// The pipeline `name` for a context.
  public static func pipeline(_ name: String, context: Context = Context()) -> GraphPipeline {
    guard let names = declared.first(where: { $0.name == name })?.passes else { return GraphPipeline([]) }
    return GraphPipeline(names.compactMap { passName in registry.first { $0.name == passName }?.make(context) })
  }

  /// The conversion pipeline for a context whose image inputs fold into `imageInputs`.
  static func conversion(_ context: Context, imageInputs: ImageInputLedger) -> GraphPipeline {
    var context = context
    context.imageInputs = imageInputs
    return pipeline("conversion", context: context)
  }

  /// The runtime pipeline: the standard rewrites.
  public static var runtime: GraphPipeline { pipeline("runtime") }
}

/// Multiplies each listed image input by its per-channel factors before anything reads it (PyTorch's
/// per-channel standard deviations, which Core ML's one-number scale cannot hold); later passes fold
/// the multiply into the first convolution when it takes the input alone. Runs once.
struct ImageChannelScalesPass: GraphPass {
  let name = "scale-input-channels"
  let factors: [String: [Float]]
  var stage: GraphPassStage { .prepare }

  func run(_ graph: inout Graph) throws {
    for (name, factors) in factors.sorted(by: { $0.key < $1.key }) {
      guard let id = graph.inputs.first(where: { graph[$0].name == name }), graph[id].type.shape.last == factors.count
      else { continue }
      graph.scaleChannels(of: id, by: factors)
    }
  }
}
