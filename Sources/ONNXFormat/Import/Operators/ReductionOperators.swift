import ModelIR

extension ONNXOperatorRegistry {
  /// `ReduceMean`, `ReduceSum`, `ReduceMax`, `ReduceMin`: axes as an attribute, or (`ReduceSum` from 13,
  /// the others from 18) as an input.
  static let reductionOperators: [String: [ONNXOperatorEntry]] =
    entries(["ReduceMean": [1, 11, 13, 18]]) { try $0.reduce(.mean, axesInputSince: 18) }
    .merging(entries(["ReduceSum": [1, 11, 13]]) { try $0.reduce(.sum, axesInputSince: 13) }) { $0 + $1 }
    .merging(entries(["ReduceMax": [1, 11, 12, 13, 18, 20]]) { try $0.reduce(.max, axesInputSince: 18) }) { $0 + $1 }
    .merging(entries(["ReduceMin": [1, 11, 12, 13, 18, 20]]) { try $0.reduce(.min, axesInputSince: 18) }) { $0 + $1 }
    .merging(
      entries(["ReduceL2": [1, 11, 13, 18]]) { try $0.reduce(.sum, axesInputSince: 18, squared: true, root: true) }
    ) { $0 + $1 }
    .merging(entries(["ReduceSumSquare": [1, 11, 13, 18]]) { try $0.reduce(.sum, axesInputSince: 18, squared: true) }) {
      $0 + $1
    }
}

extension ONNXNodeContext {
  /// A reduction over `axes`; `squared` sums squares (ReduceSumSquare), `root` takes the square root of
  /// that (ReduceL2).
  mutating func reduce(_ kind: ReductionKind, axesInputSince: Int, squared: Bool = false, root: Bool = false) throws {
    let shape = try self.shape(0)
    let keepDims = try int("keepdims", 1) == 1
    var raw: [Int]?
    if opset >= axesInputSince {
      if hasInput(1) { raw = try requiredInts(1, "axes") }
    } else {
      raw = try ints("axes")
    }
    if raw?.isEmpty ?? true, try int("noop_with_empty_axes", 0) == 1 {
      define(try add(.reshape(targetShape: shape), [try tensor(0)]))
      return
    }
    let axes = try (raw?.isEmpty ?? true ? Array(shape.indices) : raw!).map { try axis($0, rank: shape.count, "axes") }
    guard Set(axes).count == axes.count else { throw invalid("axes \(axes) repeat an axis") }
    var x = try tensor(0)
    if squared { x = try add(.elementwise(.multiply), [x, x], suffix: "__squares") }
    let reduced = try add(
      .reduce(Reduction(kind: kind, axes: axes.sorted(), keepDims: keepDims)), [x], suffix: root ? "__sum" : "")
    define(root ? try add(.activation(.unary(UnaryFunction(kind: .sqrt))), [reduced]) : reduced)
  }
}
