/// What kind of failure an error is, whichever module threw it: the command line's exit codes follow
/// from kinds, so a new reader's or writer's errors need no list of types.
public enum ErrorKind: String, Sendable {
  /// An input file is missing or unreadable.
  case missingInput
  /// The model (or a file it reads) is malformed, unsupported, or does not fit the options.
  case badModel
  /// The request itself cannot be carried out as given (options, paths).
  case usage
  /// The output cannot be written.
  case cannotWrite
}

/// An error that says what kind of failure it is.
public protocol KindedError: Error {
  var kind: ErrorKind { get }
}

/// What the caller can change to get past an error, named by the library's options (never by a
/// command-line flag: a front end says how its users give each option).
public enum ErrorRemedy: Sendable, Equatable {
  /// Give the model's architecture separately (`ConversionOptions.architecture`).
  case giveArchitecture
  /// Leave the separate architecture out: the file holds its own.
  case omitArchitecture
  /// Allow weights that are not finite (`ConversionOptions.allowNonFinite`).
  case allowNonFinite
}

/// An error that one change of options answers.
public protocol RemediableError: Error {
  var remedy: ErrorRemedy? { get }
}
