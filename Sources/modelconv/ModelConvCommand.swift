import Foundation
import ModelConverter
import ModelFormats

/// The `modelconv` entry point: dispatches to a subcommand and turns errors into exit codes.
@main
enum ModelConvCommand {
  /// A command as the dispatcher sees it.
  struct Entry {
    var name: String
    var abstract: String
    /// The options it parses against (`--help` included).
    var specs: [OptionSpec]
    var usage: () -> String
    var main: ([String]) throws -> ExitCode

    init<C: Subcommand>(_ command: C.Type) {
      name = C.name
      abstract = C.abstract
      specs = C.specs + [Options.help]
      usage = { C.usage }
      main = { try C.main($0) }
    }
  }

  /// Every command, in the order `--help` lists them.
  static let commands = [
    Entry(ConvertCommand.self), Entry(VerifyCommand.self), Entry(InspectCommand.self), Entry(PredictCommand.self),
    Entry(EvaluateCommand.self),
    Entry(BuildCommand.self),
  ]

  static var usage: String {
    var lines = ["USAGE: modelconv <command> [options]", "", "COMMANDS:"]
    for command in commands {
      lines.append("  " + command.name.padding(toLength: 12, withPad: " ", startingAt: 0) + command.abstract)
    }
    lines += [
      "", "OPTIONS:", "  -h, --help  Show this help",
      "  --version   Show the version (with --verbose: the runtime's kernels and the CPU)", "",
      "Run `modelconv help <command>` (or `modelconv <command> --help`) for a command's options, examples",
      "and exit codes.",
    ]
    return lines.joined(separator: "\n")
  }

  static func main() {
    let arguments = Array(CommandLine.arguments.dropFirst())
    // The hidden reader child: parses one untrusted file under CPU and memory limits.
    if arguments.first == ReaderIsolation.childCommand {
      exit(ReaderIsolation.childMain(Array(arguments.dropFirst())))
    }
    // Every file a frontend isolates is read in such a child, so a file that crashes or hangs its
    // reader library (libhdf5) becomes an error (exit 65) instead of taking modelconv down.
    ReaderIsolation.isolateInChildProcesses()
    let code = run(arguments)
    exit(code.rawValue)
  }

  static func run(_ arguments: [String]) -> ExitCode {
    guard let command = arguments.first else {
      Console.out(usage)
      return .usage
    }
    let rest = Array(arguments.dropFirst())
    do {
      if let subcommand = commands.first(where: { $0.name == command }) { return try subcommand.main(rest) }
      switch command {
      case "-h", "--help":
        Console.out(usage)
        return .success
      case "help":
        guard let name = rest.first else {
          Console.out(usage)
          return .success
        }
        guard let subcommand = commands.first(where: { $0.name == name }) else {
          throw UsageError(message: "unknown command '\(name)'\n\n" + usage)
        }
        Console.out(subcommand.usage())
        return .success
      case "--version":
        // `--version --verbose` adds the runtime's kernels and the CPU, so a slow fallback is visible.
        Console.out(
          rest.contains("--verbose")
            ? ModelConverterVersion.verboseDescription.joined(separator: "\n") : ModelConverterVersion.current)
        return .success
      default:
        let names = commands.map(\.name)
        let hint =
          names.min { OptionSpec.distance(command, $0) < OptionSpec.distance(command, $1) }
          .flatMap { OptionSpec.distance(command, $0) <= 2 ? "; did you mean '\($0)'?" : nil } ?? ""
        throw UsageError(message: "unknown command '\(command)'\(hint)\n\n" + usage)
      }
    } catch {
      let code = ExitCode(for: error)
      /// The options that answer an error, when one does (library errors never name flags).
      // Library errors name no flag: the command line adds the flag that answers them.
      func hint(for error: Error) -> String {
        switch (error as? any RemediableError)?.remedy {
        case .giveArchitecture: return "\n  give the architecture with --architecture FILE.json"
        case .omitArchitecture: return "\n  leave out --architecture"
        case .allowNonFinite: return "\n  convert anyway with --allow-nonfinite"
        case nil: break
        }
        guard let open = error as? UnknownInputSizes else { return "" }
        let options = open.inputs.map {
          "--input-shape \($0.name.contains(where: { " '\"$\\".contains($0) }) ? "'\($0.name)'" : $0.name)=\($0.template)"
        }
        return "\n  give them with " + options.joined(separator: " ")
          + " (the capitals standing for the sizes to choose)"
      }
      if rest.contains(where: Options.json.names.contains) {
        // Under --json a failure is a JSON document too (on stdout, where the result would have been).
        Console.out(
          JSONValue.object([
            ("schema", .string("modelconv.error/1")), ("command", .string(command)),
            ("exitCode", .number(Double(code.rawValue))),
            ("kind", .string(code.kind)),
            // The message without the help page some usage errors append.
            ("message", .string(String(describing: error).components(separatedBy: "\n\n")[0])),
          ]).rendered)
      } else {
        Console.error(String(describing: error) + hint(for: error))
      }
      return code
    }
  }
}
