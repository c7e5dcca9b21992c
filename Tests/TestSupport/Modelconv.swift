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
    // Output goes to files, read once the process has exited: no pipe to drain while other tests spawn
    // processes (Foundation's Pipe reads on a second thread raced under parallel tests).
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelconv-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outURL = directory.appendingPathComponent("stdout"), errURL = directory.appendingPathComponent("stderr")
    _ = FileManager.default.createFile(atPath: outURL.path, contents: nil)
    _ = FileManager.default.createFile(atPath: errURL.path, contents: nil)
    let out = try FileHandle(forWritingTo: outURL), err = try FileHandle(forWritingTo: errURL)
    process.standardOutput = out
    process.standardError = err
    process.standardInput = FileHandle.nullDevice
    try process.run()
    process.waitUntilExit()
    try out.close()
    try err.close()
    let stdout = try Data(contentsOf: outURL), stderr = try Data(contentsOf: errURL)
    return Result(
      status: process.terminationStatus, signaled: process.terminationReason == .uncaughtSignal,
      stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
  }
}
