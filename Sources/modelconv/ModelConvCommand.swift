import Foundation
import KerasFormat
import ModelConverter

/// The `modelconv` entry point: dispatches to a subcommand and turns errors into exit codes.
@main
enum ModelConvCommand {
  static let usage = """
    USAGE: modelconv <command> [options]

    COMMANDS:
      convert     Convert a Keras .h5 model to a Core ML .mlmodel
      verify      Run a Keras model and its Core ML conversion on the same inputs and compare them

    OPTIONS:
      -h, --help  Show help (also `modelconv <command> --help`)
      --version   Show the version

    """

  static func main() {
    let arguments = Array(CommandLine.arguments.dropFirst())
    // The hidden reader child: parses one untrusted Keras file under CPU and memory limits.
    if arguments.first == KerasReaderIsolation.childCommand {
      exit(KerasReaderIsolation.childMain(Array(arguments.dropFirst())))
    }
    // Every Keras file this process opens is read in such a child, so a file that crashes or hangs
    // libhdf5 becomes an error (exit 65) instead of taking modelconv down.
    KerasModelFile.isolation = KerasReaderIsolation.selfExecutable()
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
      switch command {
      case "-h", "--help", "help":
        Console.out(usage)
        return .success
      case "--version":
        Console.out(ModelConverterVersion.current)
        return .success
      case "convert":
        return try ConvertCommand.main(rest)
      case "verify":
        return try VerifyCommand.main(rest)
      default:
        throw UsageError(message: "unknown command '\(command)'\n\n" + usage)
      }
    } catch {
      Console.error(String(describing: error))
      return ExitCode(for: error)
    }
  }
}
