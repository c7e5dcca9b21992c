import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Pooling and reductions over axes.
  static let reductionOperations: [String: MILOperationEntry] = {
    var table = all(["max_pool", "avg_pool"]) { try $0.define(try $0.pooling()) }
    let kinds: [String: ReductionKind] = [
      "reduce_mean": .mean, "reduce_max": .max, "reduce_min": .min, "reduce_sum": .sum,
    ]
    for (name, kind) in kinds { table[name] = MILOperationEntry { try $0.reduction(kind) } }
    return table
  }()
}

extension MILProgramImporter {
  /// `reduce_*` over `axes` (every axis when absent).
  mutating func reduction(_ kind: ReductionKind) throws {
    let x = try tensor("x")
    let rank = shape(x).count
    let axes = try ints("axes").map { try Set($0.map { try axis($0, rank: rank) }).sorted() } ?? Array(0..<rank)
    try define(try add(.reduce(Reduction(kind: kind, axes: axes, keepDims: try bool("keep_dims", false))), [x]))
  }
}
