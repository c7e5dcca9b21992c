// libFuzzer harness: architecture JSON → KerasModelFile → KerasGraphImporter, over a tiny weights stub.
import Foundation
import KerasFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  let snapshot = KerasModelSnapshot(
    path: "fuzz.h5", configText: text, configPath: "fuzz.json", kerasVersion: size % 2 == 0 ? "3.5.0" : "2.15.0",
    backend: nil,
    weightNames: ["dense": ["dense/kernel:0", "dense/bias:0"]],
    weights: [
      "dense": [
        "dense/kernel:0": .values(shape: [4, 2], values: [Float](repeating: 0.5, count: 8)),
        "dense/bias:0": .values(shape: [2], values: [0, 1]),
      ]
    ])
  if let model = try? KerasModelFile(snapshot: snapshot) {
    _ = try? KerasGraphImporter.importGraph(model)
    _ = try? KerasGraphImporter.importGraph(model, inputShapes: ["input_1": [1, 4, 4, 3]])
  }
  return 0
}
