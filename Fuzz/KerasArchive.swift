// libFuzzer harness: bytes → temporary .keras → libzip entry reading with limits → weights reader.
import Foundation
import KerasFormat

let path = NSTemporaryDirectory() + "/fuzz-keras-\(getpid()).keras"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  FileManager.default.createFile(atPath: path, contents: Data(bytes: data, count: size))
  if let snapshot = try? KerasArchive.read(path: path), let model = try? KerasModelFile(snapshot: snapshot) {
    _ = try? KerasGraphImporter.importGraph(model)
  }
  return 0
}
