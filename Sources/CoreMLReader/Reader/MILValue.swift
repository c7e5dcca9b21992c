import CoreMLCommon

/// A decoded constant MIL value with its declared type.
///
/// Floats (fp32, fp16 widened, fp64 narrowed) are in `floats`; integer and bool types in `integers`
/// (sub-byte types unpacked, least significant bits first); strings in `strings`.
public struct MILValue: Sendable, Equatable {
  public var type: MILTensorType
  public var floats: [Float] = []
  public var integers: [Int64] = []
  public var strings: [String] = []

  public init(type: MILTensorType, floats: [Float] = [], integers: [Int64] = [], strings: [String] = []) {
    self.type = type
    self.floats = floats
    self.integers = integers
    self.strings = strings
  }

  /// The number of elements: floats, integers or strings, whichever the type holds.
  public var count: Int {
    if type.dataType == .string { return strings.count }
    return type.dataType.isFloat ? floats.count : integers.count
  }

  /// Every element as a Float (integers converted).
  public var asFloats: [Float] { type.dataType.isFloat ? floats : integers.map { Float($0) } }

  /// Every element as an Int (floats truncated only when integral; nil otherwise).
  public var asInts: [Int]? {
    if type.dataType.isFloat {
      var result: [Int] = []
      for value in floats {
        guard value.isFinite, value == value.rounded(), abs(value) < 1e15 else { return nil }
        result.append(Int(value))
      }
      return result
    }
    return integers.map { Int(truncatingIfNeeded: $0) }
  }
}
