// libFuzzer harness: text → class labels, as `--labels a,b,c` and as a labels file.
// Compiled together with Sources/ModelConverter/Labels/ClassLabels+Parsing.swift and API/ConversionError.swift.
import CoreMLFormat
import Foundation

let path = NSTemporaryDirectory() + "/fuzz-labels-\(getpid()).txt"

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
  _ = try? ClassLabels.parse(text.split(separator: ",", omittingEmptySubsequences: false).map(String.init))
  _ = try? ClassLabels.parse(text.split(whereSeparator: \.isNewline).map(String.init))
  FileManager.default.createFile(atPath: path, contents: Data(bytes: data, count: size))
  _ = try? ClassLabels.load(fromFile: path)
  return 0
}
