import CHDF5
import Foundation

/// A read-only HDF5 file opened through libhdf5.
///
/// Every libhdf5 call runs under `HDF5Lock` (the Debian build is not thread-safe), and lookups by
/// name never follow external links into other files.
public final class HDF5File: @unchecked Sendable {
  /// The path the file was opened from, for error messages.
  public let path: String
  let id: hid_t

  /// Opens a file; throws `HDF5Error.notHDF5` when it is not HDF5.
  public init(path: String) throws {
    self.path = path
    id = try HDF5Lock.run {
      chdf5_silence_errors()
      guard H5Fis_hdf5(path) > 0 else { throw HDF5Error.notHDF5(path: path) }
      let id = H5Fopen(path, chdf5_acc_rdonly(), chdf5_p_default())
      guard id >= 0 else { throw HDF5Error.cannotOpen(path: path) }
      return id
    }
  }

  deinit { HDF5Lock.run { _ = H5Fclose(id) } }

  /// The root group.
  public var root: HDF5Group { HDF5Group(file: self, path: "/") }

  /// The group at an absolute or root-relative path, or nil when absent.
  public func group(_ groupPath: String) -> HDF5Group? {
    HDF5Lock.run {
      let absolute = groupPath.hasPrefix("/") ? groupPath : "/" + groupPath
      guard linkExists(absolute) else { return nil }
      guard chdf5_object_type(id, absolute, HDF5Lock.linkAccess) == Int32(H5O_TYPE_GROUP.rawValue) else { return nil }
      return HDF5Group(file: self, path: absolute)
    }
  }

  /// Whether every component of a path exists (H5Lexists requires the parents to exist).
  func linkExists(_ absolute: String) -> Bool {
    HDF5Lock.run {
      if absolute == "/" { return true }
      var prefix = ""
      for component in absolute.split(separator: "/", omittingEmptySubsequences: true) {
        prefix += "/" + component
        guard H5Lexists(id, prefix, HDF5Lock.linkAccess) > 0 else { return false }
      }
      return true
    }
  }

  /// The first component of a path that is neither a hard nor a soft link (an external or
  /// user-defined link, which would open another file), or nil when there is none.
  public func foreignLink(in absolute: String) -> String? {
    HDF5Lock.run {
      var prefix = ""
      for component in absolute.split(separator: "/", omittingEmptySubsequences: true) {
        prefix += "/" + component
        let type = chdf5_link_type(id, prefix, HDF5Lock.linkAccess)
        if type < 0 { return nil }
        if type != chdf5_link_type_hard() && type != chdf5_link_type_soft() { return prefix }
      }
      return nil
    }
  }
}
