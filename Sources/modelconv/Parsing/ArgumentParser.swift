/// A bad command line, reported with exit code 64 (EX_USAGE).
struct UsageError: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}

/// One option a command accepts.
struct OptionSpec {
  /// Every spelling, such as `["-o", "--output"]`.
  var names: [String]
  /// Whether the option takes a value (`--labels a,b`); flags do not.
  var takesValue: Bool

  /// Options that take a value, one spelling each.
  static func valued(_ names: String...) -> [OptionSpec] { names.map { OptionSpec(names: [$0], takesValue: true) } }

  /// Flags, one spelling each.
  static func flags(_ names: String...) -> [OptionSpec] { names.map { OptionSpec(names: [$0], takesValue: false) } }

  /// `-h`, `--help`.
  static let help = OptionSpec(names: ["-h", "--help"], takesValue: false)
}

/// Command-line arguments split into positionals, option values and flags.
struct ParsedArguments {
  private(set) var positionals: [String] = []
  /// Values by the option's first spelling, in the order given.
  private(set) var values: [String: [String]] = [:]
  private(set) var flags: Set<String> = []

  /// Splits `arguments` against `specs`; accepts `--name value` and `--name=value`.
  init(_ arguments: [String], specs: [OptionSpec]) throws {
    var index = 0
    while index < arguments.count {
      let argument = arguments[index]
      index += 1
      guard argument.hasPrefix("-"), argument != "-" else {
        positionals.append(argument)
        continue
      }
      if argument == "--" {
        positionals += arguments[index...]
        break
      }
      let (name, inlineValue) = Self.split(argument)
      guard let spec = specs.first(where: { $0.names.contains(name) }) else { throw UsageError(message: "unknown option '\(name)'") }
      let key = spec.names[0]
      if spec.takesValue {
        let value: String
        if let inlineValue {
          value = inlineValue
        } else {
          guard index < arguments.count else { throw UsageError(message: "option '\(name)' needs a value") }
          value = arguments[index]
          index += 1
        }
        values[key, default: []].append(value)
      } else {
        guard inlineValue == nil else { throw UsageError(message: "flag '\(name)' takes no value") }
        flags.insert(key)
      }
    }
  }

  private static func split(_ argument: String) -> (String, String?) {
    guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
    return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
  }

  func flag(_ name: String) -> Bool { flags.contains(name) }

  /// The last value of a single-valued option.
  func value(_ name: String) -> String? { values[name]?.last }

  /// Every value of a repeatable option, comma lists split.
  func list(_ names: String...) throws -> [String]? {
    var items: [String] = []
    for name in names {
      for value in values[name] ?? [] { items += value.split(separator: ",", omittingEmptySubsequences: false).map { String($0) } }
    }
    guard !items.isEmpty else { return nil }
    if items.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
      throw UsageError(message: "option '\(names.joined(separator: "/"))' has an empty item in '\(names.compactMap { values[$0]?.joined(separator: " ") }.joined(separator: " "))'")
    }
    return items
  }

  func float(_ name: String, minimum: Float? = nil) throws -> Float? {
    guard let text = value(name) else { return nil }
    guard let number = Float(text), number.isFinite else { throw UsageError(message: "option '\(name)' needs a number, got '\(text)'") }
    if let minimum, number < minimum { throw UsageError(message: "option '\(name)' needs a number >= \(minimum), got '\(text)'") }
    return number
  }

  func integer(_ name: String, minimum: Int, maximum: Int = .max) throws -> Int? {
    guard let text = value(name) else { return nil }
    guard let number = Int(text), number >= minimum, number <= maximum else {
      let range = maximum == .max ? ">= \(minimum)" : "from \(minimum) to \(maximum)"
      throw UsageError(message: "option '\(name)' needs a whole number \(range), got '\(text)'")
    }
    return number
  }
}
