// libFuzzer harness: the reader child's wire format, as the parent decodes it.
import KerasFormat

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ data: UnsafePointer<UInt8>, _ size: Int) -> Int32 {
  _ = try? KerasModelSnapshot.decodeForTesting(Array(UnsafeBufferPointer(start: data, count: size)))
  return 0
}
