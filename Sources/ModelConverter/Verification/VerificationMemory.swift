import Foundation
import ModelIR

/// What `ParityVerifier` holds in memory for one random sample, planned from the two graphs' shapes
/// before anything runs, and how many samples it runs at once within its limit.
///
/// The layer-by-layer comparison keeps every value of both runs until the sample is accumulated, so one
/// sample holds at most every value of the source graph and of the converted graph (twice the
/// converted one's when compressed weights are compared from the source's values), plus one tensor in
/// a changed layout. A model whose declared input makes that more than the limit is refused before it
/// runs (a hostile file can declare an input of 2^31 elements in a file of a few KB); samples run at
/// once are as many as fit.
public struct VerificationMemory: Sendable, Equatable, Codable {
  /// Bytes of tensors one sample holds at most.
  public var bytesPerSample: Int
  /// Random samples run at the same time (each on its own core).
  public var samplesAtOnce: Int
  /// The bytes of tensors verify may hold: `VerificationOptions.memoryLimit`, or `defaultLimit`.
  public var limit: Int

  /// Half of this machine's memory, and half of the address space the process may use when it is limited (`ulimit -v`).
  public static var defaultLimit: Int {
    var limit = Int(clamping: ProcessInfo.processInfo.physicalMemory / 2)
    var bound = rlimit()
    if getrlimit(Int32(RLIMIT_AS.rawValue), &bound) == 0, bound.rlim_cur != rlim_t.max {
      limit = min(limit, Int(clamping: bound.rlim_cur / 2))
    }
    return limit
  }

  /// The float32 bytes of every value of `graph` (saturating: the shapes are each within the graph limits, their sum may not be).
  static func tensorBytes(in graph: Graph) -> (total: Int, largest: Int) {
    var total = 0, largest = 0
    for value in graph.values {
      var elements = 1
      for axis in value.type.shape { elements = elements.multipliedReportingOverflow(by: max(axis, 1)).overflow ? Int.max : elements * max(axis, 1) }
      let bytes = elements.multipliedReportingOverflow(by: 4).overflow ? Int.max : elements * 4
      total = total.addingReportingOverflow(bytes).overflow ? Int.max : total + bytes
      largest = max(largest, bytes)
    }
    return (total, largest)
  }

  /// The plan for `samples` samples on at most `threads` cores; throws when one sample does not fit in `limit`.
  static func plan(source: Graph, converted: Graph, comparesLayersLocally: Bool, samples: Int, threads: Int, limit: Int) throws -> VerificationMemory {
    let (sourceBytes, sourceLargest) = tensorBytes(in: source)
    let (convertedBytes, convertedLargest) = tensorBytes(in: converted)
    var perSample = sourceBytes
    for part in [convertedBytes, comparesLayersLocally ? convertedBytes : 0, max(sourceLargest, convertedLargest)] {
      perSample = perSample.addingReportingOverflow(part).overflow ? Int.max : perSample + part
    }
    guard perSample <= limit else { throw VerificationError.exceedsMemory(bytesPerSample: perSample, limit: limit) }
    let fitting = perSample == 0 ? threads : limit / perSample
    return VerificationMemory(bytesPerSample: perSample, samplesAtOnce: max(1, min(threads, samples, fitting)), limit: limit)
  }

  /// Bytes as the reports print them (KiB, MiB or GiB, one decimal).
  public static func describe(_ bytes: Int) -> String {
    let units: [(String, Double)] = [("GiB", 1_073_741_824), ("MiB", 1_048_576), ("KiB", 1024)]
    for (unit, size) in units where Double(bytes) >= size { return String(format: "%.1f %@", Double(bytes) / size, unit) }
    return "\(bytes) bytes"
  }
}
