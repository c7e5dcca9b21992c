import Dispatch

/// k-means palettization of one tensor: a table of 2^bits values and each element's index into it.
///
/// One-dimensional k-means on a histogram: the values are binned (`histogramBins` equal bins between the
/// minimum and maximum, each keeping its count and the sum of its values), k-means++ picks the first
/// centres from the bins (seeded, so the same weights give the same table), and Lloyd's iterations
/// move each centre to the mean of the values nearest it. With sorted centres the nearest centre's
/// region is an interval, so one sweep of the bins assigns them all. Each element then gets the index
/// of its nearest centre, in parallel over blocks of elements.
public enum Palettizer {
  public static let histogramBins = 1 << 16
  /// Lloyd iterations at most (each O(k log bins)); they stop earlier when no centre moves.
  public static let maximumIterations = 10_000

  public struct Result: Sendable, Equatable {
    /// 2^bits entries, ascending (unused entries repeat the largest).
    public var table: [Float]
    /// One index per element, in the tensor's order.
    public var indices: [UInt8]
  }

  /// `float16`: the table is stored as float16, so its entries are rounded before the elements are assigned.
  public static func palettize(_ values: [Float], bits: Int, seed: UInt64, float16: Bool = false) -> Result {
    precondition((1...8).contains(bits) && !values.isEmpty)
    let k = 1 << bits
    // Range and histogram (counts and sums per bin) in at most 8 parts run on the cores (each part's
    // histogram is 2^16 x 16 bytes), merged in part order: the parts depend on the tensor alone, so the
    // table is the same on any machine. Values are finite: the readers and importers check them.
    let blocks = max(1, min(8, values.count >> 16))
    let block = (values.count + blocks - 1) / blocks
    var lows = [Float](repeating: .infinity, count: blocks)
    var highs = [Float](repeating: -.infinity, count: blocks)
    values.withUnsafeBufferPointer { input in
      lows.withUnsafeMutableBufferPointer { lowOut in
        highs.withUnsafeMutableBufferPointer { highOut in
          let (l, h) = (lowOut.baseAddress!, highOut.baseAddress!)
          DispatchQueue.concurrentPerform(iterations: blocks) { b in
            var lo = Float.infinity
            var hi = -Float.infinity
            for i in (b * block)..<min(values.count, (b + 1) * block) {
              lo = min(lo, input[i])
              hi = max(hi, input[i])
            }
            (l[b], h[b]) = (lo, hi)
          }
        }
      }
    }
    let low = lows.min()!
    let high = highs.max()!
    let bins = high > low ? histogramBins : 1
    let width = bins > 1 ? (Double(high) - Double(low)) / Double(bins) : 1
    var partial = [[Double]](repeating: [], count: blocks)
    values.withUnsafeBufferPointer { input in
      partial.withUnsafeMutableBufferPointer { out in
        let base = out.baseAddress!
        DispatchQueue.concurrentPerform(iterations: blocks) { b in
          var local = [Double](repeating: 0, count: 2 * bins)
          for i in (b * block)..<min(values.count, (b + 1) * block) {
            let v = input[i]
            let bin = bins > 1 ? min(bins - 1, Int((Double(v) - Double(low)) / width)) : 0
            local[2 * bin] += 1
            local[2 * bin + 1] += Double(v)
          }
          base[b] = local
        }
      }
    }
    var counts = [Double](repeating: 0, count: bins)
    var sums = [Double](repeating: 0, count: bins)
    for local in partial {
      for bin in 0..<bins where local[2 * bin] > 0 {
        counts[bin] += local[2 * bin]
        sums[bin] += local[2 * bin + 1]
      }
    }
    let occupied = (0..<bins).filter { counts[$0] > 0 }
    let points = occupied.map { sums[$0] / counts[$0] }
    let weights = occupied.map { counts[$0] }
    var centres = initialCentres(points: points, weights: weights, k: k, seed: seed)
    centres = lloyd(points: points, weights: weights, centres: centres)
    var table = centres.map { float16 ? Float(Float16(Float($0))) : Float($0) }
    while table.count < k { table.append(table.last ?? 0) }
    let indices = assign(values, to: table)
    return Result(table: table, indices: indices)
  }

  /// k-means++ on weighted points: the first centre drawn by weight, each next one by weight times the
  /// squared distance to the nearest centre so far. Fewer distinct points than `k` give them all.
  static func initialCentres(points: [Double], weights: [Double], k: Int, seed: UInt64) -> [Double] {
    if points.count <= k { return points }
    var random = SplitMix(seed: seed)
    var nearest = [Double](repeating: .infinity, count: points.count)
    var centres: [Double] = []
    func draw(_ mass: [Double]) -> Int {
      let total = mass.reduce(0, +)
      guard total > 0 else { return 0 }
      var target = random.nextUnit() * total
      for (i, m) in mass.enumerated() {
        target -= m
        if target < 0 { return i }
      }
      return mass.count - 1
    }
    var chosen = draw(weights)
    while centres.count < k {
      centres.append(points[chosen])
      for i in points.indices {
        let d = points[i] - points[chosen]
        nearest[i] = min(nearest[i], d * d)
      }
      if centres.count == k { break }
      let mass = zip(weights, nearest).map { $0 * $1 }
      if mass.reduce(0, +) == 0 { break }  // every point is a centre already
      chosen = draw(mass)
    }
    return centres.sorted()
  }

  /// Lloyd's iterations on sorted points (the histogram's bin means, ascending) with weights, until no
  /// centre moves. With sorted centres, centre c's points are those between the midpoints to its
  /// neighbours: found by binary search, their mass and moment from prefix sums, so an iteration costs
  /// O(k log points) and running to the fixed point is cheap.
  static func lloyd(points: [Double], weights: [Double], centres start: [Double]) -> [Double] {
    var prefixMass = [0.0]
    var prefixMoment = [0.0]
    prefixMass.reserveCapacity(points.count + 1)
    prefixMoment.reserveCapacity(points.count + 1)
    for (p, w) in zip(points, weights) {
      prefixMass.append(prefixMass.last! + w)
      prefixMoment.append(prefixMoment.last! + w * p)
    }
    /// The number of points at or below `x`.
    func count(atOrBelow x: Double) -> Int {
      var lo = 0
      var hi = points.count
      while lo < hi {
        let mid = (lo + hi) / 2
        if points[mid] <= x { lo = mid + 1 } else { hi = mid }
      }
      return lo
    }
    var centres = start.sorted()
    for _ in 0..<maximumIterations {
      var next = centres
      var begin = 0
      for c in centres.indices {
        let end = c + 1 < centres.count ? count(atOrBelow: (centres[c] + centres[c + 1]) / 2) : points.count
        let mass = prefixMass[end] - prefixMass[begin]
        if mass > 0 { next[c] = (prefixMoment[end] - prefixMoment[begin]) / mass }
        begin = max(begin, end)
      }
      next.sort()
      if next == centres { break }
      centres = next
    }
    return centres
  }

  /// Each value's nearest table entry (ties to the lower), in parallel over blocks: the number of
  /// midpoints between neighbouring entries that lie below the value, counted without branches.
  static func assign(_ values: [Float], to table: [Float]) -> [UInt8] {
    let boundaries = zip(table, table.dropFirst()).map { ($0 + $1) / 2 }
    var indices = [UInt8](repeating: 0, count: values.count)
    let block = 1 << 16
    let blocks = (values.count + block - 1) / block
    indices.withUnsafeMutableBufferPointer { out in
      let base = out.baseAddress!
      values.withUnsafeBufferPointer { input in
        boundaries.withUnsafeBufferPointer { bounds in
          let count = bounds.count
          DispatchQueue.concurrentPerform(iterations: blocks) { b in
            let range = (b * block)..<min(input.count, (b + 1) * block)
            if count <= 64 {
              // One pass over the block per midpoint, over elements (vectorised).
              for j in 0..<count {
                let bound = bounds[j]
                for i in range { base[i] &+= input[i] > bound ? 1 : 0 }
              }
            } else {
              for i in range {
                let v = input[i]
                var lo = 0
                var hi = count
                while lo < hi {
                  let mid = (lo + hi) >> 1
                  if v > bounds[mid] { lo = mid + 1 } else { hi = mid }
                }
                base[i] = UInt8(truncatingIfNeeded: lo)
              }
            }
          }
        }
      }
    }
    return indices
  }

  /// Codes packed into a bit stream. Least significant first, as MIL reads them (`constexpr_lut_to_dense`
  /// indices, sub-byte blobs): element i's bit j is bit (i * bits + j) of the stream, counted from each
  /// byte's least significant bit. Most significant first, as a classic `WeightParams.rawValue` holds
  /// them: element i's bits from its highest down, the stream counted from each byte's highest bit.
  public static func pack(_ indices: [UInt8], bits: Int, mostSignificantFirst: Bool = false) -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: (indices.count * bits + 7) / 8)
    if bits == 8 { return indices }
    if mostSignificantFirst {
      for (i, code) in indices.enumerated() {
        for j in 0..<bits where (code >> (bits - 1 - j)) & 1 == 1 {
          let position = i * bits + j
          bytes[position / 8] |= 0x80 >> (position % 8)
        }
      }
      return bytes
    }
    if 8 % bits == 0 {
      // Whole codes per byte (1, 2 or 4 bits): byte k holds codes k * perByte ..< (k + 1) * perByte.
      let perByte = 8 / bits
      indices.withUnsafeBufferPointer { input in
        bytes.withUnsafeMutableBufferPointer { out in
          let base = out.baseAddress!
          let chunk = 1 << 16
          let chunks = (out.count + chunk - 1) / chunk
          DispatchQueue.concurrentPerform(iterations: chunks) { c in
            for k in (c * chunk)..<min(out.count, (c + 1) * chunk) {
              var byte: UInt8 = 0
              for j in 0..<perByte where k * perByte + j < input.count {
                byte |= input[k * perByte + j] << (j * bits)
              }
              base[k] = byte
            }
          }
        }
      }
      return bytes
    }
    for (i, code) in indices.enumerated() {
      for j in 0..<bits where (code >> j) & 1 == 1 {
        let position = i * bits + j
        bytes[position / 8] |= 1 << (position % 8)
      }
    }
    return bytes
  }
}

/// SplitMix64: a small seeded generator (the same sequence on every machine).
struct SplitMix {
  var state: UInt64
  init(seed: UInt64) { state = seed }
  mutating func next() -> UInt64 {
    state &+= 0x9E37_79B9_7F4A_7C15
    var z = state
    z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
    z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
    return z ^ (z >> 31)
  }
  /// Uniform in [0, 1).
  mutating func nextUnit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}
