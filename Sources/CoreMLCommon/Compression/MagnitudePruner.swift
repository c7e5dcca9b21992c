/// Magnitude pruning of one tensor: which elements stay (a bit each) and their values in order.
public enum MagnitudePruner {
  public struct Result: Sendable, Equatable {
    /// Bit i set when element i is kept, least significant bit first within each byte (the iOS 16
    /// `constexpr_sparse_to_dense` mask).
    public var mask: [UInt8]
    public var kept: [Float]
  }

  /// Zeroes `Int(fraction * count)` elements, the smallest in magnitude (ties: the earlier element
  /// first); elements that are zero already count among them.
  public static func prune(_ values: [Float], fraction: Double) -> Result {
    let zeroed = min(values.count, Int((fraction * Double(values.count)).rounded(.down)))
    var keep = [Bool](repeating: true, count: values.count)
    if zeroed > 0 {
      // The smallest `zeroed` magnitudes without sorting the tensor: a histogram of |w| finds the bin
      // holding the last one; only that bin's elements are sorted, by (magnitude, index).
      let largest = values.reduce(Float(0)) { max($0, abs($1)) }
      let bins = 1 << 16
      func bin(_ v: Float) -> Int {
        largest > 0 ? min(bins - 1, Int(Double(abs(v)) / Double(largest) * Double(bins))) : 0
      }
      var counts = [Int](repeating: 0, count: bins)
      for v in values { counts[bin(v)] += 1 }
      var below = 0
      var last = 0
      while below + counts[last] < zeroed {
        below += counts[last]
        last += 1
      }
      var boundary: [Int] = []
      for i in values.indices {
        let b = bin(values[i])
        if b < last { keep[i] = false } else if b == last { boundary.append(i) }
      }
      boundary.sort { (abs(values[$0]), $0) < (abs(values[$1]), $1) }
      for i in boundary.prefix(zeroed - below) { keep[i] = false }
    }
    var mask = [UInt8](repeating: 0, count: (values.count + 7) / 8)
    var kept: [Float] = []
    kept.reserveCapacity(values.count - zeroed)
    for i in values.indices where keep[i] && values[i] != 0 {
      mask[i / 8] |= 1 << (i % 8)
      kept.append(values[i])
    }
    return Result(mask: mask, kept: kept)
  }
}
