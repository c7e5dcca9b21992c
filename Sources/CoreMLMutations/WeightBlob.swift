import CProtobufC
import CoreMLSpec

/// Reads and rewrites the values of a `WeightParams` in place: float32 (`floatValue`), float16
/// (`float16Value`, little-endian), or 8-bit lookup-table codes (`rawValue`, one byte per element, as
/// NeuralNetwork.proto's `QuantizationParams` describes), whose values are table entries: a mutation that
/// moves values (a transpose, a flip, a channel swap) moves codes, and a new value takes the nearest
/// entry. Linear and sub-byte quantized weights and empty blobs are not handled.
struct WeightBlob {
  enum Storage {
    case float32, float16
    /// One code per element, indexing `table`.
    case lookUpTable8(table: [Float])
  }

  let params: UnsafeMutablePointer<CoreML__Specification__WeightParams>
  let storage: Storage

  init?(_ params: UnsafeMutablePointer<CoreML__Specification__WeightParams>?) {
    guard let params else { return nil }
    let p = params.pointee
    if p.n_floatvalue > 0 && p.floatvalue != nil {
      storage = .float32
    } else if p.float16value.len >= 2 && p.float16value.data != nil {
      storage = .float16
    } else if p.rawvalue.len > 0, p.rawvalue.data != nil, let q = p.quantization, q.pointee.numberofbits == 8,
      q.pointee.quantization_type_case
        == CORE_ML__SPECIFICATION__QUANTIZATION_PARAMS__QUANTIZATION_TYPE_LOOKUP_TABLE_QUANTIZATION,
      let lut = q.pointee.lookuptablequantization, lut.pointee.n_floatvalue == 256, lut.pointee.floatvalue != nil
    {
      storage = .lookUpTable8(table: Array(UnsafeBufferPointer(start: lut.pointee.floatvalue, count: 256)))
    } else {
      return nil
    }
    self.params = params
  }

  var count: Int {
    let p = params.pointee
    switch storage {
    case .float32: return p.n_floatvalue
    case .float16: return p.float16value.len / 2
    case .lookUpTable8: return p.rawvalue.len
    }
  }

  var values: [Float] {
    get {
      let p = params.pointee
      switch storage {
      case .float32:
        return Array(UnsafeBufferPointer(start: p.floatvalue, count: p.n_floatvalue))
      case .float16:
        let bytes = UnsafeBufferPointer(start: p.float16value.data, count: count * 2)
        return (0..<count).map { Float(Float16(bitPattern: UInt16(bytes[2 * $0]) | UInt16(bytes[2 * $0 + 1]) << 8)) }
      case .lookUpTable8(let table):
        return UnsafeBufferPointer(start: p.rawvalue.data, count: count).map { table[Int($0)] }
      }
    }
    nonmutating set {
      let n = min(newValue.count, count)
      let p = params.pointee
      switch storage {
      case .float32:
        for index in 0..<n { p.floatvalue[index] = newValue[index] }
      case .float16:
        for index in 0..<n {
          let value = newValue[index].isNaN ? 0 : min(max(newValue[index], -65504), 65504)
          let bits = Float16(value).bitPattern
          p.float16value.data[2 * index] = UInt8(bits & 0xFF)
          p.float16value.data[2 * index + 1] = UInt8(bits >> 8)
        }
      case .lookUpTable8(let table):
        for index in 0..<n {
          let value = newValue[index]
          let nearest = table.indices.min { abs(table[$0] - value) < abs(table[$1] - value) } ?? 0
          p.rawvalue.data[index] = UInt8(nearest)
        }
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
