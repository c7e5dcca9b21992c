import Foundation

/// Writes files so that readers never see a partial file and failures leave nothing behind.
public enum AtomicFile {
  /// Writes `data` to a temporary file beside `url`, then renames it over `url`.
  public static func write(_ data: Data, to url: URL) throws {
    let directory = url.deletingLastPathComponent()
    let temporary = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    do {
      try data.write(to: temporary)
      if rename(temporary.path, url.path) != 0 { throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path]) }
    } catch {
      try? FileManager.default.removeItem(at: temporary)
      throw error
    }
  }
}
