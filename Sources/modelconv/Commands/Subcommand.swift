/// A `modelconv` subcommand: its options (each declared once, with its help), examples and what it does.
protocol Subcommand {
  /// The word after `modelconv`.
  static var name: String { get }
  /// One line for `modelconv --help`.
  static var abstract: String { get }
  /// The usage line after `USAGE: `.
  static var synopsis: String { get }
  /// Paragraphs between the usage line and the options.
  static var discussion: String { get }
  /// The options it takes, built from the declarations in `Options` (`--help` is added to them).
  static var specs: [OptionSpec] { get }
  static var examples: [String] { get }
  /// Runs with already parsed arguments (`--help` is handled before this is called).
  static func run(_ parsed: ParsedArguments) throws -> ExitCode
}

extension Subcommand {
  /// The help page, generated from the declared options.
  static var usage: String {
    HelpPage(synopsis: synopsis, discussion: discussion, specs: specs, examples: examples).text
  }

  /// Parses `arguments` against `specs`, prints the usage for `-h`/`--help`, else runs the command.
  static func main(_ arguments: [String]) throws -> ExitCode {
    let parsed = try ParsedArguments(arguments, specs: specs + [Options.help])
    if parsed.flag(Options.help) {
      Console.out(usage)
      return .success
    }
    return try run(parsed)
  }
}
