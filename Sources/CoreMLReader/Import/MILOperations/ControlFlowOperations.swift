import CoreMLCommon
import ModelIR

extension MILOperationRegistry {
  /// `while_loop` whose condition is known at every iteration (coremltools' rolled TensorFlow LSTM: a counter
  /// compared with a constant), unrolled, and the tensor lists such loops read and write
  /// (`MILProgramImporter+ControlFlow.swift`).
  static let controlFlowOperations: [String: MILOperationEntry] =
    ["while_loop": MILOperationEntry(takesBlocks: true) { try $0.whileLoop() }]
    .merging(all(["make_list"]) { try $0.makeList() }) { $1 }
    .merging(all(["list_scatter"]) { try $0.listScatter() }) { $1 }
    .merging(all(["list_read"]) { try $0.listRead() }) { $1 }
    .merging(all(["list_write"]) { try $0.listWrite() }) { $1 }
    .merging(all(["list_gather"]) { try $0.listGather() }) { $1 }
    .merging(all(["list_length"]) { try $0.listLength() }) { $1 }
}
