// libFuzzer harness: .mlmodel bytes → protobuf-c reader → IR importer → specification rules.
import CoreMLFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  guard
    let spec = try? CoreMLSpecReader.read(Array(UnsafeBufferPointer(start: data, count: size)), path: "fuzz.mlmodel")
  else { return 0 }
  _ = CoreMLSpecificationRules.violations(in: spec)
  _ = try? CoreMLGraphImporter.importModel(spec, path: "fuzz.mlmodel")
  // Sequence inputs need a length at import time; give every input a short one.
  let lengths = Dictionary(spec.inputs.map { ($0.name, 1 + size % 4) }, uniquingKeysWith: { a, _ in a })
  _ = try? CoreMLGraphImporter.importModel(spec, path: "fuzz.mlmodel", sequenceLengths: lengths)
  return 0
}
