import CoreMLCommon
import ModelIR

/// MIL control flow read where the program fixes what it does: a `while_loop` runs its condition block,
/// and while that gives a value known when the model is read (a counter below a constant), its body
/// block, each iteration imported in place; loop values carry tensors, constants or tensor lists. Lists
/// (`make_list`, `list_scatter`, `list_read`, `list_write`, `list_gather`, `list_length`) are the IR
/// values of their elements, read and written at constant indices.
extension MILProgramImporter {
  /// The most iterations and the most nested operations one loop may import.
  static let maxLoopOperations = 200_000

  /// A loop value: a tensor, a constant or a list.
  enum LoopValue {
    case tensor(ValueID)
    case constant(MILValue)
    case list([ValueID?])
  }

  func loopValue(_ argument: MILArgument) throws -> LoopValue {
    switch argument {
    case .value(let value): return .constant(value)
    case .name(let name):
      if let list = lists[name] { return .list(list) }
      if let value = constants[name] { return .constant(value) }
      if let value = values[name] { return .tensor(value) }
      throw invalid("reads '\(name)', which nothing defined before it")
    }
  }

  mutating func bind(_ name: String, _ value: LoopValue) {
    values.removeValue(forKey: name)
    constants.removeValue(forKey: name)
    lists.removeValue(forKey: name)
    switch value {
    case .tensor(let id): values[name] = id
    case .constant(let c): constants[name] = c
    case .list(let l): lists[name] = l
    }
  }

  func lookup(_ name: String) throws -> LoopValue { try loopValue(.name(name)) }

  mutating func whileLoop() throws {
    let loop = operation
    guard loop.blocks.count == 2 else {
      throw invalid("has \(loop.blocks.count) blocks; a while_loop has a condition and a body")
    }
    let (condition, body) = (loop.blocks[0], loop.blocks[1])
    let arguments = loop.inputs["loop_vars"] ?? []
    let count = arguments.count
    guard condition.inputs.count == count, body.inputs.count == count, body.outputs.count == count,
      loop.outputs.count == count,
      condition.outputs.count == 1
    else { throw invalid("its blocks do not fit its \(count) loop values") }
    var carried = try arguments.map { try loopValue($0) }
    var iterations = 0
    while true {
      for (input, value) in zip(condition.inputs, carried) { bind(input.name, value) }
      try importBlock(condition)
      operation = loop
      guard case .constant(let verdict) = try lookup(condition.outputs[0]), verdict.count == 1 else {
        throw unsupported(
          "its condition is computed from the data; only loops whose iterations are known when the model is read are supported"
        )
      }
      if verdict.asFloats[0] == 0 { break }
      guard iterations < GraphLimits.maxUnrolledSteps else {
        throw unsupported("it runs more than the \(GraphLimits.maxUnrolledSteps) iterations unrolled")
      }
      for (input, value) in zip(body.inputs, carried) { bind(input.name, value) }
      try importBlock(body)
      operation = loop
      carried = try body.outputs.map { try lookup($0) }
      iterations += 1
    }
    for (output, value) in zip(loop.outputs, carried) { bind(output.name, value) }
  }

  /// Imports a nested block's operations in turn; small integer arithmetic and comparisons of constants
  /// (a loop counter) are computed, so that the condition and the list indices stay constants.
  mutating func importBlock(_ block: MILBlock) throws {
    let saved = builder.origin
    defer { builder.origin = saved }
    for inner in block.operations {
      // Every operation imported from a block counts, nested loops' included, so loops in loops stay bounded.
      unrolledOperations += 1
      guard unrolledOperations <= Self.maxLoopOperations else {
        throw unsupported("its loops unroll to more than \(Self.maxLoopOperations) operations")
      }
      operation = inner
      builder.origin = LayerOrigin(name: inner.name, type: inner.type)
      if try foldScalarConstants() { continue }
      do { try importOperation(inner) } catch let error as GraphError {
        throw invalid("\(error)")
      }
    }
  }

  /// `add`, `sub`, `mul` and comparisons of two constants of at most one element, computed.
  mutating func foldScalarConstants() throws -> Bool {
    let comparisons: [String: (Double, Double) -> Bool] = [
      "less": { $0 < $1 }, "less_equal": { $0 <= $1 }, "greater": { $0 > $1 }, "greater_equal": { $0 >= $1 },
      "equal": { $0 == $1 }, "not_equal": { $0 != $1 },
    ]
    let arithmetic: [String: (Double, Double) -> Double] = ["add": { $0 + $1 }, "sub": { $0 - $1 }, "mul": { $0 * $1 }]
    guard comparisons[operation.type] != nil || arithmetic[operation.type] != nil, isConstant("x"), isConstant("y"),
      let x = try constant("x"), let y = try constant("y"), x.count == 1, y.count == 1, operation.outputs.count == 1
    else { return false }
    let (a, b) = (Double(x.asFloats[0]), Double(y.asFloats[0]))
    let name = try outputName()
    let result: MILValue
    if let compare = comparisons[operation.type] {
      result = MILValue(type: MILTensorType(dataType: .bool, shape: []), integers: [compare(a, b) ? 1 : 0])
    } else {
      let value = arithmetic[operation.type]!(a, b)
      if x.type.dataType.isFloat || y.type.dataType.isFloat {
        result = MILValue(
          type: MILTensorType(
            dataType: x.type.dataType.isFloat ? x.type.dataType : y.type.dataType, shape: x.type.shape),
          floats: [Float(value)])
      } else {
        guard abs(value) < Double(1 << 31) else { throw invalid("the integer result \(value) overflows") }
        result = MILValue(type: MILTensorType(dataType: x.type.dataType, shape: x.type.shape), integers: [Int64(value)])
      }
    }
    bind(name, .constant(result))
    return true
  }

  // MARK: Lists

  func list(_ key: String) throws -> [ValueID?] {
    guard case .name(let name)? = argument(key), let list = lists[name] else {
      throw unsupported("parameter '\(key)' is not a list made before it")
    }
    return list
  }

  func index(_ key: String, count: Int, growing: Bool = false) throws -> Int {
    let index = try int(key, -1)
    guard index >= 0, index < count || (growing && index <= count && count < GraphLimits.maxUnrolledSteps) else {
      throw invalid("index \(index) is outside the list of \(count) elements")
    }
    return index
  }

  mutating func makeList() throws {
    let length = try int("init_length", 0)
    guard length >= 0, length <= GraphLimits.maxUnrolledSteps else { throw invalid("init_length \(length)") }
    bind(try outputName(), .list([ValueID?](repeating: nil, count: length)))
  }

  mutating func listScatter() throws {
    var list = try list("ls")
    let value = try tensor("value")
    let s = shape(value)
    guard let indices = try ints("indices"), !s.isEmpty, indices.count == s[0],
      indices.count <= GraphLimits.maxUnrolledSteps
    else {
      throw invalid("indices do not fit value \(s) (at most \(GraphLimits.maxUnrolledSteps) elements)")
    }
    for (row, index) in indices.enumerated() {
      guard index >= 0, index < GraphLimits.maxUnrolledSteps else { throw invalid("index \(index)") }
      while list.count <= index { list.append(nil) }
      var begin = [Int](repeating: 0, count: s.count)
      var end = s
      (begin[0], end[0]) = (row, row + 1)
      let slice = try add(
        .slice(StridedSlice(begin: begin, end: end, strides: [Int](repeating: 1, count: s.count))), [value],
        suffix: "__\(row)")
      list[index] = try reshape(slice, to: s.count == 1 ? [1] : Array(s.dropFirst()))
    }
    bind(try outputName(), .list(list))
  }

  mutating func listRead() throws {
    let list = try list("ls")
    guard let element = list[try index("index", count: list.count)] else {
      throw invalid("reads an element no operation wrote")
    }
    bind(try outputName(), .tensor(element))
  }

  mutating func listWrite() throws {
    var list = try list("ls")
    let index = try index("index", count: list.count, growing: true)
    if index == list.count { list.append(nil) }
    list[index] = try tensor("value")
    bind(try outputName(), .list(list))
  }

  mutating func listGather() throws {
    let list = try list("ls")
    guard let indices = try ints("indices"), !indices.isEmpty, indices.count <= GraphLimits.maxUnrolledSteps else {
      throw invalid("indices must be at most \(GraphLimits.maxUnrolledSteps) constants")
    }
    var parts: [ValueID] = []
    for index in indices {
      guard index >= 0, index < list.count, let element = list[index] else {
        throw invalid("gathers element \(index), which no operation wrote")
      }
      parts.append(try reshape(element, to: [1] + shape(element)))
    }
    guard Set(parts.map { shape($0) }).count == 1 else { throw invalid("gathers elements of different shapes") }
    try define(parts.count == 1 ? parts[0] : try add(.concatenate(axis: 0), parts))
  }

  mutating func listLength() throws {
    let list = try list("ls")
    bind(
      try outputName(),
      .constant(MILValue(type: MILTensorType(dataType: .int32, shape: []), integers: [Int64(list.count)])))
  }
}
