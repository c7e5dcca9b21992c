import Foundation
import ModelFormats

/// Why an HDF5 file or one of its objects could not be read.
public enum HDF5Error: Error, Equatable, CustomStringConvertible {
  /// The file is not in HDF5 format.
  case notHDF5(path: String)
  /// The file exists but libhdf5 could not open it.
  case cannotOpen(path: String)
  /// A group, dataset or attribute is missing.
  case missing(path: String, object: String)
  /// An object has a type or shape the reader cannot take.
  case unreadable(path: String, object: String, detail: String)

  public var description: String {
    switch self {
    case .notHDF5(let path): return "\(path): not an HDF5 file"
    case .cannotOpen(let path): return "\(path): cannot open the HDF5 file"
    case .missing(let path, let object): return "\(path): no '\(object)' in the file"
    case .unreadable(let path, let object, let detail): return "\(path): cannot read '\(object)': \(detail)"
    }
  }
}

extension HDF5Error: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}

extension HDF5Error: KindedError {
  /// The HDF5 reader runs on a file already found: every failure is about the file's contents.
  public var kind: ErrorKind { .badModel }
}
