/// A `modelconv` subcommand: its help text, the options it accepts and what it does with them.
protocol Subcommand {
  static var usage: String { get }
  static var specs: [OptionSpec] { get }
  /// Runs with already parsed arguments (`--help` is handled before this is called).
  static func run(_ parsed: ParsedArguments) throws -> ExitCode
}

extension Subcommand {
  /// Parses `arguments` against `specs`, prints the usage for `-h`/`--help`, else runs the command.
  static func main(_ arguments: [String]) throws -> ExitCode {
    let parsed = try ParsedArguments(arguments, specs: specs + [.help])
    if parsed.flag("-h") {
      Console.out(usage)
      return .success
    }
    return try run(parsed)
  }
}
