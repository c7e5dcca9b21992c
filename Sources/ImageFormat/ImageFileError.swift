import Foundation
import ModelFormats

/// Why an image file could not be used.
public enum ImageFileError: Error, Equatable, CustomStringConvertible {
  case unreadable(path: String, reason: String)
  /// Not PNG or JPEG (what the bytes look like, when known).
  case unsupportedFormat(path: String, what: String)
  /// The file is PNG or JPEG but cannot be decoded.
  case corrupt(path: String, detail: String)
  /// Too many pixels, or a file too large to read.
  case tooLarge(path: String, detail: String)

  public var description: String {
    switch self {
    case .unreadable(let path, let reason): return "\(path): cannot read the image: \(reason)"
    case .unsupportedFormat(let path, let what): return "\(path): \(what) is not a supported image; use PNG or JPEG"
    case .corrupt(let path, let detail): return "\(path): not a readable image: \(detail)"
    case .tooLarge(let path, let detail): return "\(path): \(detail)"
    }
  }
}

extension ImageFileError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension ImageFileError: KindedError {
  public var kind: ErrorKind {
    if case .unreadable = self { return .missingInput }
    return .badModel
  }
}
