import ModelIR

extension MILEmitter {
  mutating func emitRecurrent(_ node: Node, _ recurrent: Recurrent) throws {
    throw CoreMLWriterError.unsupportedOperation(layer: node.origin?.name ?? node.name, detail: "recurrent layers are not written as ML Programs yet")
  }
}
