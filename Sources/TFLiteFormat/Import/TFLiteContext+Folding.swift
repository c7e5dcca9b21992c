import ModelIR

/// Operators whose inputs are all constants are computed here, once, and their outputs become constants: the
/// shape arithmetic TensorFlow's converter leaves in a model whose batch it left open (SHAPE of a computed
/// tensor, then SPLIT_V, FLOOR_DIV, PACK, RANGE, CONCATENATION ... down to a RESHAPE's target or a GATHER's
/// indices). SHAPE needs only its input's shape, which is known here (a batch of 1).
extension TFLiteContext {
  /// The operators computed on constants, by `BuiltinOperator` code.
  static let foldable: Set<Int> = [
    0, 2, 18, 22, 36, 41, 42, 43, 45, 53, 55, 57, 70, 77, 81, 83, 90, 95, 96, 102,
  ]

  /// The largest constant computed here, in elements.
  static let maximumFoldedElements = 1 << 24

  /// Computes the operator when it is foldable and its inputs are constants (SHAPE: any input); true when
  /// it did (its outputs are constants from now on).
  mutating func foldIfConstant(code: Int) throws -> Bool {
    guard Self.foldable.contains(code), !op.inputs.isEmpty, op.outputs.count >= 1 else { return false }
    if code == 77 {
      guard op.inputs[0] >= 0 else { return false }
      let shape: [Int]
      if let id = values[op.inputs[0]] {
        shape = unbatched.contains(op.inputs[0]) ? builder.type(of: id).shape : [1] + builder.type(of: id).shape
      } else if isConstant(0) {
        shape = try constant(0).shape
      } else {
        return false
      }
      define(0, shape: [shape.count], shape.map(Float.init))
      return true
    }
    guard op.inputs.indices.allSatisfy({ op.inputs[$0] < 0 || isConstant($0) }) else { return false }
    // (an arithmetic operator with a fused activation is left to its handler)
    if [0, 18, 41, 42].contains(code), op.options != nil,
      try op.options?.i8(0, "fused_activation_function") ?? 0 != 0
    {
      return false
    }
    let inputs = try op.inputs.indices.map { op.inputs[$0] < 0 ? nil : try constant($0) }
    func input(_ position: Int) throws -> Constant {
      guard position < inputs.count, let value = inputs[position] else { throw fail("input \(position) is missing") }
      return value
    }
    switch code {
    case 0, 18, 41, 42, 55, 57, 90, 95:
      let function: (Float, Float) -> Float =
        switch code {
        case 0: (+)
        case 18: (*)
        case 41: (-)
        case 42: (/)
        case 55: { max($0, $1) }
        case 57: { min($0, $1) }
        case 90: { ($0 / $1).rounded(.down) }
        default: { $0 - $1 * ($0 / $1).rounded(.down) }
        }
      let (a, b) = (try input(0), try input(1))
      if code == 90 || code == 95, b.values.contains(0) { throw fail("a division by zero in constant arithmetic") }
      try broadcast(a, b, function)
    case 22, 43, 70:
      // RESHAPE, SQUEEZE, EXPAND_DIMS of a constant: the same values, the shape they give.
      let x = try input(0)
      try define(0, shape: reshapedShape(of: x.shape, code: code), x.values)
    case 53:
      let x = try input(0)
      let integer = [TFLiteTensorType.int32, .int64, .int16, .int8, .uint8].contains(output.type)
      define(0, shape: x.shape, integer ? x.values.map { $0.rounded(.towardZero) } : x.values)
    case 2:
      let table = try options(10)
      let parts = try (0..<inputs.count).map { try input($0) }
      let rank = parts[0].shape.count
      var axis = Int(try table?.i32(0, "ConcatenationOptions.axis") ?? 0)
      if axis < 0 { axis += rank }
      try concatenate(parts, axis: axis)
    case 83:
      let table = try options(59)
      let parts = try (0..<inputs.count).map { try input($0) }
      let rank = parts[0].shape.count + 1
      var axis = Int(try table?.i32(1, "PackOptions.axis") ?? 0)
      if axis < 0 { axis += rank }
      guard axis >= 0, axis < rank, parts.allSatisfy({ $0.shape == parts[0].shape }) else {
        throw fail("packing \(parts.map(\.shape)) along axis \(axis)")
      }
      var shape = parts[0].shape
      shape.insert(1, at: axis)
      try concatenate(parts.map { Constant(shape: shape, values: $0.values) }, axis: axis)
    case 96:
      let (start, limit, delta) = (
        try input(0).values.first ?? 0, try input(1).values.first ?? 0, try input(2).values.first ?? 0
      )
      guard delta != 0, delta.isFinite, start.isFinite, limit.isFinite else { throw fail("range with delta \(delta)") }
      let steps = ((limit - start) / delta).rounded(.up)
      guard steps.isFinite, steps <= Float(Self.maximumFoldedElements) else { throw fail("a range of \(steps) values") }
      let count = max(Int(steps), 0)
      define(0, shape: [count], (0..<count).map { start + Float($0) * delta })
    case 36:
      let (params, indices) = (try input(0), try input(1))
      let table = try options(23)
      var axis = Int(try table?.i32(0, "GatherOptions.axis") ?? 0)
      if axis < 0 { axis += params.shape.count }
      guard axis >= 0, axis < params.shape.count else { throw fail("gather along axis \(axis) of \(params.shape)") }
      let size = params.shape[axis]
      let outer = params.shape[..<axis].reduce(1, *)
      let inner = params.shape[(axis + 1)...].reduce(1, *)
      let (product, overflow) = (outer * inner).multipliedReportingOverflow(by: indices.values.count)
      guard !overflow, product <= Self.maximumFoldedElements else { throw fail("a gathered constant too large") }
      var values: [Float] = []
      for o in 0..<outer {
        for i in indices.values {
          let raw = try integer(i)
          let index = raw < 0 ? raw + size : raw
          guard index >= 0, index < size else { throw fail("index \(raw) outside an axis of \(size)") }
          values += params.values[((o * size + index) * inner)..<((o * size + index + 1) * inner)]
        }
      }
      define(0, shape: Array(params.shape[..<axis]) + indices.shape + Array(params.shape[(axis + 1)...]), values)
    case 81:
      let x = try input(0)
      let axes = Set(try input(1).values.map { try integer($0) }.map { $0 < 0 ? $0 + x.shape.count : $0 })
      guard axes.allSatisfy({ $0 >= 0 && $0 < x.shape.count }) else { throw fail("axes \(axes) of \(x.shape)") }
      let keep = try options(27)?.bool(0, "ReducerOptions.keep_dims") ?? false
      var outShape: [Int] = []
      for (axis, size) in x.shape.enumerated() {
        if !axes.contains(axis) { outShape.append(size) } else if keep { outShape.append(1) }
      }
      var result = [Float](repeating: 1, count: outShape.reduce(1, *))
      let strides = x.shape.indices.map { x.shape[($0 + 1)...].reduce(1, *) }
      for (flat, value) in x.values.enumerated() {
        var target = 0
        for (axis, size) in x.shape.enumerated() where !axes.contains(axis) {
          target = target * size + (flat / strides[axis]) % size
        }
        result[target] *= value
      }
      define(0, shape: outShape, result)
    case 45:
      let x = try input(0)
      let (begin, end, strides) = (try input(1).values, try input(2).values, try input(3).values)
      let table = try options(32)
      let beginMask = Int(try table?.i32(0, "StridedSliceOptions.begin_mask") ?? 0)
      let endMask = Int(try table?.i32(1, "StridedSliceOptions.end_mask") ?? 0)
      let shrink = Int(try table?.i32(4, "StridedSliceOptions.shrink_axis_mask") ?? 0)
      guard x.shape.count == 1, begin.count == 1, end.count == 1, strides == [1],
        try table?.i32(2, "StridedSliceOptions.ellipsis_mask") ?? 0 == 0,
        try table?.i32(3, "StridedSliceOptions.new_axis_mask") ?? 0 == 0
      else { return false }
      let size = x.shape[0]
      func clamp(_ i: Int) -> Int { min(max(i < 0 ? i + size : i, 0), size) }
      let from = beginMask & 1 != 0 ? 0 : clamp(try integer(begin[0]))
      let to = shrink & 1 != 0 ? min(from + 1, size) : endMask & 1 != 0 ? size : clamp(try integer(end[0]))
      let values = from < to ? Array(x.values[from..<to]) : []
      define(0, shape: shrink & 1 != 0 ? [] : [values.count], values)
    case 102:
      let x = try input(0)
      var sizes = try input(1).values.map { try integer($0) }
      guard x.shape.count == 1, sizes.count == op.outputs.count else {
        throw fail("a split of a constant of shape \(x.shape) into \(sizes)")
      }
      let known = sizes.filter { $0 >= 0 }.reduce(0, +)
      if let open = sizes.firstIndex(of: -1) { sizes[open] = x.shape[0] - known }
      guard sizes.allSatisfy({ $0 >= 0 }), sizes.reduce(0, +) == x.shape[0] else {
        throw fail("size_splits \(sizes) of \(x.shape[0]) values")
      }
      var start = 0
      for (position, size) in sizes.enumerated() {
        define(position, shape: [size], Array(x.values[start..<(start + size)]))
        start += size
      }
    default:
      return false
    }
    return true
  }

  /// A constant's value as an index or size: an integer within ±2^24 (exact in float32), else an error.
  func integer(_ value: Float) throws -> Int {
    guard value.isFinite, value == value.rounded(), abs(value) < Float(1 << 24) else {
      throw fail("\(value) where an integer index or size is needed")
    }
    return Int(value)
  }

  /// Output `position` becomes a constant.
  mutating func define(_ position: Int, shape: [Int], _ values: [Float]) {
    folded[op.outputs[position]] = values
    foldedShapes[op.outputs[position]] = shape
  }

  /// The shape RESHAPE (its target input or options), SQUEEZE (its axes) or EXPAND_DIMS (its axis) gives
  /// `shape`, with one -1 resolved.
  func reshapedShape(of shape: [Int], code: Int) throws -> [Int] {
    let count = shape.reduce(1, *)
    switch code {
    case 43:
      let axes = try options(30)?.int32s(0, "SqueezeOptions.squeeze_dims").map { $0.map(Int.init) } ?? []
      let resolved = Set(axes.map { $0 < 0 ? $0 + shape.count : $0 })
      return shape.enumerated().filter { resolved.isEmpty ? $0.element != 1 : !resolved.contains($0.offset) }.map(
        \.element)
    case 70:
      guard let raw = try ints(1).first else { throw fail("EXPAND_DIMS without an axis") }
      let axis = raw < 0 ? raw + shape.count + 1 : raw
      guard axis >= 0, axis <= shape.count else { throw fail("axis \(raw) for shape \(shape)") }
      var result = shape
      result.insert(1, at: axis)
      return result
    default:
      var target =
        op.inputs.count > 1 && op.inputs[1] >= 0
        ? try ints(1) : try options(17)?.int32s(0, "ReshapeOptions.new_shape").map { $0.map(Int.init) } ?? []
      if target.isEmpty, count == 1 { return [] }
      func product(_ sizes: [Int]) -> Int? {
        var result = 1
        for size in sizes {
          let (next, overflow) = result.multipliedReportingOverflow(by: size)
          if overflow { return nil }
          result = next
        }
        return result
      }
      guard let known = product(target.filter { $0 >= 0 }) else { throw fail("reshaping \(shape) to \(target)") }
      if let open = target.firstIndex(of: -1), known > 0, count % known == 0 { target[open] = count / known }
      guard target.allSatisfy({ $0 >= 0 }), product(target) == count else {
        throw fail("reshaping \(shape) to \(target)")
      }
      return target
    }
  }

  /// Numpy broadcasting of two constants.
  mutating func broadcast(_ a: Constant, _ b: Constant, _ function: (Float, Float) -> Float) throws {
    let rank = max(a.shape.count, b.shape.count)
    let sa = [Int](repeating: 1, count: rank - a.shape.count) + a.shape
    let sb = [Int](repeating: 1, count: rank - b.shape.count) + b.shape
    var shape: [Int] = []
    for (x, y) in zip(sa, sb) {
      guard x == y || x == 1 || y == 1 else { throw fail("shapes \(a.shape) and \(b.shape) do not broadcast") }
      shape.append(max(x, y))
    }
    let count = shape.reduce(1, *)
    guard count <= Self.maximumFoldedElements else { throw fail("a constant of \(count) values") }
    func index(_ flat: Int, _ of: [Int]) -> Int {
      var result = 0
      var rest = flat
      var stride = 1
      for axis in (0..<rank).reversed() {
        let coordinate = rest % shape[axis]
        rest /= shape[axis]
        result += (of[axis] == 1 ? 0 : coordinate) * stride
        stride *= of[axis]
      }
      return result
    }
    define(0, shape: shape, (0..<count).map { function(a.values[index($0, sa)], b.values[index($0, sb)]) })
  }

  /// Constants joined along `axis`.
  mutating func concatenate(_ parts: [Constant], axis: Int) throws {
    let shape = parts[0].shape
    guard axis >= 0, axis < shape.count,
      parts.allSatisfy({
        $0.shape.count == shape.count
          && zip($0.shape, shape).enumerated().allSatisfy { $0.offset == axis || $0.element.0 == $0.element.1 }
      })
    else { throw fail("joining \(parts.map(\.shape)) along axis \(axis)") }
    let outer = shape[..<axis].reduce(1, *)
    var values: [Float] = []
    for o in 0..<outer {
      for part in parts {
        let block = part.shape[axis...].reduce(1, *)
        values += part.values[(o * block)..<((o + 1) * block)]
      }
    }
    var result = shape
    result[axis] = parts.map { $0.shape[axis] }.reduce(0, +)
    define(0, shape: result, values)
  }
}
