import Foundation
import ModelFormats

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
    var environment = ProcessInfo.processInfo.environment
    if let readTimeout { environment["MODELCONV_READ_TIMEOUT"] = readTimeout }
    // Output goes to files, read once the process has exited; posix_spawn, not Foundation's Process, whose
    // Pipe reads and waits crashed under parallel tests.
    let directory = FileManager.default.temporaryDirectory.appendingPathComponent("modelconv-run-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: directory) }
    let outURL = directory.appendingPathComponent("stdout")
    let errURL = directory.appendingPathComponent("stderr")
    let status = try ChildProcess.run(
      executable.path, arguments: [executable.path] + arguments, environment: environment, stdout: outURL.path,
      stderr: errURL.path)
    let stdout = (try? Data(contentsOf: outURL)) ?? Data()
    let stderr = (try? Data(contentsOf: errURL)) ?? Data()
    var code: Int32 = -1
    var signaled = false
    switch status {
    case .exited(let value): code = value
    case .signaled(let signal): (code, signaled) = (signal, true)
    case .timedOut: code = -1
    }
    return Result(
      status: code, signaled: signaled,
      stdout: String(decoding: stdout, as: UTF8.self), stderr: String(decoding: stderr, as: UTF8.self))
  }
}
