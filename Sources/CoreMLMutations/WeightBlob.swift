import CProtobufC
import CoreMLSpec

/// Reads and rewrites the values of a `WeightParams` in place: float32 (`floatValue`) or float16
/// (`float16Value`, little-endian). Quantized weights (`rawValue`) and empty blobs are not handled.
struct WeightBlob {
  let params: UnsafeMutablePointer<CoreML__Specification__WeightParams>

  init?(_ params: UnsafeMutablePointer<CoreML__Specification__WeightParams>?) {
    guard let params else { return nil }
    let p = params.pointee
    guard (p.n_floatvalue > 0 && p.floatvalue != nil) || (p.float16value.len >= 2 && p.float16value.data != nil) else { return nil }
    self.params = params
  }

  var isHalf: Bool { params.pointee.n_floatvalue == 0 }

  var count: Int { isHalf ? params.pointee.float16value.len / 2 : params.pointee.n_floatvalue }

  var values: [Float] {
    get {
      let p = params.pointee
      if !isHalf { return Array(UnsafeBufferPointer(start: p.floatvalue, count: p.n_floatvalue)) }
      let bytes = UnsafeBufferPointer(start: p.float16value.data, count: count * 2)
      return (0..<count).map { Float(Float16(bitPattern: UInt16(bytes[2 * $0]) | UInt16(bytes[2 * $0 + 1]) << 8)) }
    }
    nonmutating set {
      let n = min(newValue.count, count)
      let p = params.pointee
      if !isHalf {
        for index in 0..<n { p.floatvalue[index] = newValue[index] }
        return
      }
      for index in 0..<n {
        let value = newValue[index].isNaN ? 0 : min(max(newValue[index], -65504), 65504)
        let bits = Float16(value).bitPattern
        p.float16value.data[2 * index] = UInt8(bits & 0xFF)
        p.float16value.data[2 * index + 1] = UInt8(bits >> 8)
      }
    }
  }
}

/// Array surgery on row-major blocks.
enum Blocks {
  /// Swaps the `size`-long blocks starting at `a` and `b`.
  static func swap(_ values: inout [Float], _ a: Int, _ b: Int, size: Int) {
    guard a != b else { return }
    for offset in 0..<size { values.swapAt(a + offset, b + offset) }
  }

  /// The product of the sizes, or nil when one is not positive or the product overflows.
  static func product(_ sizes: [Int]) -> Int? {
    var result = 1
    for size in sizes {
      guard size > 0 else { return nil }
      let (next, overflow) = result.multipliedReportingOverflow(by: size)
      guard !overflow else { return nil }
      result = next
    }
    return result
  }

  static func maxMagnitude(_ values: [Float]) -> Float { values.reduce(0) { max($0, $1.isFinite ? abs($1) : 0) } }
}
