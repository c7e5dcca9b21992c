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
  /// One sample's tensors (every value of both models, planned from their shapes) exceed the memory verify may use.
  case exceedsMemory(path: String, bytesPerSample: Int, limit: Int)

  public var description: String {
    switch self {
    case .interfaceMismatch(let detail): return detail
    case .layoutMismatch(let feature, let source, let converted):
      return "'\(feature)': the Keras shape \(source) does not correspond to the Core ML shape \(converted)"
    case .invalidReference(let path, let detail): return "\(path): \(detail)"
    case .referenceNotFound(let path): return "\(path): no such reference file"
    case .exceedsMemory(let path, let bytes, let limit):
      return "\(path): cannot verify: one sample needs \(RuntimeMemory.describe(bytes)) of tensors and kernel buffers (every value of both models, from their declared shapes), more than the \(RuntimeMemory.describe(limit)) verify may use (by default half of the memory this process may have)"
    case .notRunnable(let operations):
      return "cannot verify: the reference runtime cannot run \(operations.joined(separator: ", ")); their code lives in the app"
    }
  }
}

extension VerificationError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension VerificationError: KindedError {
  public var kind: ErrorKind {
    if case .referenceNotFound = self { return .missingInput }
    return .badModel
  }
}
