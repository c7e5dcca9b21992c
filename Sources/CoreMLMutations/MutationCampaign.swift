import CoreMLFormat
import Foundation
import ModelConverter
import ModelIR

/// Breaks a correct conversion to a classic `.mlmodel` (of any source `Converter` reads) in every way
/// `CoreMLMutator` knows and runs `verify` on each broken file.
///
/// A mutation is *killed* when verify fails it and names where it broke: the first mismatching tensor
/// belongs to the Keras layer the mutated Core ML layer was written for (Core ML layers carry the IR
/// node's name, plus a suffix for helper layers), the preprocessing check fails for scaler and colour
/// mutations, the label check for swapped labels. A mutation whose effect on its own blob stays within
/// verify's tolerance is *equivalent* (a symmetric kernel transposed, a channel swap between two dead
/// units) and is skipped.
public enum MutationCampaign {
  public enum Verdict: String, Sendable, Codable {
    case killed
    /// Verify failed, but named an earlier layer than the mutated one.
    case killedElsewhere = "killed, first mismatch elsewhere"
    case survived = "SURVIVED"
    case equivalent
  }

  public struct Outcome: Sendable {
    public var mutation: CoreMLMutation
    /// Largest change at the mutated blob, relative to max(1, its largest value).
    public var effect: Float
    public var verdict: Verdict
    /// What verify named: the first mismatching layer, a failed check, or an error.
    public var named: String
  }

  /// Effects at or below this (relative to the tensor's size) are within verify's float32 tolerance.
  public static let equivalenceThreshold: Float = 1e-5

  /// Converts `source`, checks that the correct conversion passes, then verifies every mutation of it.
  ///
  /// - Parameter verification: verify's options; the expected labels and preprocessing come from `conversion`.
  public static func run(
    source: URL, conversion: ConversionOptions, verification: VerificationOptions = VerificationOptions(),
    directory: URL
  ) throws -> [Outcome] {
    var verification = verification
    verification.expectedLabels = conversion.classLabels?.descriptions
    if !conversion.imageInputNames.isEmpty { verification.expectedPreprocessing = conversion.imagePreprocessing }
    var classic = conversion
    classic.format = .neuralNetwork
    let model = try Converter.convert(modelAt: source, options: classic)
    let original = model.bytes  // packed once (each `bytes` packs the model again)
    let correct = directory.appendingPathComponent("correct.mlmodel")
    try Data(original).write(to: correct)
    let baseline = try ParityVerifier.verify(source: source, converted: correct, options: verification)
    guard baseline.passed else {
      throw CampaignError.correctConversionFails(baseline.firstMismatch.map(describe) ?? "\(baseline.violations)")
    }

    let sequenceLengths = ParityVerifier.sequenceLengths(
      of: try CoreMLSpecReader.read(original, path: correct.path), from: model.graph)

    var outcomes: [Outcome] = []
    for (index, mutation) in try CoreMLMutator.mutations(of: original).enumerated() {
      let bytes = try CoreMLMutator.apply(mutation, to: original)
      let effect = try MutationEffect.measure(
        original: original, mutated: bytes, mutation: mutation, sequenceLengths: sequenceLengths)
      if effect <= equivalenceThreshold {
        outcomes.append(Outcome(mutation: mutation, effect: effect, verdict: .equivalent, named: ""))
        continue
      }
      let url = directory.appendingPathComponent("mutant-\(index).mlmodel")
      try Data(bytes).write(to: url)
      defer { try? FileManager.default.removeItem(at: url) }
      let report: ParityReport
      do {
        report = try ParityVerifier.verify(source: source, converted: url, options: verification)
      } catch {
        // The mutated file no longer reads or no longer fits the Keras model: verify refuses it.
        outcomes.append(Outcome(mutation: mutation, effect: effect, verdict: .killed, named: "verify error: \(error)"))
        continue
      }
      outcomes.append(judge(mutation, effect: effect, report: report))
    }
    return outcomes
  }

  static func judge(_ mutation: CoreMLMutation, effect: Float, report: ParityReport) -> Outcome {
    guard !report.passed else { return Outcome(mutation: mutation, effect: effect, verdict: .survived, named: "") }
    if let violation = report.violations.first {
      return Outcome(
        mutation: mutation, effect: effect, verdict: .killed,
        named: "Core ML rule \(violation.rule) at '\(violation.layer)'")
    }
    switch mutation.kind {
    case .swappedLabels:
      let named = report.classifier?.labelsMatch == false
      return Outcome(
        mutation: mutation, effect: effect, verdict: named ? .killed : .killedElsewhere,
        named: named ? "class labels" : report.firstMismatch.map(describe) ?? "")
    case .doubledImageScale, .movedImageBias, .swappedColorOrder:
      let named = report.preprocessing.contains { $0.checked && !$0.passed }
      return Outcome(
        mutation: mutation, effect: effect, verdict: named ? .killed : .killedElsewhere,
        named: named ? "preprocessing" : report.firstMismatch.map(describe) ?? "")
    default:
      guard let first = report.firstMismatch else {
        return Outcome(
          mutation: mutation, effect: effect, verdict: .killed,
          named: report.classifier?.passed == false ? "classifier" : "outputs")
      }
      let layer = mutation.layer ?? ""
      let named = layer == first.sourceLayer || layer.hasPrefix(first.sourceLayer + "_")
      return Outcome(
        mutation: mutation, effect: effect, verdict: named ? .killed : .killedElsewhere, named: describe(first))
    }
  }

  static func describe(_ layer: LayerParity) -> String {
    "Keras '\(layer.sourceLayer)' (\(layer.sourceType)) / Core ML '\(layer.convertedLayer)' (\(layer.convertedType))"
  }

  /// "killed K/N (P%), E equivalent skipped"
  public static func summary(_ outcomes: [Outcome]) -> String {
    let counted = outcomes.filter { $0.verdict != .equivalent }
    let killed = counted.filter { $0.verdict == .killed }.count
    let rate = counted.isEmpty ? 100 : Double(killed) / Double(counted.count) * 100
    return
      "kill rate \(killed)/\(counted.count) (\(String(format: "%.1f", rate))%), \(outcomes.count - counted.count) equivalent skipped"
  }

  public enum CampaignError: Error, CustomStringConvertible {
    case correctConversionFails(String)
    public var description: String {
      switch self {
      case .correctConversionFails(let detail):
        return "the correct conversion already fails verify (\(detail)); mutations would prove nothing"
      }
    }
  }
}

extension MutationCampaign.CampaignError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
