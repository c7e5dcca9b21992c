import ModelIR

/// What an operator handler sees of the node it imports: attributes with their defaults, inputs as IR
/// values or constants, and where its outputs go. Errors it throws name the node.
public struct ONNXNodeContext {
  let node: ONNXNode
  /// The default domain's opset the model imports.
  public let opset: Int
  let path: String
  var builder: GraphBuilder
  var values: [String: ONNXValue]
  /// Computed values that hold integers (integer graph inputs and exact arithmetic on them): the IR
  /// computes in float32, so what would differ for integers (division) is refused on them.
  var integerValues: Set<ValueID> = []
  /// The IR constant node made for a constant the first time an operator takes it as a tensor; the name
  /// stays a constant for operators that need its values (a shared initializer: Greater's operand and
  /// Clip's bound).
  var constantNodes: [String: ValueID] = [:]
  /// Float tensors cast to an integer type (tf2onnx's `Cast` of a Keras Embedding's float ids), by the
  /// cast's node name: held as the float values, and allowed only as the ids of an embedding (checked
  /// once the graph is imported), which looks them up as whole numbers.
  var indexCasts: [ValueID: String] = [:]
  /// How many `If`/`Loop` bodies this node sits in.
  var depth = 0

  public var opType: String { node.opType }
  public var name: String { node.name.isEmpty ? firstOutput ?? node.opType : node.name }
  /// The first output the node names (an optional output left out is the empty name).
  var firstOutput: String? { node.outputs.first { !$0.isEmpty } }

  /// An error naming this node.
  public func invalid(_ detail: String) -> ONNXImportError {
    .invalidNode(path: path, node: name, opType: node.opType, detail: detail)
  }

  // MARK: Attributes

  public func int(_ key: String, _ fallback: Int) throws -> Int {
    guard let value = node.attribute(key) else { return fallback }
    guard let int = value.int else { throw invalid("attribute '\(key)' must be an int") }
    return int
  }

  public func ints(_ key: String) throws -> [Int]? {
    guard let value = node.attribute(key) else { return nil }
    guard let ints = value.ints else { throw invalid("attribute '\(key)' must be a list of ints") }
    return ints
  }

  public func float(_ key: String, _ fallback: Float) throws -> Float {
    guard let value = node.attribute(key) else { return fallback }
    guard let float = value.float, float.isFinite else { throw invalid("attribute '\(key)' must be a finite float") }
    return float
  }

  public func string(_ key: String, _ fallback: String) throws -> String {
    guard let value = node.attribute(key) else { return fallback }
    guard let string = value.string else { throw invalid("attribute '\(key)' must be a string") }
    return string
  }

  public func hasAttribute(_ key: String) -> Bool { node.attribute(key) != nil }

  // MARK: Inputs

  /// Whether optional input `index` is given (present and not the empty name).
  public func hasInput(_ index: Int) -> Bool { index < node.inputs.count && !node.inputs[index].isEmpty }

  public var inputCount: Int { node.inputs.count }

  private func value(_ index: Int) throws -> ONNXValue {
    guard hasInput(index) else { throw invalid("input \(index) is missing") }
    guard let value = values[node.inputs[index]] else {
      throw invalid("input '\(node.inputs[index])' is not computed before this node")
    }
    return value
  }

  /// Input `index` when it is known at import time.
  public func constant(_ index: Int) throws -> ONNXConstant? {
    if case .constant(let c) = try value(index) { return c }
    return nil
  }

  /// Input `index`, which this operator needs at import time (weights, shapes, axes).
  public func requiredConstant(_ index: Int, _ what: String) throws -> ONNXConstant {
    guard let c = try constant(index) else {
      throw invalid("\(what) (input \(index)) must be a constant (an initializer or folded)")
    }
    return c
  }

  /// Integer input `index` known at import time.
  public func requiredInts(_ index: Int, _ what: String) throws -> [Int] {
    guard let ints = try requiredConstant(index, what).ints else {
      throw invalid("\(what) (input \(index)) must be an integer tensor")
    }
    return ints
  }

  /// Input `index` as an IR value (a constant becomes a constant node).
  public mutating func tensor(_ index: Int) throws -> ValueID {
    switch try value(index) {
    case .tensor(let id): return id
    case .constant(let c):
      if let id = constantNodes[node.inputs[index]] { return id }
      let id = try add(
        .constant(Constant(shape: c.shape.isEmpty ? [1] : c.shape, values: c.floats)), [], suffix: "_const\(index)")
      constantNodes[node.inputs[index]] = id
      return id
    }
  }

  /// The shape of input `index`.
  public func shape(_ index: Int) throws -> [Int] {
    switch try value(index) {
    case .tensor(let id): return builder.type(of: id).shape
    case .constant(let c): return c.shape
    }
  }

  // MARK: Outputs

  /// Adds an IR node computing part of this ONNX node (named after its first output and `suffix`).
  public mutating func add(_ operation: Operation, _ inputs: [ValueID], suffix: String = "") throws -> ValueID {
    builder.origin = LayerOrigin(name: firstOutput ?? name, type: node.opType)
    defer { builder.origin = nil }
    do {
      return try builder.add(operation, name: (firstOutput ?? name) + suffix, inputs: inputs)
    } catch let error as GraphError {
      throw invalid("\(error)")
    }
  }

  /// Output `index` is the IR value `id`.
  public mutating func define(_ id: ValueID, output index: Int = 0) {
    if index < node.outputs.count, !node.outputs[index].isEmpty { values[node.outputs[index]] = ONNXValue.tensor(id) }
  }

  /// Output `index` is known at import time.
  public mutating func define(_ constant: ONNXConstant, output index: Int = 0) {
    if index < node.outputs.count, !node.outputs[index].isEmpty { values[node.outputs[index]] = .constant(constant) }
  }

  /// The node's output count that later nodes or the graph may read.
  public var outputCount: Int { node.outputs.count }

  /// A negative axis counted from the end, checked against `rank`.
  public func axis(_ axis: Int, rank: Int, _ what: String = "axis") throws -> Int {
    let resolved = axis < 0 ? axis + rank : axis
    guard resolved >= 0, resolved < max(rank, 1) else {
      throw invalid("\(what) \(axis) is outside a rank-\(rank) tensor")
    }
    return resolved
  }
}
