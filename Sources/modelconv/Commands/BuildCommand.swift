import Dispatch
import Foundation
import ModelConverter

/// `modelconv build`: converts (and verifies) every model a `modelconv.json` manifest lists.
enum BuildCommand: Subcommand {
  static let name = "build"
  static let abstract =
    "Convert and verify every model of a modelconv.json manifest, one per core, skipping what is up to date"
  static let synopsis =
    "modelconv build [--manifest modelconv.json] [-j N] [--only NAME] [--output-dir DIR] [--force] [--json]"
  static let discussion = """
    Each manifest entry is a `modelconv convert` run: "source", optional "name" and "output", and convert's
    options under their names without the dashes ("image-input", "labels-file", "precision", "verify",
    "atol", ...; see Schemas/modelconv-manifest.schema.json), plus "reference": an HDF5 file of the source
    framework's outputs to verify against afterwards. Entries run in parallel, each in its own process; an
    entry whose output exists and whose inputs (file contents) and options are unchanged since it last
    succeeded is skipped (the state is .modelconv-build.json in the output folder). Every entry is reported,
    and a broken one does not stop the others; outputs are replaced only once complete.
    With --json: one JSON object per model (schema modelconv.build/1) and a summary
    (modelconv.build-summary/1), one per line.
    Exit code: 65 when any entry's input is bad (or the manifest is), else 1 when any parity check failed,
    else 73 when an output could not be written, else 0; 130 when interrupted (Ctrl-C or SIGTERM: no
    further entry starts, the running ones keep their previous outputs, leftovers are removed).
    """

  static let specs: [OptionSpec] = [
    Options.manifest, Options.jobs, Options.only, Options.outputDir, Options.force, Options.json, Options.printSchema,
  ]

  static let examples = [
    "modelconv build",
    "modelconv build --manifest models/modelconv.json -j 4 --json > build-report.jsonl",
    "modelconv build --only digits --force",
  ]

  static func run(_ parsed: ParsedArguments) throws -> ExitCode {
    if parsed.flag(Options.printSchema) {
      Console.out(BuildManifest.schema.trimmingCharacters(in: .newlines))
      return .success
    }
    guard parsed.positionals.isEmpty else {
      throw UsageError(
        message: "build takes no positional arguments (the models are in the manifest): \(parsed.positionals)")
    }
    let manifestURL = URL(fileURLWithPath: parsed.value(Options.manifest) ?? "modelconv.json").standardizedFileURL
    let outputDirectory = parsed.value(Options.outputDir).map {
      URL(fileURLWithPath: $0, isDirectory: true).standardizedFileURL
    }
    let jobs =
      try parsed.integer(Options.jobs, minimum: 1, maximum: 1024) ?? ProcessInfo.processInfo.activeProcessorCount
    let json = parsed.flag(Options.json)
    var manifest: BuildManifest
    do { manifest = try BuildManifest.load(manifestURL, outputDirectory: outputDirectory) } catch let problem
      as BuildManifest.Problem
    {
      if json {
        printJSON(["schema": "modelconv.error/1", "kind": "badInput", "message": problem.message])
      } else {
        Console.error(problem.message)
      }
      return .badModel
    }
    if let only = try parsed.list(Options.only) {
      let unknown = only.filter { name in !manifest.entries.contains { $0.name == name } }
      guard unknown.isEmpty else {
        throw UsageError(
          message:
            "no entry named \(unknown.joined(separator: ", ")) in \(manifestURL.path) (it has: \(manifest.entries.map(\.name).joined(separator: ", ")))"
        )
      }
      manifest.entries = manifest.entries.filter { only.contains($0.name) }
    }
    let stateURL = (outputDirectory ?? manifestURL.deletingLastPathComponent()).appendingPathComponent(
      BuildState.fileName)
    var state = BuildState.load(stateURL)
    let executable = ReaderIsolation.selfExecutable
    // Ctrl-C (or SIGTERM): the running children get it too (one process group) and leave their outputs as
    // they were; no further entry starts, leftovers are removed, and the state keeps what finished.
    let stop = NSLock()
    var stopped = false
    var sources: [DispatchSourceSignal] = []
    for number in [SIGINT, SIGTERM] {
      signal(number, SIG_IGN)
      let source = DispatchSource.makeSignalSource(signal: number, queue: .global())
      source.setEventHandler { stop.withLock { stopped = true } }
      source.resume()
      sources.append(source)
    }
    defer { for source in sources { source.cancel() } }
    var runner = BuildRunner(executable: executable, jobs: jobs, force: parsed.flag(Options.force))
    runner.interrupted = { stop.withLock { stopped } }
    let start = Date()
    let results = runner.run(manifest, state: &state, version: ModelConverterVersion.current) { result in
      if json {
        printJSON([
          "schema": "modelconv.build/1", "name": result.entry.name, "status": result.status.rawValue,
          "exitCode": Int(result.exitCode),
          "seconds": (result.seconds * 100).rounded() / 100, "output": result.entry.output.path,
          "source": result.entry.source.path,
          "message": result.message,
        ])
      } else {
        let word: String
        switch result.status {
        case .converted: word = "ok     "
        case .skipped: word = "skipped"
        case .parityFailed: word = "FAIL   "
        case .badInput: word = "error  "
        case .failed: word = "error  "
        }
        let line =
          "\(word) \(result.entry.name): \(result.message)"
          + (result.status == .skipped ? "" : String(format: " (%.1f s)", result.seconds))
        switch result.status {
        case .converted, .skipped: Console.out(line)
        // Failures go to stderr, where a build log (the SwiftPM plugin's) shows them as the error.
        default: Console.error("\(result.entry.name): \(result.message)")
        }
      }
    }
    try? state.save(stateURL)
    let wasInterrupted = stop.withLock { stopped }
    if wasInterrupted {
      for entry in manifest.entries { BuildRunner.removeLeftovers(of: entry) }
      Console.error(
        "interrupted: \(results.count) of \(manifest.entries.count) models done; the others were not started")
    }
    func count(_ status: BuildRunner.Status) -> Int { results.filter { $0.status == status }.count }
    let seconds = Date().timeIntervalSince(start)
    if json {
      printJSON([
        "schema": "modelconv.build-summary/1", "models": results.count, "converted": count(.converted),
        "skipped": count(.skipped),
        "parityFailed": count(.parityFailed), "badInput": count(.badInput), "failed": count(.failed), "jobs": jobs,
        "seconds": (seconds * 100).rounded() / 100,
      ])
    } else {
      Console.out(
        String(
          format:
            "%d models: %d converted, %d up to date, %d parity failures, %d bad inputs, %d other errors (%.1f s, %d at once)",
          results.count, count(.converted), count(.skipped), count(.parityFailed), count(.badInput), count(.failed),
          seconds, jobs))
    }
    if wasInterrupted { return .interrupted }
    if count(.badInput) > 0 { return .badModel }
    if count(.parityFailed) > 0 { return .failure }
    if count(.failed) > 0 { return .cannotCreate }
    return .success
  }

  static func printJSON(_ object: [String: Any]) {
    guard
      let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
    else { return }
    Console.out(String(decoding: data, as: UTF8.self))
  }
}
