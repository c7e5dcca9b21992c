// libFuzzer harness: bytes → temporary .h5 → the in-process Keras reader (libhdf5 under ASan).
// Crashes inside libhdf5 found here are the ones `modelconv` contains with its reader child process.
import Foundation
import KerasFormat

let path = NSTemporaryDirectory() + "/fuzz-hdf5-\(getpid()).h5"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  FileManager.default.createFile(atPath: path, contents: Data(bytes: data, count: size))
  if let snapshot = try? KerasModelSnapshot.read(path: path), let model = try? KerasModelFile(snapshot: snapshot) {
    _ = try? KerasGraphImporter.importGraph(model)
  }
  return 0
}
