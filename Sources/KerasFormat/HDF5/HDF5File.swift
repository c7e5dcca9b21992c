import CHDF5
import Foundation

/// A read-only HDF5 file opened through libhdf5.
public final class HDF5File {
  /// The path the file was opened from, for error messages.
  public let path: String
  let id: hid_t

  /// Opens a file; throws `HDF5Error.notHDF5` when it is not HDF5.
  public init(path: String) throws {
    chdf5_silence_errors()
    self.path = path
    guard H5Fis_hdf5(path) > 0 else { throw HDF5Error.notHDF5(path: path) }
    let id = H5Fopen(path, chdf5_acc_rdonly(), chdf5_p_default())
    guard id >= 0 else { throw HDF5Error.cannotOpen(path: path) }
    self.id = id
  }

  deinit { H5Fclose(id) }

  /// The root group.
  public var root: HDF5Group { HDF5Group(file: self, path: "/") }

  /// The group at an absolute or root-relative path, or nil when absent.
  public func group(_ groupPath: String) -> HDF5Group? {
    let absolute = groupPath.hasPrefix("/") ? groupPath : "/" + groupPath
    guard linkExists(absolute) else { return nil }
    var info = H5O_info_t()
    guard H5Oget_info_by_name1(id, absolute, &info, chdf5_p_default()) >= 0, info.type == H5O_TYPE_GROUP else { return nil }
    return HDF5Group(file: self, path: absolute)
  }

  /// Whether every component of a path exists (H5Lexists requires the parents to exist).
  func linkExists(_ absolute: String) -> Bool {
    if absolute == "/" { return true }
    var prefix = ""
    for component in absolute.split(separator: "/", omittingEmptySubsequences: true) {
      prefix += "/" + component
      guard H5Lexists(id, prefix, chdf5_p_default()) > 0 else { return false }
    }
    return true
  }
}
