import ModelFormats

/// A bad command line, reported with exit code 64 (EX_USAGE).
struct UsageError: Error, CustomStringConvertible {
  var message: String
  var description: String { message }
}

/// One option a command accepts, declared once with its help (every one is a constant of `Options`).
struct OptionSpec: Equatable {
  /// Every spelling, such as `["-o", "--output"]`; the first long one is its key.
  var names: [String]
  /// The value's placeholder in help (`N`, `FILE`); nil for flags.
  var value: String?
  /// One or more sentences; wrapped when printed.
  var help: String
  /// The help section it is listed under.
  var section: String

  var takesValue: Bool { value != nil }

  /// The name values are kept under and messages use: the first long spelling (`--output` for `-o, --output`).
  var key: String { names.first { $0.hasPrefix("--") } ?? names[0] }

  /// An option taking a value.
  static func option(_ names: String..., value: String, section: String = "OPTIONS", help: String) -> OptionSpec {
    OptionSpec(names: names, value: value, help: help, section: section)
  }

  /// A flag.
  static func flag(_ names: String..., section: String = "OPTIONS", help: String) -> OptionSpec {
    OptionSpec(names: names, value: nil, help: help, section: section)
  }

  /// `--image-scale 1/255`: a number or a fraction.
  static func parseNumber(_ text: String) -> Float? {
    let parts = text.split(separator: "/", omittingEmptySubsequences: false)
    if parts.count == 2, let numerator = Double(parts[0]), let denominator = Double(parts[1]), denominator != 0 {
      return Float(numerator / denominator)
    }
    return Float(text)
  }

  /// Levenshtein distance, for suggesting the option a user probably meant.
  static func distance(_ a: String, _ b: String) -> Int {
    let a = Array(a)
    let b = Array(b)
    var previous = Array(0...b.count)
    for i in 1...max(a.count, 1) where !a.isEmpty {
      var current = [i] + [Int](repeating: 0, count: b.count)
      for j in 1...max(b.count, 1) where !b.isEmpty {
        current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
      }
      previous = current
    }
    return previous[b.count]
  }

  /// The spelling closest to `name`: a prefix of one option, or within a few edits.
  static func suggestion(for name: String, in specs: [OptionSpec]) -> String? {
    let spellings = specs.flatMap(\.names).filter { $0.hasPrefix("--") }
    let prefixed = spellings.filter { $0.hasPrefix(name) || name.hasPrefix($0) }
    if prefixed.count == 1 { return prefixed[0] }
    let scored = spellings.map { ($0, distance(name, $0)) }.sorted { $0.1 < $1.1 || ($0.1 == $1.1 && $0.0 < $1.0) }
    guard let best = scored.first, best.1 <= max(2, name.count / 4) else { return prefixed.first }
    return best.0
  }
}

/// The help page of a command, rendered from its declared options.
struct HelpPage {
  var synopsis: String
  var discussion: String
  var specs: [OptionSpec]
  var examples: [String]

  static let exitCodes = """
    EXIT CODES:
      0   success
      1   parity broken (verify, convert --verify), or images that could not be read (predict)
      64  bad command line (unknown option, bad value, an output that would replace an input or a special file)
      65  bad or unsupported input model or data (the message names the file, layer and field)
      66  an input file is missing or unreadable
      73  the output cannot be written
    """

  var text: String {
    var lines = ["USAGE: " + synopsis, ""]
    if !discussion.isEmpty {
      lines += discussion.split(separator: "\n", omittingEmptySubsequences: false).map { String($0) } + [""]
    }
    var sections: [String] = []
    for spec in specs + [Options.help] where !sections.contains(spec.section) { sections.append(spec.section) }
    for section in sections {
      lines.append(section + ":")
      for spec in (specs + [Options.help]) where spec.section == section {
        let label = spec.names.joined(separator: ", ") + (spec.value.map { " " + $0 } ?? "")
        let wrapped = Self.wrap(spec.help, width: 68)
        if label.count <= 27 {
          lines.append("  " + label.padding(toLength: 29, withPad: " ", startingAt: 0) + wrapped[0])
        } else {
          lines.append("  " + label)
          lines.append(String(repeating: " ", count: 31) + wrapped[0])
        }
        for line in wrapped.dropFirst() { lines.append(String(repeating: " ", count: 31) + line) }
      }
      lines.append("")
    }
    if !examples.isEmpty {
      lines.append("EXAMPLES:")
      for example in examples { lines.append("  " + example) }
      lines.append("")
    }
    lines.append(Self.exitCodes)
    return lines.joined(separator: "\n")
  }

  /// Words wrapped to lines of at most `width` characters.
  static func wrap(_ text: String, width: Int) -> [String] {
    var lines: [String] = []
    var line = ""
    for word in text.split(separator: " ") {
      if !line.isEmpty && line.count + 1 + word.count > width {
        lines.append(line)
        line = String(word)
      } else {
        line += (line.isEmpty ? "" : " ") + word
      }
    }
    return lines + [line]
  }
}

/// Command-line arguments split into positionals, option values and flags, read back by declaration:
/// `parsed.value(Options.imageScale)`, `parsed.flag(Options.bgr)`.
struct ParsedArguments {
  private(set) var positionals: [String] = []
  /// Values by the option's key, in the order given.
  private var values: [String: [String]] = [:]
  private var flags: Set<String> = []
  /// The options the arguments were parsed against, by key: the only ones that may be read.
  private let declared: [String: OptionSpec]

  /// Splits `arguments` against `specs`; accepts `--name value` and `--name=value`.
  init(_ arguments: [String], specs: [OptionSpec]) throws {
    declared = Dictionary(specs.map { ($0.key, $0) }, uniquingKeysWith: { first, _ in first })
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
      guard let spec = specs.first(where: { $0.names.contains(name) }) else {
        let hint = OptionSpec.suggestion(for: name, in: specs).map { "; did you mean '\($0)'?" } ?? ""
        throw UsageError(message: "unknown option '\(name)'\(hint) (see --help)")
      }
      if spec.takesValue {
        let value: String
        if let inlineValue {
          value = inlineValue
        } else {
          guard index < arguments.count else { throw UsageError(message: "option '\(name)' needs a value") }
          value = arguments[index]
          index += 1
        }
        values[spec.key, default: []].append(value)
      } else {
        guard inlineValue == nil else { throw UsageError(message: "flag '\(name)' takes no value") }
        flags.insert(spec.key)
      }
    }
  }

  private static func split(_ argument: String) -> (String, String?) {
    guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
    return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
  }

  /// Whether the command declared `spec` (under any heading) among the options it parsed against.
  func isDeclared(_ spec: OptionSpec) -> Bool { declared[spec.key].map { $0.isSameDeclaration(as: spec) } ?? false }

  /// The key of `spec`, which every read goes through. Reading an option the command did not declare,
  /// or a flag as a value (or the reverse), is a mistake in that command's code: the parser refuses every
  /// undeclared spelling a user types before anything is read, so no command line reaches this, and it
  /// stops at once, naming the option, rather than quietly reading "not given".
  private func key(_ spec: OptionSpec, asValue: Bool) -> String {
    guard isDeclared(spec) else {
      preconditionFailure("modelconv: the command reads \(spec.key), which is not among the options it declares")
    }
    guard spec.takesValue == asValue else {
      preconditionFailure(
        "modelconv: the command reads \(spec.key) as \(asValue ? "an option with a value" : "a flag"), but it is declared as \(spec.takesValue ? "an option with a value" : "a flag")"
      )
    }
    return spec.key
  }

  func flag(_ spec: OptionSpec) -> Bool { flags.contains(key(spec, asValue: false)) }

  /// The last value of a single-valued option.
  func value(_ spec: OptionSpec) -> String? { values[key(spec, asValue: true)]?.last }

  /// Every value of a repeatable option, in the order given.
  func values(_ spec: OptionSpec) -> [String] { values[key(spec, asValue: true)] ?? [] }

  /// Whether the option (a flag or one taking a value) was given.
  func isGiven(_ spec: OptionSpec) -> Bool { spec.takesValue ? value(spec) != nil : flag(spec) }

  /// Every value of a repeatable option, comma lists split.
  func list(_ spec: OptionSpec) throws -> [String]? {
    let given = values(spec)
    let items = given.flatMap { $0.split(separator: ",", omittingEmptySubsequences: false).map { String($0) } }
    guard !items.isEmpty else { return nil }
    if items.contains(where: { $0.trimmingCharacters(in: .whitespaces).isEmpty }) {
      let names = spec.names.filter { $0.hasPrefix("--") }.joined(separator: "/")
      throw UsageError(message: "option '\(names)' has an empty item in '\(given.joined(separator: " "))'")
    }
    return items
  }

  func float(_ spec: OptionSpec, minimum: Float? = nil) throws -> Float? {
    guard let text = value(spec) else { return nil }
    guard let number = OptionSpec.parseNumber(text), number.isFinite else {
      throw UsageError(message: "option '\(spec.key)' needs a number or a fraction such as 1/255, got '\(text)'")
    }
    if let minimum, number < minimum {
      throw UsageError(message: "option '\(spec.key)' needs a number >= \(minimum), got '\(text)'")
    }
    return number
  }

  func integer(_ spec: OptionSpec, minimum: Int, maximum: Int = .max) throws -> Int? {
    guard let text = value(spec) else { return nil }
    guard let number = Int(text), number >= minimum, number <= maximum else {
      let range = maximum == .max ? ">= \(minimum)" : "from \(minimum) to \(maximum)"
      throw UsageError(message: "option '\(spec.key)' needs a whole number \(range), got '\(text)'")
    }
    return number
  }
}

extension UsageError: KindedError {
  var kind: ErrorKind { .usage }
}
