import Foundation
import ModelFormats

/// Why two models could not be compared at all (as opposed to comparing and differing).
public enum VerificationError: Error, Equatable, CustomStringConvertible {
  /// The models have different numbers of inputs or outputs.
  case interfaceMismatch(String)
  /// An input's or output's shape cannot be matched between the two layouts.
  case layoutMismatch(feature: String, source: [Int], converted: [Int])
  /// The model holds operations the reference runtime cannot run (custom layers).
  case notRunnable([String])
  /// The reference file lacks a dataset or has one of the wrong shape.
  case invalidReference(path: String, detail: String)
  /// The reference file does not exist.
  case referenceNotFound(path: String)
  /// The file given as the converted model is of a format no reader can read back for verification.
  case notVerifiable(path: String, format: String)
  /// One sample's tensors (every value of both models, planned from their shapes) exceed the memory verify may use.
  case exceedsMemory(path: String, bytesPerSample: Int, limit: Int)

  public var description: String {
    switch self {
    case .interfaceMismatch(let detail): return detail
    case .layoutMismatch(let feature, let source, let converted):
      return
        "'\(feature)': the source's shape \(source) does not correspond to the converted model's shape \(converted)"
    case .invalidReference(let path, let detail): return "\(path): \(detail)"
    case .referenceNotFound(let path): return "\(path): no such reference file"
    case .notVerifiable(let path, let format):
      return "\(path): a \(format) model cannot be the converted side of a verification"
    case .exceedsMemory(let path, let bytes, let limit):
      return
        "\(path): cannot verify: one sample needs \(RuntimeMemory.describe(bytes)) of tensors and kernel buffers (every value of both models, from their declared shapes), more than the \(RuntimeMemory.describe(limit)) verify may use (by default half of the memory this process may have)"
    case .notRunnable(let operations):
      return
        "cannot verify: the reference runtime cannot run \(operations.joined(separator: ", ")); their code lives in the app"
    }
  }
}

extension VerificationError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension VerificationError: KindedError {
  public var kind: ErrorKind {
    switch self {
    case .referenceNotFound: return .missingInput
    case .notVerifiable: return .usage
    default: return .badModel
    }
  }
}
