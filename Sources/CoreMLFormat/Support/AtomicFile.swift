import Foundation

/// Writes files so that readers never see a partial file and failures leave nothing behind.
public enum AtomicFile {
  /// Writes `bytes` (without copying them into a `Data`) like `write(_:to:)`.
  public static func write(bytes: [UInt8], to url: URL) throws {
    try bytes.withUnsafeBytes { buffer in
      let data = Data(bytesNoCopy: UnsafeMutableRawPointer(mutating: buffer.baseAddress ?? UnsafeRawPointer(bitPattern: 1)!), count: buffer.count, deallocator: .none)
      try write(data, to: url)
    }
  }

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
