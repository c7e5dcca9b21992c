import Foundation

/// The built `modelconv`, run as a user runs it.
public enum Modelconv {
  /// The executable beside the test bundle (or in `.build/debug`).
  public static let executable: URL = {
    let candidates = [
      URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent().appendingPathComponent("modelconv"),
      Bundle.main.bundleURL.appendingPathComponent("modelconv"),
      Fixtures.packageRoot.appendingPathComponent(".build/debug/modelconv"),
    ]
    return candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[2]
  }()

  public struct Result {
    public var status: Int32
    /// Whether the process ended by a signal (a crash) rather than an exit.
    public var signaled: Bool
    public var stdout: String
    public var stderr: String
  }

  /// Runs `modelconv` with `arguments`; `readTimeout` bounds the isolated reader (seconds).
  public static func run(_ arguments: [String], readTimeout: String? = nil) throws -> Result {
    let process = Process()
    process.executableURL = executable
    process.arguments = arguments
    if let readTimeout {
      var environment = ProcessInfo.processInfo.environment
      environment["MODELCONV_READ_TIMEOUT"] = readTimeout
      process.environment = environment
    }
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    try process.run()
    // Both pipes drained at once, so a large output on one cannot block the other.
    var stdout = Data(), stderr = Data()
    let group = DispatchGroup()
    DispatchQueue.global().async(group: group) { stdout = out.fileHandleForReading.readDataToEndOfFile() }
    stderr = err.fileHandleForReading.readDataToEndOfFile()
    group.wait()
    process.waitUntilExit()
    return Result(
      status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
      stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
  }
}
