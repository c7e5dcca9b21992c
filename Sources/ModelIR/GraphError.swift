import Foundation
import ModelFormats

/// Why a graph could not be built.
public enum GraphError: Error, Equatable, CustomStringConvertible {
  /// An operation got inputs whose shapes it cannot take.
  case shapeMismatch(node: String, detail: String)
  /// An operation got the wrong number of inputs.
  case arity(node: String, expected: String, actual: Int)
  /// A size overflows, is negative, or passes a limit in `GraphLimits`.
  case tooLarge(node: String, detail: String)
  /// Two values share a name.
  case duplicateName(String)
  /// A pass changed what the graph presents: its inputs' or outputs' names, shapes or number (a
  /// defect of the pass, caught before any writer sees the graph).
  case passChangedInterface(pass: String, detail: String)

  public var description: String {
    switch self {
    case .shapeMismatch(let node, let detail): return "layer '\(node)': \(detail)"
    case .arity(let node, let expected, let actual): return "layer '\(node)': expects \(expected) inputs, got \(actual)"
    case .tooLarge(let node, let detail): return "layer '\(node)': \(detail)"
    case .duplicateName(let name): return "two tensors are both named '\(name)'"
    case .passChangedInterface(let pass, let detail):
      return "the graph pass '\(pass)' changed the model's interface: \(detail)"
    }
  }
}

extension GraphError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension GraphError: KindedError {
  /// Shapes that do not fit and sizes beyond the limits come from the model.
  public var kind: ErrorKind { .badModel }
}
