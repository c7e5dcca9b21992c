/// Input sizes a source file leaves open (ONNX's -1, 0 or symbolic dimensions, Keras' None) that a
/// conversion needs fixed: every such input and axis at once, so that one try tells the user all of them.
public struct UnknownInputSizes: KindedError, CustomStringConvertible, Sendable {
  /// One axis of an input: a size the file fixes, or an open one with the name the file gives it, if any.
  public enum Dimension: Sendable, Equatable {
    case size(Int)
    case open(String?)
  }

  public struct Input: Sendable, Equatable {
    public var name: String
    public var dimensions: [Dimension]

    public init(name: String, dimensions: [Dimension]) {
      self.name = name
      self.dimensions = dimensions
    }

    /// The axes without a size.
    public var openAxes: [Int] {
      dimensions.indices.filter { if case .open = dimensions[$0] { return true } else { return false } }
    }

    /// The shape with each open size written as its name in capitals (or `N<axis>`), as `1,3,HEIGHT,WIDTH`:
    /// what the user fills in.
    public var template: String {
      guard !dimensions.isEmpty else { return "..." }
      return dimensions.enumerated().map { axis, dimension in
        switch dimension {
        case .size(let size): return String(size)
        case .open(let label):
          let cleaned = (label ?? "").uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }
          return cleaned.isEmpty || cleaned.first?.isNumber == true ? "N\(axis)" : String(cleaned)
        }
      }.joined(separator: ",")
    }
  }

  /// The source file.
  public var path: String
  /// The inputs with open sizes, in the source's input order.
  public var inputs: [Input]

  public init(path: String, inputs: [Input]) {
    self.path = path
    self.inputs = inputs
  }

  /// The model itself is fine; the request lacks the sizes to convert it at.
  public var kind: ErrorKind { .usage }

  public var description: String {
    let listed = inputs.map { input -> String in
      guard !input.dimensions.isEmpty else { return "input '\(input.name)' (the file declares no shape)" }
      let shape = input.dimensions.map { dimension -> String in
        switch dimension {
        case .size(let size): return String(size)
        case .open(let label): return label.map { "?\($0)" } ?? "?"
        }
      }
      let axes = input.openAxes.map(String.init).joined(separator: ", ")
      return "input '\(input.name)' [\(shape.joined(separator: ", "))] (axis \(axes))"
    }
    return "\(path): the file leaves \(inputs.count == 1 ? "an input size" : "input sizes") open; give the shape of "
      + listed.joined(separator: ", ")
  }
}
