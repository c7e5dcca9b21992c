import CoreMLFormat
import ModelIR

/// Input and output names a written format cannot hold, renamed deterministically as coremltools'
/// `sanitize_input_output_names` pass does for ML Programs: feature names there are program values, so
/// each must be an identifier (a letter or underscore, then letters, digits, underscores or `@`) and no
/// input may share an output's name. Characters outside that alphabet become `_`, a name not starting
/// with a letter or underscore gets a leading `_`, and a name taken already gets `_1`, `_2`, ... Names
/// that fit are never changed, so a model whose names fit keeps them all.
public struct FeatureRename: Sendable, Equatable, Codable {
  /// `input` or `output`.
  public var kind: String
  /// The name in the source (after any names the options gave).
  public var from: String
  /// The name in the written model.
  public var to: String

  public init(kind: String, from: String, to: String) {
    self.kind = kind
    self.from = from
    self.to = to
  }

  public var description: String { "\(kind) '\(from)' is '\(to)' in the model" }
}

enum FeatureNaming {
  /// The renames `format` needs for `inputs` then `outputs` (names in order), in that order.
  static func renames(inputs: [String], outputs: [String], format: ModelFormat) -> [FeatureRename] {
    guard format == .mlProgram else { return [] }
    let all = inputs.map { ("input", $0) } + outputs.map { ("output", $0) }
    // Names that fit are kept: each is taken first, so that no rename can take it away.
    var used = Set<String>()
    var keep = Set<Int>()
    for (index, (_, name)) in all.enumerated() where MILIdentifier.isValid(name) && used.insert(name).inserted {
      keep.insert(index)
    }
    var renames: [FeatureRename] = []
    for (index, (kind, name)) in all.enumerated() where !keep.contains(index) {
      let base = MILIdentifier.sanitize(name)
      var candidate = base
      var number = 0
      while used.contains(candidate) {
        number += 1
        candidate = "\(base)_\(number)"
      }
      used.insert(candidate)
      renames.append(FeatureRename(kind: kind, from: name, to: candidate))
    }
    return renames
  }

  /// Applies `renames` to the graph's inputs and outputs (in the order `renames` computed them).
  static func apply(_ renames: [FeatureRename], to graph: inout Graph) throws {
    var inputs = graph.inputs[...]
    var outputs = graph.outputs[...]
    for rename in renames {
      let pool = rename.kind == "input" ? inputs : outputs
      guard let id = pool.first(where: { graph[$0].name == rename.from }) else { continue }
      if rename.kind == "input" {
        inputs = inputs.filter { $0 != id }[...]
      } else {
        outputs = outputs.filter { $0 != id }[...]
      }
      try graph.claimName(rename.to, for: id)
    }
  }
}
