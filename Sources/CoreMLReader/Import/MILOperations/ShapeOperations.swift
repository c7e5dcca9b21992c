import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Operations that move, join, cut, pad or resize tensors.
  static let shapeOperations: [String: MILOperationEntry] = [
    "transpose": MILOperationEntry { try $0.define(try $0.transpose()) },
    "reshape": MILOperationEntry { try $0.define(try $0.reshapeOperation()) },
    "squeeze": MILOperationEntry { try $0.squeeze() },
    "expand_dims": MILOperationEntry { try $0.expandDims() },
    "stack": MILOperationEntry { try $0.stack() },
    "concat": MILOperationEntry { try $0.concat() },
    "pad": MILOperationEntry { try $0.define(try $0.pad()) },
    "slice_by_index": MILOperationEntry { try $0.define(try $0.sliceByIndex()) },
    "split": MILOperationEntry { try $0.split() },
    "gather": MILOperationEntry { try $0.define(try $0.gather()) },
    "tile": MILOperationEntry { try $0.define(try $0.tile()) },
    "upsample_nearest_neighbor": MILOperationEntry { try $0.define(try $0.upsample()) },
    "upsample_bilinear": MILOperationEntry { try $0.define(try $0.upsample()) },
    "resize_nearest_neighbor": MILOperationEntry { try $0.define(try $0.resizeNearestNeighbor()) },
    "resize_bilinear": MILOperationEntry { try $0.define(try $0.resizeBilinear()) },
  ]
}

extension MILProgramImporter {
  /// `squeeze`: drops the given size-1 axes (every size-1 axis when none are given).
  mutating func squeeze() throws {
    let x = try tensor("x")
    let s = shape(x)
    let axes =
      try ints("axes").map { try Set($0.map { try axis($0, rank: s.count) }) } ?? Set(s.indices.filter { s[$0] == 1 })
    guard axes.allSatisfy({ s[$0] == 1 }) else {
      throw invalid("squeezes axes \(axes.sorted()) of \(s), which are not all 1")
    }
    var target = s.indices.filter { !axes.contains($0) }.map { s[$0] }
    if target.isEmpty { target = [1] }
    try define(try reshape(x, to: target))
  }

  /// `expand_dims`: size-1 axes inserted at `axes` of the result.
  mutating func expandDims() throws {
    let x = try tensor("x")
    let s = shape(x)
    guard let given = try ints("axes"), !given.isEmpty else { throw invalid("required parameter 'axes' is missing") }
    let rank = s.count + given.count
    let axes = try Set(given.map { try axis($0, rank: rank) })
    guard axes.count == given.count else { throw invalid("axes \(given) repeat an axis") }
    var source = s.makeIterator()
    try define(try reshape(x, to: (0..<rank).map { axes.contains($0) ? 1 : source.next()! }))
  }

  /// `stack`: each value gains a size-1 axis at `axis`; then they are concatenated along it.
  mutating func stack() throws {
    guard let arguments = operation.inputs["values"], !arguments.isEmpty else {
      throw invalid("required parameter 'values' is missing")
    }
    let operands = try arguments.map { try tensor($0, key: "values") }
    let s = shape(operands[0])
    guard operands.allSatisfy({ shape($0) == s }) else {
      throw invalid("values of different shapes \(operands.map(shape))")
    }
    let axis = try axis(try int("axis", 0), rank: s.count + 1)
    var expanded = s
    expanded.insert(1, at: axis)
    let pieces = try operands.map { try reshape($0, to: expanded) }
    try define(pieces.count == 1 ? pieces[0] : try add(.concatenate(axis: axis), pieces))
  }

  /// `concat` along `axis` (not interleaved).
  mutating func concat() throws {
    guard let arguments = operation.inputs["values"], !arguments.isEmpty else {
      throw invalid("required parameter 'values' is missing")
    }
    guard try !bool("interleave", false) else { throw unsupported("interleave=True is not supported") }
    let operands = try arguments.map { try tensor($0, key: "values") }
    let rank = shape(operands[0]).count
    let axis = try axis(try int("axis", 0), rank: rank)
    try define(operands.count == 1 ? operands[0] : try add(.concatenate(axis: axis), operands))
  }
}
