import ModelFormats

/// Process exit codes, from BSD's sysexits where one fits.
enum ExitCode: Int32 {
  case success = 0
  /// Parity broke (used by `verify`).
  case failure = 1
  /// EX_USAGE: bad arguments.
  case usage = 64
  /// EX_DATAERR: a bad or unsupported input model, or options that do not fit it.
  case badModel = 65
  /// EX_NOINPUT: an input file is missing or unreadable.
  case noInput = 66
  /// EX_CANTCREAT: the output cannot be written.
  case cannotCreate = 73
  /// 128 + SIGINT: stopped by Ctrl-C or SIGTERM (`build`).
  case interrupted = 130

  /// A stable name for JSON error documents.
  var kind: String {
    switch self {
    case .success: return "success"
    case .failure: return "failure"
    case .usage: return "usage"
    case .badModel: return "badInput"
    case .noInput: return "noInput"
    case .cannotCreate: return "cannotWrite"
    case .interrupted: return "interrupted"
    }
  }

  /// The exit code for an error: from its kind (every library error says what kind of failure it is);
  /// anything else (a file system error while writing) is an output that cannot be written.
  init(for error: Error) {
    guard let kinded = error as? KindedError else {
      self = .cannotCreate
      return
    }
    switch kinded.kind {
    case .missingInput: self = .noInput
    case .badModel: self = .badModel
    case .usage: self = .usage
    case .cannotWrite: self = .cannotCreate
    }
  }
}
