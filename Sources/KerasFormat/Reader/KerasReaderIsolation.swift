import Foundation
import ModelFormats

#if canImport(Glibc)
  import Glibc
#endif

/// Reads Keras files in a child process, so that a corrupt file which crashes or hangs libhdf5
/// (both happen with libhdf5 1.10 on single flipped bits) costs a clean error, not the process.
///
/// The child is `executable` run as `executable __read-keras ...`; its `main` must call
/// `KerasReaderIsolation.childMain(_:)` for that first argument (`modelconv` does). The child limits
/// itself (RLIMIT_CPU, RLIMIT_AS, no core dumps) before touching the file, reads it with
/// `KerasModelSnapshot.read`, and writes the snapshot (or its `KerasReaderError`) in the wire format
/// to a file in a private temporary folder; the parent kills it after `timeout` seconds of wall time and
/// validates everything it reads back.
public struct KerasReaderIsolation: Sendable, Equatable {
  /// The hidden first argument that makes the executable a reader child.
  public static let childCommand = "__read-keras"

  public var executable: String
  /// Wall-clock seconds before the child is killed.
  public var timeout: Double
  /// CPU seconds the child may use (RLIMIT_CPU).
  public var cpuSeconds: Int
  /// The most address space the child may map beyond what it has mapped when it starts, in bytes
  /// (RLIMIT_AS); each read gets `memoryAllowance(fileBytes:)` within it.
  public var memoryBytes: UInt64

  /// Defaults: at most 120 s wall clock and 120 s CPU (each read gets 10 s plus 1 s per 10 MB of file
  /// within them), 8 GiB of address space (the weights alone may be 2 GiB), each read `memoryAllowance`.
  public init(executable: String, timeout: Double = 120, cpuSeconds: Int = 120, memoryBytes: UInt64 = 8 << 30) {
    self.executable = executable
    self.timeout = timeout
    self.cpuSeconds = cpuSeconds
    self.memoryBytes = memoryBytes
  }

  /// This process' own executable (`/proc/self/exe`), with limits from `MODELCONV_READ_TIMEOUT`
  /// (seconds, for tests and slow machines) when set.
  public static func selfExecutable() -> KerasReaderIsolation {
    var isolation = KerasReaderIsolation(executable: "/proc/self/exe")
    if let text = ProcessInfo.processInfo.environment["MODELCONV_READ_TIMEOUT"], let seconds = Double(text),
      seconds > 0, seconds < 86_400
    {
      isolation.timeout = seconds
      isolation.cpuSeconds = max(1, Int(seconds.rounded(.up)))
    }
    // /proc/self/exe must be resolved now: in the child it would name the child.
    if let resolved = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
      isolation.executable = resolved
    }
    return isolation
  }

  /// What to read.
  public enum Request: Sendable {
    case model(path: String)
    case weights(path: String, architecture: String)
    /// A verification reference file (`KerasModelSnapshot.readReference`).
    case reference(path: String)

    var path: String {
      switch self {
      case .model(let path), .weights(let path, _), .reference(let path): return path
      }
    }
  }

  /// Reads in a child process; every failure of the child becomes a `KerasReaderError`.
  public func read(_ request: Request) throws -> KerasModelSnapshot {
    // Refuse what cannot be a model before starting a process (also keeps FIFOs away from the child).
    switch request {
    case .model(let path): _ = try ModelFileFormat.check(path)
    case .weights(let path, let architecture):
      try InputFile.checkRegular(architecture)
      try InputFile.checkRegular(path)
    case .reference(let path): try InputFile.checkRegular(path)
    }
    // A healthy read takes well under a second per 100 MB; a corrupt file can make libhdf5 spin forever.
    // So the budget grows with the file: 10 s plus 1 s per 10 MB, within `timeout` and `cpuSeconds`.
    var limits = self
    let bytes = ((try? FileManager.default.attributesOfItem(atPath: request.path))?[.size] as? NSNumber)?.intValue ?? 0
    let budget = Self.baseSeconds + Double(bytes / 10_000_000)
    limits.timeout = min(timeout, budget)
    limits.cpuSeconds = min(cpuSeconds, Int(budget.rounded(.up)))
    limits.memoryBytes = min(memoryBytes, Self.memoryAllowance(fileBytes: bytes))
    return try limits.readWithinLimits(request)
  }

  /// The reading budget of an empty file, in seconds.
  public static let baseSeconds: Double = 10

  /// The address space a read of a file of `fileBytes` may add to the child: 256 MiB plus 16 times the
  /// file's size. A healthy read needs the config (at most 64 MiB, a few times over as parsed JSON), the
  /// attributes and the weights libhdf5 cannot locate in the file (compressed ones, at most their
  /// decompressed size); a corrupt file can declare anything, and libhdf5 allocates what a variable-length
  /// string's length field says before reading it (one flipped bit made a weight name 268 MB, two copies
  /// of it held at once). Beyond the allowance an allocation fails and the read fails cleanly, naming the
  /// file. A model whose compressed weights expand to more than the allowance cannot be read.
  public static func memoryAllowance(fileBytes: Int) -> UInt64 {
    let (scaled, overflow) = UInt64(max(0, fileBytes)).multipliedReportingOverflow(by: 16)
    return overflow ? UInt64.max : (256 << 20) + min(scaled, UInt64.max - (256 << 20))
  }

  /// The address space this process has mapped (`/proc/self/statm`'s first field), or nil.
  static func mappedBytes() -> UInt64? {
    guard let text = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8),
      let pages = text.split(separator: " ").first.flatMap({ UInt64($0) })
    else { return nil }
    return pages * UInt64(sysconf(Int32(_SC_PAGESIZE)))
  }

  func readWithinLimits(_ request: Request) throws -> KerasModelSnapshot {
    let directory = try KerasArchive.TemporaryDirectory()
    defer { directory.remove() }
    let output = directory.path + "/snapshot"
    var arguments = [
      executable, Self.childCommand, "--output", output, "--cpu", String(cpuSeconds), "--memory", String(memoryBytes),
    ]
    switch request {
    case .model(let path): arguments += ["--model", path]
    case .weights(let path, let architecture): arguments += ["--weights", path, "--architecture", architecture]
    case .reference(let path): arguments += ["--reference", path]
    }
    let path = request.path
    let status = try run(arguments)
    let seconds = timeout.truncatingRemainder(dividingBy: 1) == 0 ? String(Int(timeout)) : String(timeout)
    switch status {
    case .timedOut:
      throw KerasReaderError.readerFailed(
        path: path, detail: "libhdf5 did not finish reading the file within \(seconds) s")
    case .signaled(let signal):
      let what =
        signal == SIGXCPU || signal == SIGKILL
        ? "did not finish reading the file within \(cpuSeconds) s of CPU time"
        : "crashed reading the file (signal \(signal))"
      throw KerasReaderError.readerFailed(path: path, detail: "libhdf5 " + what)
    case .exited(let code) where code != 0:
      throw KerasReaderError.readerFailed(
        path: path, detail: "the reader process failed (exit \(code); out of memory?)")
    case .exited: break
    }
    guard let data = Self.contents(of: output) else {
      throw KerasReaderError.readerFailed(path: path, detail: "the reader process wrote no result")
    }
    let decoded: Result<KerasModelSnapshot, KerasReaderError>
    do { decoded = try KerasModelSnapshot.decode(data) } catch {
      throw KerasReaderError.readerFailed(path: path, detail: "the reader process wrote a \(error)")
    }
    return try decoded.get()
  }

  /// The whole file in one buffer, read straight into it (no intermediate `Data` and copy).
  static func contents(of path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, info.st_size >= 0 else { return nil }
    let size = Int(info.st_size)
    var failed = false
    let bytes = [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      var done = 0
      while done < size {
        let count = Glibc.read(fd, buffer.baseAddress! + done, size - done)
        if count < 0 && errno == EINTR { continue }
        guard count > 0 else {
          failed = true
          break
        }
        done += count
      }
      initialized = done
    }
    return failed ? nil : bytes
  }

  typealias Status = ChildProcess.Status

  /// Spawns the child (stdin, stdout and stderr on /dev/null) and waits at most `timeout` seconds.
  func run(_ arguments: [String]) throws -> Status {
    // No Swift backtrace when libhdf5 crashes the child: the crash is reported from its signal, and the
    // backtracer (another process, ptrace-attached, 30 s timeout) would hold back the child's exit status
    // past the deadline, so a crash on a loaded machine looked like a 30 s hang.
    var environment = ProcessInfo.processInfo.environment
    environment["SWIFT_BACKTRACE"] = "enable=no"
    do {
      return try ChildProcess.run(executable, arguments: arguments, environment: environment, timeout: timeout)
    } catch let error as ChildProcess.SpawnError {
      throw KerasReaderError.readerFailed(
        path: executable,
        detail: error.description.replacingOccurrences(
          of: "cannot start \(executable)", with: "cannot start the reader process"))
    }
  }

  /// The child's side: `arguments` are everything after `__read-keras`. Returns the exit status.
  public static func childMain(_ arguments: [String]) -> Int32 {
    var options: [String: String] = [:]
    var index = 0
    while index + 1 < arguments.count {
      options[arguments[index]] = arguments[index + 1]
      index += 2
    }
    guard let output = options["--output"], let cpu = options["--cpu"].flatMap(Int.init),
      let memory = options["--memory"].flatMap(UInt64.init)
    else { return 64 }
    var limit = rlimit(rlim_cur: rlim_t(cpu), rlim_max: rlim_t(cpu + 1))
    setrlimit(__rlimit_resource_t(RLIMIT_CPU.rawValue), &limit)
    // The allowance comes on top of what the executable and its libraries have mapped already.
    let (cap, overflow) = memory.addingReportingOverflow(mappedBytes() ?? 0)
    limit = rlimit(rlim_cur: rlim_t(overflow ? UInt64.max : cap), rlim_max: rlim_t(overflow ? UInt64.max : cap))
    setrlimit(__rlimit_resource_t(RLIMIT_AS.rawValue), &limit)
    limit = rlimit(rlim_cur: 0, rlim_max: 0)
    setrlimit(__rlimit_resource_t(RLIMIT_CORE.rawValue), &limit)

    let bytes: [UInt8]
    do {
      let snapshot: KerasModelSnapshot
      if let model = options["--model"] {
        snapshot = try KerasModelSnapshot.read(path: model)
      } else if let reference = options["--reference"] {
        snapshot = try KerasModelSnapshot.readReference(path: reference)
      } else if let weights = options["--weights"], let architecture = options["--architecture"] {
        snapshot = try KerasModelSnapshot.read(weightsPath: weights, architectureJSONPath: architecture)
      } else {
        return 64
      }
      bytes = snapshot.encoded()
    } catch let error as KerasReaderError {
      bytes = KerasModelSnapshot.encoded(error: error)
    } catch {
      bytes = KerasModelSnapshot.encoded(error: .hdf5(String(describing: error)))
    }
    let fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
    guard fd >= 0 else { return 73 }
    defer { close(fd) }
    var written = 0
    while written < bytes.count {
      let count = bytes.withUnsafeBytes { write(fd, $0.baseAddress! + written, bytes.count - written) }
      if count < 0 && errno == EINTR { continue }
      guard count > 0 else { return 73 }
      written += count
    }
    return 0
  }
}
