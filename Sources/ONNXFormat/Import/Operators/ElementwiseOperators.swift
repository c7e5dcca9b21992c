import ModelIR

extension ONNXOperatorRegistry {
  /// Broadcasting arithmetic and comparisons (`Add`, `Sub`, `Mul`, `Div`, `Pow`, `Max`, `Min`, `Sum`,
  /// `Mean`, `Equal`, `Greater`, `Less`, `GreaterOrEqual`, `LessOrEqual`, `Where`) and the unary
  /// functions (`Sqrt`, `Exp`, `Log`, `Neg`, `Abs`, `Reciprocal`). Constant operands are folded here
  /// (shape computations need their values at import time).
  static let elementwiseOperators: [String: [ONNXOperatorEntry]] = {
    var all: [String: [ONNXOperatorEntry]] = [:]
    let binary: [(String, ElementwiseKind, [Int])] = [
      ("Add", .add, [1, 6, 7, 13, 14]), ("Sub", .subtract, [1, 6, 7, 13, 14]), ("Mul", .multiply, [1, 6, 7, 13, 14]),
      ("Div", .divide, [1, 6, 7, 13, 14]), ("Pow", .power, [1, 7, 12, 13, 15]), ("Max", .maximum, [1, 6, 8, 12, 13]),
      ("Min", .minimum, [1, 6, 8, 12, 13]), ("Sum", .add, [1, 6, 8, 13]), ("Mean", .average, [1, 6, 8, 13]),
      ("Equal", .equal, [1, 7, 11, 13, 19]), ("Greater", .greaterThan, [1, 7, 9, 13]),
      ("Less", .lessThan, [1, 7, 9, 13]),
      ("GreaterOrEqual", .greaterEqual, [12, 16]), ("LessOrEqual", .lessEqual, [12, 16]), ("Where", .select, [9, 16]),
    ]
    // The four arithmetic operators pass a layout through (the others are not relied on to).
    let neutral: Set<String> = ["Add", "Sub", "Mul", "Div", "Sqrt", "Exp", "Log", "Abs", "Neg"]
    for (op, kind, versions) in binary {
      all.merge(entries([op: versions], layout: neutral.contains(op) ? .neutral : .own) { try $0.elementwise(kind) }) {
        $0 + $1
      }
    }
    let unary: [(String, Activation, [Int])] = [
      ("Sqrt", .unary(UnaryFunction(kind: .sqrt)), [1, 6, 13]), ("Exp", .unary(UnaryFunction(kind: .exp)), [1, 6, 13]),
      ("Log", .unary(UnaryFunction(kind: .log)), [1, 6, 13]), ("Abs", .unary(UnaryFunction(kind: .abs)), [1, 6, 13]),
      ("Neg", .linear(scale: -1, offset: 0), [1, 6, 13]),
      ("Reciprocal", .unary(UnaryFunction(kind: .inverse)), [1, 6, 13]),
    ]
    for (op, activation, versions) in unary {
      all.merge(
        entries([op: versions], layout: neutral.contains(op) ? .neutral : .own) { try $0.unaryFunction(activation) }
      ) { $0 + $1 }
    }
    return all
  }()
}

extension ONNXNodeContext {
  mutating func elementwise(_ kind: ElementwiseKind) throws {
    guard inputCount >= 1 else { throw invalid("needs inputs") }
    let given = (0..<inputCount).filter { hasInput($0) }
    // No input of these operators is optional: an empty name is a missing input, not one left out.
    guard given.count == inputCount else {
      throw invalid("input \((0..<inputCount).first { !hasInput($0) } ?? 0) is missing (an empty name)")
    }
    let arity = ["Sum", "Mean", "Max", "Min"].contains(opType) ? nil : opType == "Where" ? 3 : 2
    if let arity, inputCount != arity { throw invalid("takes \(arity) inputs, got \(inputCount)") }
    let legacyBroadcast = opset < 7 ? try int("broadcast", 0) : 0
    if legacyBroadcast == 1 && hasAttribute("axis") {
      throw invalid("the legacy broadcast axis attribute is not supported")
    }
    // All constant: folded.
    let constants = try given.map { try constant($0) }
    if constants.allSatisfy({ $0 != nil }), let folded = try Self.fold(kind, constants.map { $0! }, opType: opType) {
      define(folded)
      return
    }
    if given.count == 1 {
      define(try add(.reshape(targetShape: try shape(given[0])), [try tensor(given[0])]))
      return
    }
    let integers = given.allSatisfy { index in
      if case .tensor(let id)? = values[node.inputs[index]] { return integerValues.contains(id) }
      return (try? constant(index))??.ints != nil
    }
    var inputs: [ValueID] = []
    for index in given { inputs.append(try tensor(index)) }
    if integers && (kind == .divide || kind == .power) {
      throw invalid(
        "integer \(kind == .divide ? "division" : "powers") of computed tensors (the IR computes in float32)")
    }
    let y = try add(.elementwise(kind), inputs)
    if integers && [.add, .subtract, .multiply, .maximum, .minimum].contains(kind) { integerValues.insert(y) }
    define(y)
  }

  mutating func unaryFunction(_ activation: Activation) throws {
    if let c = try constant(0), opType == "Neg" {
      define(ONNXConstant(shape: c.shape, floats: c.floats.map { -$0 }, ints: c.ints?.map { -$0 }))
      return
    }
    define(try add(.activation(activation), [try tensor(0)]))
  }

  /// The element of an operand of `operandShape` that element `flat` of the numpy broadcast `shape` reads.
  static func broadcastIndex(_ flat: Int, of shape: [Int], into operandShape: [Int]) -> Int {
    var rest = flat
    var result = 0
    var stride = 1
    let offset = shape.count - operandShape.count
    var strides = [Int](repeating: 0, count: operandShape.count)
    for axis in operandShape.indices.reversed() {
      strides[axis] = operandShape[axis] == 1 ? 0 : stride
      stride *= operandShape[axis]
    }
    for axis in shape.indices.reversed() {
      let coordinate = rest % shape[axis]
      rest /= shape[axis]
      if axis >= offset { result += coordinate * strides[axis - offset] }
    }
    return result
  }

  /// Numpy-broadcast arithmetic on constants (integers stay exact), or nil when not folded here.
  static func fold(_ kind: ElementwiseKind, _ operands: [ONNXConstant], opType: String) throws -> ONNXConstant? {
    guard operands.count >= 1, let shape = Broadcasting.shape(operands.map(\.shape)) else { return nil }
    let count = shape.reduce(1, *)
    guard count <= ONNXConstant.maxFoldedCount else { return nil }
    func index(_ flat: Int, into operandShape: [Int]) -> Int {
      Self.broadcastIndex(flat, of: shape, into: operandShape)
    }
    // Where(condition, a, b) on constants (exporters compute expand shapes with it).
    if kind == .select {
      guard operands.count == 3 else { return nil }
      let (condition, a, b) = (operands[0], operands[1], operands[2])
      let pick = (0..<count).map { flat in condition.floats[index(flat, into: condition.shape)] != 0 }
      if let ai = a.ints, let bi = b.ints {
        return ONNXConstant(
          shape: shape, ints: (0..<count).map { pick[$0] ? ai[index($0, into: a.shape)] : bi[index($0, into: b.shape)] }
        )
      }
      return ONNXConstant(
        shape: shape,
        floats: (0..<count).map { pick[$0] ? a.floats[index($0, into: a.shape)] : b.floats[index($0, into: b.shape)] })
    }
    let allInts = operands.allSatisfy { $0.ints != nil }
    if allInts,
      [
        .add, .subtract, .multiply, .divide, .maximum, .minimum, .equal, .greaterThan, .lessThan, .greaterEqual,
        .lessEqual,
      ].contains(kind)
    {
      var result: [Int] = []
      for flat in 0..<count {
        let values = operands.map { $0.ints![index(flat, into: $0.shape)] }
        var value = values[0]
        for next in values.dropFirst() {
          switch kind {
          case .add: value = value.addingReportingOverflow(next).partialValue
          case .subtract: value = value.subtractingReportingOverflow(next).partialValue
          case .multiply: value = value.multipliedReportingOverflow(by: next).partialValue
          case .divide:
            // Integer division truncates, as in C; by zero it is undefined, so refused.
            guard next != 0, !(value == .min && next == -1) else { return nil }
            value /= next
          case .maximum: value = max(value, next)
          case .minimum: value = min(value, next)
          case .equal: value = value == next ? 1 : 0
          case .greaterThan: value = value > next ? 1 : 0
          case .lessThan: value = value < next ? 1 : 0
          case .greaterEqual: value = value >= next ? 1 : 0
          default: value = value <= next ? 1 : 0
          }
        }
        result.append(value)
      }
      return ONNXConstant(shape: shape, ints: result)
    }
    if operands.count == 2, [.equal, .notEqual, .greaterThan, .lessThan, .greaterEqual, .lessEqual].contains(kind) {
      // Float comparisons give booleans (masks exporters build from shapes).
      let (a, b) = (operands[0], operands[1])
      return ONNXConstant(
        shape: shape,
        ints: (0..<count).map { flat -> Int in
          let (x, y) = (a.floats[index(flat, into: a.shape)], b.floats[index(flat, into: b.shape)])
          switch kind {
          case .equal: return x == y ? 1 : 0
          case .notEqual: return x != y ? 1 : 0
          case .greaterThan: return x > y ? 1 : 0
          case .lessThan: return x < y ? 1 : 0
          case .greaterEqual: return x >= y ? 1 : 0
          default: return x <= y ? 1 : 0
          }
        })
    }
    var result: [Float] = []
    for flat in 0..<count {
      let values = operands.map { $0.floats[index(flat, into: $0.shape)] }
      var value = values[0]
      switch kind {
      case .add: value = values.dropFirst().reduce(value, +)
      case .subtract: value -= values[1]
      case .multiply: value = values.dropFirst().reduce(value, *)
      case .divide: value /= values[1]
      case .maximum: value = values.max()!
      case .minimum: value = values.min()!
      case .average: value = values.reduce(0, +) / Float(values.count)
      default: return nil
      }
      result.append(value)
    }
    return ONNXConstant(shape: shape, floats: result)
  }
}
