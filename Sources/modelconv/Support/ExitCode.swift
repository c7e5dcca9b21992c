import CoreMLFormat
import KerasFormat
import ModelConverter
import ModelFormats
import ModelIR

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

  /// The exit code for an error thrown by the library.
  init(for error: Error) {
    if let kinded = error as? KindedError {
      switch kinded.kind {
      case .missingInput: self = .noInput
      case .badModel: self = .badModel
      case .usage: self = .usage
      case .cannotWrite: self = .cannotCreate
      }
      return
    }
    switch error {
    case is UsageError: self = .usage
    case KerasReaderError.fileNotFound, KerasReaderError.notRegularFile: self = .noInput
    case SourceFormatError.notFound, SourceFormatError.notRegularFile: self = .noInput
    case is SourceFormatError: self = .badModel
    case ConversionError.labelsFileUnreadable, ConversionError.labelsFileNotRegular: self = .noInput
    case CoreMLReaderError.unreadable: self = .noInput
    case ONNXFormatError.unreadable: self = .noInput
    case is ONNXFormatError, is ONNXImportError: self = .badModel
    case VerificationError.referenceNotFound: self = .noInput
    case ImageFileError.unreadable: self = .noInput
    case is ImageFileError, is PredictionError: self = .badModel
    case is HDF5Error: self = .badModel
    case is KerasReaderError, is CoreMLWriterError, is GraphError, is ConversionError, is CoreMLReaderError, is VerificationError:
      self = .badModel
    default: self = .cannotCreate
    }
  }
}
