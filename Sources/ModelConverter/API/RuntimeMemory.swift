import Foundation
import ModelIR

/// What running a graph in the reference runtime may hold, planned from its declared shapes before it
/// runs: a hostile file of a few KB can declare an input of 2^31 elements, whose every activation is
/// then 8 GiB. `verify` (`VerificationMemory`), `predict` and `evaluate` refuse a model that does not fit
/// and run no more samples or images at once than fit.
public enum RuntimeMemory {
  /// Half of this machine's memory, and half of the address space the process may use when it is limited (`ulimit -v`).
  public static var defaultLimit: Int {
    var limit = Int(clamping: ProcessInfo.processInfo.physicalMemory / 2)
    var bound = rlimit()
    if getrlimit(Int32(RLIMIT_AS.rawValue), &bound) == 0, bound.rlim_cur != rlim_t.max {
      limit = min(limit, Int(clamping: bound.rlim_cur / 2))
    }
    return limit
  }

  /// The float32 bytes of every value of `graph` (at most what one run holds, since the runtime keeps
  /// each value once), and of its largest; saturating: each shape is within the graph limits, their sum
  /// need not be.
  static func tensorBytes(in graph: Graph) -> (total: Int, largest: Int) {
    var total = 0
    var largest = 0
    for value in graph.values {
      var bytes = 4
      for axis in value.type.shape { bytes = saturating(bytes.multipliedReportingOverflow(by: max(axis, 1))) }
      total = saturating(total.addingReportingOverflow(bytes))
      largest = max(largest, bytes)
    }
    return (total, largest)
  }

  static func saturating(_ result: (partialValue: Int, overflow: Bool)) -> Int {
    result.overflow ? Int.max : result.partialValue
  }

  /// Bytes as the reports print them (KiB, MiB or GiB, one decimal).
  public static func describe(_ bytes: Int) -> String {
    let units: [(String, Double)] = [("GiB", 1_073_741_824), ("MiB", 1_048_576), ("KiB", 1024)]
    for (unit, size) in units where Double(bytes) >= size {
      return String(format: "%.1f %@", Double(bytes) / size, unit)
    }
    return "\(bytes) bytes"
  }
}
