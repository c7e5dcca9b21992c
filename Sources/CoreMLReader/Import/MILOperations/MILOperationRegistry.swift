import CoreMLCommon
import ModelIR

/// How one MIL operation type is read into the IR: its handler, and the opset that introduced it.
///
/// The importer dispatches through `MILOperationRegistry.entries` only; the operations it reads (for
/// messages and documentation) are that table's keys, so the two cannot drift.
struct MILOperationEntry {
  /// Adds the IR nodes of the importer's current operation (`MILProgramImporter.operation`), or records
  /// its constant value.
  let handler: (inout MILProgramImporter) throws -> Void
  /// [rule MIL-OPSET] The first opset (CoreML5 = 5 ... CoreML8 = 8) that defines the operation in the
  /// form it is written in.
  let introduced: (MILOperation) -> Int
  /// Whether the handler runs the operation's nested blocks (control flow); blocks on any other
  /// operation are refused.
  var takesBlocks = false

  init(since opset: Int = 5, takesBlocks: Bool = false, _ handler: @escaping (inout MILProgramImporter) throws -> Void)
  {
    self.handler = handler
    self.introduced = { _ in opset }
    self.takesBlocks = takesBlocks
  }

  init(introduced: @escaping (MILOperation) -> Int, _ handler: @escaping (inout MILProgramImporter) throws -> Void) {
    self.handler = handler
    self.introduced = introduced
  }
}

/// Every MIL operation type the importer reads, one family per file in `MILOperations/`.
enum MILOperationRegistry {
  static let entries: [String: MILOperationEntry] = {
    var table: [String: MILOperationEntry] = [:]
    for family in [
      constantOperations, linearOperations, activationOperations, elementwiseOperations, reductionOperations,
      shapeOperations, recurrentOperations, controlFlowOperations,
    ] {
      table.merge(family) { _, _ in preconditionFailure("a MIL operation is registered by two families") }
    }
    return table
  }()

  /// The operation types read, sorted.
  static var supportedOperations: [String] { entries.keys.sorted() }

  /// The same handler for several operation types.
  static func all(
    _ names: [String], since opset: Int = 5, _ handler: @escaping (inout MILProgramImporter) throws -> Void
  ) -> [String: MILOperationEntry] {
    Dictionary(uniqueKeysWithValues: names.map { ($0, MILOperationEntry(since: opset, handler)) })
  }
}

extension MILProgramImporter {
  /// Adds the IR nodes of one MIL operation (or records its constant value).
  mutating func importOperation(_ op: MILOperation) throws {
    guard let entry = MILOperationRegistry.entries[op.type] else {
      throw unsupported("the operation type is not supported")
    }
    guard !op.hasBlocks || entry.takesBlocks else {
      throw unsupported("operations with nested blocks (control flow) are not supported")
    }
    let required = entry.introduced(op)
    if let version = program.opsetVersion, version < required {
      throw invalid("needs opset CoreML\(required) or later; the program's opset is \(program.opset)")
    }
    try entry.handler(&self)
  }
}
