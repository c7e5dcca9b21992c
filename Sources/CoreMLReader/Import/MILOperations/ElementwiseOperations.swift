import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// Broadcasting binary arithmetic, comparisons (bools held as 0 and 1) and select.
  static let elementwiseOperations: [String: MILOperationEntry] = {
    let kinds: [String: ElementwiseKind] = [
      "add": .add, "sub": .subtract, "mul": .multiply, "real_div": .divide, "maximum": .maximum, "minimum": .minimum,
      "pow": .power,
      "greater": .greaterThan, "greater_equal": .greaterEqual, "less": .lessThan, "less_equal": .lessEqual,
      "equal": .equal,
      "not_equal": .notEqual,
    ]
    var table = kinds.mapValues { kind in MILOperationEntry { try $0.binary(kind) } }
    table["select"] = MILOperationEntry { importer in
      let (condition, a, b) = (try importer.tensor("cond"), try importer.tensor("a"), try importer.tensor("b"))
      try importer.define(try importer.add(.elementwise(.select), [condition, a, b]))
    }
    return table
  }()
}

extension MILProgramImporter {
  /// `x <op> y` with NumPy broadcasting.
  mutating func binary(_ kind: ElementwiseKind) throws {
    let (x, y) = (try tensor("x"), try tensor("y"))
    guard Broadcasting.shape([shape(x), shape(y)]) != nil else {
      throw invalid("shapes \(shape(x)) and \(shape(y)) do not broadcast")
    }
    try define(try add(.elementwise(kind), [x, y]))
  }
}
