import CHDF5
import Foundation

/// The one lock in front of libhdf5.
///
/// Debian's libhdf5 is built without `--enable-threadsafe`: two threads inside the library at once
/// corrupt its global state. Every call the wrappers make into libhdf5 runs inside `HDF5Lock.run`.
/// The lock is recursive, so wrapper methods may call each other.
public enum HDF5Lock {
  private static let lock = NSRecursiveLock()

  /// Runs `body` with exclusive access to libhdf5.
  public static func run<T>(_ body: () throws -> T) rethrows -> T {
    lock.lock()
    defer { lock.unlock() }
    return try body()
  }

  /// Property lists that make every by-name lookup refuse external links (created once, never closed).
  nonisolated(unsafe) private static var lists: (lapl: hid_t, dapl: hid_t)?

  static var linkAccess: hid_t { run { propertyLists().lapl } }
  static var datasetAccess: hid_t { run { propertyLists().dapl } }

  private static func propertyLists() -> (lapl: hid_t, dapl: hid_t) {
    if let lists { return lists }
    chdf5_silence_errors()
    var made = (lapl: chdf5_no_external_links_lapl(), dapl: chdf5_no_external_links_dapl())
    if made.lapl < 0 { made.lapl = chdf5_p_default() }
    if made.dapl < 0 { made.dapl = chdf5_p_default() }
    lists = made
    return made
  }
}
