import Foundation
import ReferenceRuntime

/// The version of this converter, recorded in every model it writes.
public enum ModelConverterVersion {
  public static let current = "0.1.0"

  /// The kernels the runtime (verify, predict, evaluate) uses on this machine: oneDNN's version and the
  /// instruction set it picked from the CPU's features (`avx512_core_amx`, `avx2`, ...). A CPU oneDNN
  /// cannot use vector units on shows `generic`, so a slow fallback is visible.
  public static var runtimeBackend: String { Interpreter.backendDescription }

  /// Lines for `modelconv --version --verbose`: the version, the runtime's kernels and the machine.
  public static var verboseDescription: [String] {
    var cpu = "unknown CPU"
    if let info = try? String(contentsOfFile: "/proc/cpuinfo", encoding: .utf8),
      let line = info.split(separator: "\n").first(where: { $0.hasPrefix("model name") || $0.hasPrefix("CPU part") }),
      let value = line.split(separator: ":", maxSplits: 1).last
    {
      cpu = value.trimmingCharacters(in: .whitespaces)
    }
    return [
      "modelconv \(current)", "runtime kernels: \(runtimeBackend)",
      "cpu: \(cpu), \(ProcessInfo.processInfo.activeProcessorCount) cores available",
    ]
  }
}
