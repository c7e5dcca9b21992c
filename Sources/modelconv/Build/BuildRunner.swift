import Dispatch
import Foundation
import ModelFormats

/// Runs a manifest's entries, `jobs` at a time, each as a `modelconv convert` child process of this
/// executable (the same code path as the command line, one model per core, a crash or a hostile file
/// confined to its own process), then `modelconv verify --reference` where the entry names a reference.
/// An entry whose output exists and whose inputs and options hash as they did when it last succeeded is
/// skipped (`BuildState`).
struct BuildRunner {
  enum Status: String {
    case converted, skipped
    case parityFailed = "parity-failed"
    case badInput = "bad-input"
    case failed
  }

  struct Result {
    var entry: BuildManifest.Entry
    var status: Status
    var exitCode: Int32
    var seconds: Double
    /// The first line that says what went wrong, or what was done.
    var message: String
  }

  var executable: String
  var jobs: Int
  var force: Bool
  /// Set when the build is interrupted: no further entry starts (those running finish or die with it).
  var interrupted: () -> Bool = { false }

  /// The content hash that decides whether an entry is up to date: the options, the tool's version and
  /// every input file's bytes (a package folder's files in path order).
  static func key(_ entry: BuildManifest.Entry, version: String) -> String {
    var hash = FNV1a()
    hash.add(version)
    hash.add(entry.output.path)
    // `--reference-check` is no option: it only separates the two argument lists in the hash.
    for argument in entry.arguments + ["--reference-check"] + entry.verifyArguments { hash.add(argument) }
    for input in entry.inputs { hash.addFile(input) }
    return hash.hex
  }

  func run(_ manifest: BuildManifest, state: inout BuildState, version: String, report: (Result) -> Void) -> [Result] {
    var results = [Result?](repeating: nil, count: manifest.entries.count)
    let lock = NSLock()
    var next = 0
    let keys = manifest.entries.map { Self.key($0, version: version) }
    let previous = state
    DispatchQueue.concurrentPerform(iterations: max(1, min(jobs, manifest.entries.count))) { _ in
      while true {
        let index: Int? = lock.withLock {
          guard next < manifest.entries.count, !interrupted() else { return nil }
          next += 1
          return next - 1
        }
        guard let index else { return }
        let entry = manifest.entries[index]
        let result: Result
        if !force, previous.keys[entry.name] == keys[index], FileManager.default.fileExists(atPath: entry.output.path) {
          result = Result(entry: entry, status: .skipped, exitCode: 0, seconds: 0, message: "up to date")
        } else {
          result = build(entry)
        }
        lock.withLock {
          results[index] = result
          report(result)
        }
      }
    }
    let finished = results.compactMap { $0 }
    for (result, key) in zip(finished, keys) {
      switch result.status {
      case .converted, .skipped: state.keys[result.entry.name] = key
      default: state.keys[result.entry.name] = nil
      }
    }
    return finished
  }

  /// Removes what an interrupted `convert` may leave beside an output: its temporary file
  /// (`.<name>.<uuid>.tmp`) and the staged model of `--verify` (`.<name>.<uuid>.verify.<ext>`).
  static func removeLeftovers(of entry: BuildManifest.Entry) {
    let folder = entry.output.deletingLastPathComponent()
    let prefix = "." + entry.output.lastPathComponent + "."
    for name in (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
    where name.hasPrefix(prefix) && (name.hasSuffix(".tmp") || name.contains(".verify.")) {
      try? FileManager.default.removeItem(at: folder.appendingPathComponent(name))
    }
  }

  /// Converts one entry (and checks its reference), in child processes.
  func build(_ entry: BuildManifest.Entry) -> Result {
    let start = Date()
    // No folder is made inside a source (convert itself refuses such an output, with the same message).
    if let conflict = SourceProtection.conflict(output: entry.output.path, sources: entry.inputs.map(\.path)) {
      return Result(
        entry: entry, status: .badInput, exitCode: ExitCode.usage.rawValue, seconds: Date().timeIntervalSince(start),
        message: conflict.description)
    }
    try? FileManager.default.createDirectory(
      at: entry.output.deletingLastPathComponent(), withIntermediateDirectories: true)
    let convert = Self.spawn(
      executable, [ConvertCommand.name, entry.source.path, Options.output.key, entry.output.path] + entry.arguments)
    var result = Result(entry: entry, status: .converted, exitCode: convert.status, seconds: 0, message: "")
    if convert.status == 0, let reference = entry.reference {
      let verify = Self.spawn(
        executable,
        [VerifyCommand.name, entry.source.path, entry.output.path, Options.reference.key, reference.path]
          + entry.verifyArguments)
      result.exitCode = verify.status
      if verify.status != 0 { result.message = Self.firstProblem(verify) }
    } else if convert.status != 0 {
      result.message = Self.firstProblem(convert)
    }
    switch result.exitCode {
    case 0: result.message = result.message.isEmpty ? "wrote \(entry.output.path)" : result.message
    case 1: result.status = .parityFailed
    case 64, 65, 66: result.status = .badInput
    default: result.status = .failed
    }
    result.seconds = Date().timeIntervalSince(start)
    return result
  }

  struct Output {
    var status: Int32
    var stdout: String
    var stderr: String
  }

  /// Runs a child with its output in files (read once it has exited).
  static func spawn(_ executable: String, _ arguments: [String]) -> Output {
    let folder = FileManager.default.temporaryDirectory.appendingPathComponent("modelconv-build-\(UUID().uuidString)")
    defer { try? FileManager.default.removeItem(at: folder) }
    do {
      try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
      let outURL = folder.appendingPathComponent("out")
      let errURL = folder.appendingPathComponent("err")
      let status = try ChildProcess.run(
        executable, arguments: [executable] + arguments, environment: ProcessInfo.processInfo.environment,
        stdout: outURL.path, stderr: errURL.path)
      var code: Int32 = 70
      var stderr = String(decoding: (try? Data(contentsOf: errURL)) ?? Data(), as: UTF8.self)
      switch status {
      case .exited(let value): code = value
      case .signaled(let signal): stderr = "modelconv: error: stopped by signal \(signal)\n" + stderr
      case .timedOut: stderr = "modelconv: error: timed out\n" + stderr
      }
      return Output(
        status: code, stdout: String(decoding: (try? Data(contentsOf: outURL)) ?? Data(), as: UTF8.self), stderr: stderr
      )
    } catch {
      return Output(status: 70, stdout: "", stderr: "modelconv: error: \(error)")
    }
  }

  /// The line that says what went wrong: an error, else verify's first FAIL line, else the first line.
  static func firstProblem(_ output: Output) -> String {
    let lines = (output.stderr + "\n" + output.stdout).split(separator: "\n").map {
      $0.trimmingCharacters(in: .whitespaces)
    }
    if let error = lines.first(where: { $0.hasPrefix("modelconv: error:") }) {
      return String(error.dropFirst("modelconv: error: ".count))
    }
    guard let index = lines.firstIndex(where: { $0.hasPrefix("FAIL") }) else {
      return lines.first { !$0.isEmpty } ?? "exit \(output.status)"
    }
    // "FAIL layers: ... the first:" continues on the next line.
    return lines[index].hasSuffix(":") && index + 1 < lines.count ? lines[index] + " " + lines[index + 1] : lines[index]
  }
}

/// What the last build left next to its outputs (`.modelconv-build.json`): each entry's key when it last
/// succeeded. Written atomically.
struct BuildState {
  static let fileName = ".modelconv-build.json"
  var keys: [String: String] = [:]

  static func load(_ url: URL) -> BuildState {
    guard let data = FileManager.default.contents(atPath: url.path),
      let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any],
      let keys = object["keys"] as? [String: String]
    else { return BuildState() }
    return BuildState(keys: keys)
  }

  func save(_ url: URL) throws {
    let data = try JSONSerialization.data(
      withJSONObject: ["schema": "modelconv.build-state/1", "keys": keys], options: [.sortedKeys, .prettyPrinted])
    try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
    try data.write(to: url, options: .atomic)
  }
}

/// 64-bit FNV-1a: a change detector for the build state (not a security hash).
struct FNV1a {
  private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

  mutating func add(_ bytes: UnsafeRawBufferPointer) {
    var v = value
    for byte in bytes {
      v ^= UInt64(byte)
      v = v &* 0x0000_0100_0000_01B3
    }
    value = v
  }

  mutating func add(_ text: String) {
    var text = text + "\u{0}"
    text.withUTF8 { add(UnsafeRawBufferPointer($0)) }
  }

  /// A file's bytes, or a folder's files (relative paths and bytes, in path order); a missing input hashes
  /// as missing, so it is rebuilt (and reported) once it appears.
  mutating func addFile(_ url: URL) {
    var isDirectory: ObjCBool = false
    guard FileManager.default.fileExists(atPath: url.path, isDirectory: &isDirectory) else {
      return add("missing " + url.path)
    }
    if isDirectory.boolValue {
      let files = (FileManager.default.subpaths(atPath: url.path) ?? []).sorted()
      for file in files {
        var inner: ObjCBool = false
        let path = url.appendingPathComponent(file)
        guard FileManager.default.fileExists(atPath: path.path, isDirectory: &inner), !inner.boolValue else { continue }
        add(file)
        addFile(path)
      }
      return
    }
    guard let handle = try? FileHandle(forReadingFrom: url) else { return add("unreadable " + url.path) }
    defer { try? handle.close() }
    while let chunk = try? handle.read(upToCount: 1 << 20), !chunk.isEmpty {
      chunk.withUnsafeBytes { add($0) }
    }
  }

  var hex: String { String(value, radix: 16) }
}
