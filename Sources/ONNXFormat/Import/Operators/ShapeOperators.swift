import ModelIR

extension ONNXOperatorRegistry {
  /// Shape and data-movement operators. On constants (initializers, shape computations) they fold at
  /// import time; on computed tensors they are IR reshapes, transposes, slices and concatenations.
  static let shapeOperators: [String: [ONNXOperatorEntry]] = {
    var all: [String: [ONNXOperatorEntry]] = [:]
    func register(
      _ versions: [String: [Int]], layout: ONNXOperatorLayout = .own,
      _ handler: @escaping @Sendable (inout ONNXNodeContext) throws -> Void
    ) {
      all.merge(entries(versions, layout: layout, handler)) { $0 + $1 }
    }
    register(["Identity": [1, 13, 14, 16, 19], "Dropout": [1, 6, 7, 10, 12, 13]], layout: .neutral) {
      try $0.identity()
    }
    register(["Flatten": [1, 9, 11, 13]]) { try $0.flatten() }
    register(["Reshape": [1, 5, 13, 14, 19]]) { try $0.reshape() }
    register(["Squeeze": [1, 11, 13]]) { try $0.squeeze() }
    register(["Unsqueeze": [1, 11, 13]]) { try $0.unsqueeze() }
    register(["Transpose": [1, 13]]) { try $0.transpose() }
    register(["Concat": [1, 4, 11, 13]]) { try $0.concat() }
    register(["Constant": [1, 9, 11, 12, 13, 19]]) { try $0.constantNode() }
    register(["Shape": [1, 13, 15, 19]]) { try $0.shapeOf() }
    register(["ConstantOfShape": [9, 20]]) { try $0.constantOfShape() }
    register(["Cast": [1, 6, 9, 13, 19]], layout: .neutral) { try $0.cast() }
    register(["CastLike": [15, 19]]) { try $0.castLike() }
    register(["Gather": [1, 11, 13]]) { try $0.gather() }
    register(["Slice": [1, 10, 11, 13]], layout: .neutral) { try $0.slice() }
    register(["Pad": [1, 2, 11, 13, 18, 19]], layout: .neutral) { try $0.pad() }
    register(["Split": [1, 2, 11, 13, 18]]) { try $0.split() }
    register(["Expand": [8, 13]]) { try $0.expand() }
    register(["Resize": [10, 11, 13, 18, 19]], layout: .channelsFirst) { try $0.resize() }
    register(["Upsample": [7, 9]], layout: .channelsFirst) { try $0.resize() }
    return all
  }()
}

extension ONNXNodeContext {
  /// `Identity`, and `Dropout` at inference: the data unchanged, the mask all true.
  mutating func identity() throws {
    if opType == "Dropout" {
      let training = opset >= 12 && hasInput(2) ? try requiredConstant(2, "training_mode").floats.first ?? 0 : 0
      let isTest = opset >= 7 ? 1 : try int("is_test", 1)
      guard training == 0, isTest == 1 else { throw invalid("training mode (random dropping) is not supported") }
      if outputCount > 1 {
        let shape = try self.shape(0)
        define(ONNXConstant(shape: shape, ints: Array(repeating: 1, count: shape.reduce(1, *))), output: 1)
      }
    }
    if let c = try constant(0) {
      define(c)
      return
    }
    define(try add(.reshape(targetShape: try shape(0)), [try tensor(0)]))
  }

  /// Output `shape` of input 0's data: a constant's values reordered, or an IR reshape.
  mutating func reshaped(to target: [Int]) throws {
    if let c = try constant(0) {
      define(ONNXConstant(shape: target, floats: c.floats, ints: c.ints))
      return
    }
    define(try add(.reshape(targetShape: target), [try tensor(0)]))
  }

  mutating func flatten() throws {
    let shape = try self.shape(0)
    let axis = try int("axis", 1)
    let resolved = axis < 0 ? axis + shape.count : axis
    guard resolved >= 0, resolved <= shape.count else {
      throw invalid("axis \(axis) is outside a rank-\(shape.count) tensor")
    }
    try reshaped(to: [shape[..<resolved].reduce(1, *), shape[resolved...].reduce(1, *)])
  }

  mutating func reshape() throws {
    let shape = try self.shape(0)
    let requested = opset < 5 ? (try ints("shape") ?? []) : try requiredInts(1, "shape")
    let allowZero = try int("allowzero", 0) == 1
    var target: [Int] = []
    var inferred: Int?
    for (axis, size) in requested.enumerated() {
      switch size {
      case 0 where !allowZero:
        guard axis < shape.count else {
          throw invalid("shape \(requested) copies axis \(axis) of a rank-\(shape.count) tensor")
        }
        target.append(shape[axis])
      case -1:
        guard inferred == nil else { throw invalid("shape \(requested) has more than one -1") }
        inferred = axis
        target.append(1)
      case let size where size >= 0: target.append(size)
      default: throw invalid("shape \(requested) has the size \(size)")
      }
    }
    let total = shape.reduce(1, *)
    let known = target.reduce(1, *)
    if let inferred {
      guard known > 0, total % known == 0 else { throw invalid("shape \(requested) does not fit \(total) elements") }
      target[inferred] = total / known
    }
    guard target.reduce(1, *) == total else {
      throw invalid("shape \(requested) does not hold the \(total) elements of \(shape)")
    }
    try reshaped(to: target)
  }

  /// Axes from the attribute (before opset 13) or the optional input 1.
  private func axesArgument(rank: Int) throws -> [Int]? {
    let raw = opset < 13 ? try ints("axes") : (hasInput(1) ? try requiredInts(1, "axes") : nil)
    return try raw.map { try $0.map { try axis($0, rank: rank, "axes") } }
  }

  mutating func squeeze() throws {
    let shape = try self.shape(0)
    let axes = try axesArgument(rank: shape.count) ?? shape.indices.filter { shape[$0] == 1 }
    guard axes.allSatisfy({ shape[$0] == 1 }) else { throw invalid("axes \(axes) of \(shape) are not all 1") }
    try reshaped(to: shape.indices.filter { !axes.contains($0) }.map { shape[$0] })
  }

  mutating func unsqueeze() throws {
    let shape = try self.shape(0)
    let rank =
      shape.count
      + (opset < 13 ? (try ints("axes") ?? []).count : (hasInput(1) ? try requiredInts(1, "axes").count : 0))
    guard let axes = try axesArgument(rank: rank), Set(axes).count == axes.count else {
      throw invalid("axes are required, each once")
    }
    var target: [Int] = []
    var rest = shape.makeIterator()
    for axis in 0..<rank { target.append(axes.contains(axis) ? 1 : rest.next() ?? 1) }
    try reshaped(to: target)
  }

  mutating func transpose() throws {
    let shape = try self.shape(0)
    let order = try ints("perm") ?? Array(shape.indices.reversed())
    guard order.sorted() == Array(shape.indices) else {
      throw invalid("perm \(order) is not a permutation of \(shape.count) axes")
    }
    if let c = try constant(0) {
      define(Self.permuted(c, order))
      return
    }
    define(try add(.permute(order: order), [try tensor(0)]))
  }

  /// A constant's axes reordered (`y` axis i is `x` axis `order[i]`).
  static func permuted(_ c: ONNXConstant, _ order: [Int]) -> ONNXConstant {
    let indices = Constant.permutedIndices(shape: c.shape, order: order)
    return ONNXConstant(
      shape: order.map { c.shape[$0] }, floats: indices.map { c.floats[$0] },
      ints: c.ints.map { ints in indices.map { ints[$0] } })
  }

  mutating func concat() throws {
    let given = (0..<inputCount).filter { hasInput($0) }
    let shapes = try given.map { try shape($0) }
    guard let rank = shapes.first?.count else { throw invalid("needs inputs") }
    let axis = try self.axis(try int("axis", opset < 4 ? 1 : 0), rank: rank)
    // Empty inputs (a zero-length axis) add nothing.
    let kept = zip(given, shapes).filter { $0.1.reduce(1, *) > 0 }
    let constants = try kept.map { try constant($0.0) }
    if constants.allSatisfy({ $0 != nil }) {
      let parts = constants.map { $0! }
      var shape = shapes[0]
      shape[axis] = parts.map { $0.shape[axis] }.reduce(0, +)
      let outer = shape[..<axis].reduce(1, *)
      var floats: [Float] = []
      var ints: [Int]? = parts.allSatisfy { $0.ints != nil } ? [] : nil
      for o in 0..<outer {
        for part in parts {
          let block = part.shape[axis...].reduce(1, *)
          floats += part.floats[(o * block)..<((o + 1) * block)]
          ints? += part.ints![(o * block)..<((o + 1) * block)]
        }
      }
      define(ONNXConstant(shape: shape, floats: floats, ints: ints))
      return
    }
    if kept.count == 1 {
      define(try add(.reshape(targetShape: kept[0].1), [try tensor(kept[0].0)]))
      return
    }
    var inputs: [ValueID] = []
    for (index, _) in kept { inputs.append(try tensor(index)) }
    define(try add(.concatenate(axis: axis), inputs))
  }

  mutating func constantNode() throws {
    guard let attribute = node.attributes.first else { throw invalid("a Constant needs a value attribute") }
    switch (attribute.name, attribute.value) {
    case ("value", .tensor(let t)): define(try ONNXConstant(t))
    case ("value_float", .float(let f)): define(ONNXConstant(shape: [], floats: [f]))
    case ("value_floats", .floats(let f)): define(ONNXConstant(shape: [f.count], floats: f))
    case ("value_int", .int(let i)): define(ONNXConstant(shape: [], ints: [i]))
    case ("value_ints", .ints(let i)): define(ONNXConstant(shape: [i.count], ints: i))
    default: throw invalid("attribute '\(attribute.name)' is not supported (value, value_float(s), value_int(s))")
    }
  }

  mutating func shapeOf() throws {
    let shape = try self.shape(0)
    let rank = shape.count
    func clamp(_ v: Int) -> Int { Swift.min(Swift.max(v < 0 ? v + rank : v, 0), rank) }
    let start = clamp(try int("start", 0))
    let end = clamp(try int("end", rank))
    let dims = start < end ? Array(shape[start..<end]) : []
    define(ONNXConstant(shape: [dims.count], ints: dims))
  }

  mutating func constantOfShape() throws {
    let dims = try requiredInts(0, "shape")
    guard dims.allSatisfy({ $0 >= 0 }), let count = GraphLimits.elementCount(dims) else {
      throw invalid("shape \(dims) is not a valid size")
    }
    var value = ONNXConstant(shape: [1], floats: [0])
    if case .tensor(let t)? = node.attribute("value") { value = try ONNXConstant(t) }
    guard value.count == 1 else { throw invalid("value must hold one element") }
    define(
      ONNXConstant(
        shape: dims, floats: Array(repeating: value.floats[0], count: count),
        ints: value.ints.map { Array(repeating: $0[0], count: count) }))
  }

  mutating func cast() throws {
    let to = try int("to", 1)
    guard let type = ONNXDataType(rawValue: to) else { throw invalid("to \(to) is not a data type") }
    try cast(to: type)
  }

  /// `CastLike` (the dynamo exporter's form of a cast): to the element type of input 1, an integer type
  /// when that is an integer constant or a computed integer, else float.
  mutating func castLike() throws {
    let integer: Bool
    if let target = try constant(1) {
      integer = target.ints != nil
    } else if case .tensor(let id)? = values[node.inputs[1]] {
      integer = integerValues.contains(id)
    } else {
      throw invalid("input 1 (target_type) is missing")
    }
    try cast(to: integer ? .int64 : .float)
  }

  mutating func cast(to type: ONNXDataType) throws {
    if let c = try constant(0) {
      if type.isInteger || type == .bool {
        define(
          ONNXConstant(
            shape: c.shape, ints: c.floats.map { type == .bool ? ($0 != 0 ? 1 : 0) : Int($0.rounded(.towardZero)) }))
      } else {
        define(ONNXConstant(shape: c.shape, floats: c.floats))
      }
      return
    }
    // Computed tensors are float32 in the IR; a cast to another float type is the value itself, and so
    // is a cast of a computed integer (an integer input, exact arithmetic on it) to another integer type.
    if type.isInteger, case .tensor(let id)? = values[node.inputs[0]], integerValues.contains(id) {
      let y = try add(.reshape(targetShape: try shape(0)), [id])
      integerValues.insert(y)
      define(y)
      return
    }
    if type.isInteger && type != .bool {
      // A computed float cast to an integer type: only as an embedding's ids (`indexCasts`).
      let y = try add(.reshape(targetShape: try shape(0)), [try tensor(0)], suffix: "__ids")
      indexCasts[y] = name
      define(y)
      return
    }
    guard [.float, .float16, .double].contains(type) else {
      throw invalid("a cast of a computed tensor to \(type.name) is not supported")
    }
    define(try add(.reshape(targetShape: try shape(0)), [try tensor(0)]))
  }
}
