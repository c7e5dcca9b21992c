import CHDF5
import Foundation
import KerasFormat
import TestSupport

/// Copies of the Keras fixtures edited in place: a config with text replaced, for tests that need a
/// variant real Keras would also write (an activation swapped, a layer renamed) or one it never would.
public enum KerasFileEditing {
  public struct EditError: Error, CustomStringConvertible {
    public let description: String
  }

  /// A copy of a fixture in a fresh temporary directory.
  public static func copy(_ relative: String) throws -> URL {
    let directory = try Fixtures.temporaryDirectory()
    let url = directory.appendingPathComponent((relative as NSString).lastPathComponent)
    try FileManager.default.copyItem(at: Fixtures.url(relative), to: url)
    return url
  }

  /// The root `model_config` attribute's text.
  public static func modelConfig(_ url: URL) throws -> String {
    let file = try HDF5File(path: url.path)
    guard let text = try file.root.stringAttribute("model_config") else {
      throw EditError(description: "\(url.path) has no model_config")
    }
    return text
  }

  /// Opens a copied file for writing (H5F_ACC_RDWR is 1; the macro does not import into Swift). Inside
  /// `HDF5Lock`, like every other use of libhdf5: Debian's build is not thread-safe and tests run in parallel.
  ///
  /// libhdf5 opens files without O_CLOEXEC and flocks them: a reader child another test spawns in the same
  /// instant holds a copy of a descriptor until its closefrom runs (microseconds), and a write lock taken
  /// then fails. So the open is retried for up to a second (seen once in a parallel run of every suite).
  public static func withWritableFile<T>(_ url: URL, _ body: (hid_t) throws -> T) throws -> T {
    try HDF5Lock.run {
      var file = H5Fopen(url.path, 1, chdf5_p_default())
      for _ in 0..<100 where file < 0 {
        usleep(10_000)
        file = H5Fopen(url.path, 1, chdf5_p_default())
      }
      guard file >= 0 else { throw EditError(description: "cannot open \(url.path) for writing") }
      defer { H5Fclose(file) }
      return try body(file)
    }
  }

  /// Replaces the root `model_config` attribute with this text (a fixed-length string, as h5py writes it).
  public static func setModelConfig(_ url: URL, _ text: String) throws {
    try withWritableFile(url) { file in
      guard H5Adelete(file, "model_config") >= 0 else {
        throw EditError(description: "cannot delete model_config in \(url.path)")
      }
      let bytes = Array(text.utf8)
      let type = H5Tcopy(chdf5_c_s1())
      defer { H5Tclose(type) }
      H5Tset_size(type, bytes.count)
      let space = H5Screate(H5S_SCALAR)
      defer { H5Sclose(space) }
      let attribute = H5Acreate2(file, "model_config", type, space, chdf5_p_default(), chdf5_p_default())
      guard attribute >= 0 else { throw EditError(description: "cannot create model_config in \(url.path)") }
      defer { H5Aclose(attribute) }
      guard H5Awrite(attribute, type, bytes) >= 0 else {
        throw EditError(description: "cannot write model_config in \(url.path)")
      }
    }
  }

  /// A copy of a fixture whose config has each `old` replaced by its `new` (each must occur).
  public static func edited(_ relative: String, _ replacements: [(String, String)]) throws -> URL {
    let url = try copy(relative)
    var text = try modelConfig(url)
    for (old, new) in replacements {
      guard text.contains(old) else { throw EditError(description: "\(relative) config has no \(old)") }
      text = text.replacingOccurrences(of: old, with: new)
    }
    try setModelConfig(url, text)
    return url
  }
}
