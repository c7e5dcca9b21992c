import Foundation
import ModelIR

#if canImport(Glibc)
  import Glibc
#endif

/// Which file a path named when it was read: weights located by libhdf5 in one process are read by
/// offset in another, so the file must be the same one, unchanged.
public struct FileIdentity: Sendable, Equatable {
  public var device: Int
  public var inode: Int
  public var size: Int
  public var modificationSeconds: Int
  public var modificationNanoseconds: Int

  init(_ info: stat) {
    device = Int(truncatingIfNeeded: info.st_dev)
    inode = Int(truncatingIfNeeded: info.st_ino)
    size = Int(info.st_size)
    modificationSeconds = Int(info.st_mtim.tv_sec)
    modificationNanoseconds = Int(info.st_mtim.tv_nsec)
  }

  /// The identity of the file at `path` now, or nil when it cannot be read.
  init?(path: String) {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    self.init(info)
  }

  /// The wire form's fields, in order (each fits an `Int`: `u64` on the wire).
  var fields: [Int] {
    [device, inode, size, modificationSeconds, modificationNanoseconds].map { $0 < 0 ? 0 : $0 }
  }

  init(fields: [Int]) {
    (device, inode, size, modificationSeconds, modificationNanoseconds) = (
      fields[0], fields[1], fields[2], fields[3], fields[4]
    )
  }
}

extension KerasModelSnapshot {
  /// Whether any weight is still `.located` in the file.
  public var hasLocatedWeights: Bool {
    weights.values.contains { $0.values.contains { if case .located = $0 { return true } else { return false } } }
  }

  /// The snapshot with every `.located` weight read from `path`: each value is read once, from the file
  /// straight into the array the converter keeps.
  ///
  /// Refuses a file that is no longer the one the reader saw (`fileIdentity`: replaced or modified since).
  /// A location outside the file, or a failed read, makes that weight `.unreadable`, reported only if a
  /// layer uses it, like any dataset libhdf5 cannot read.
  public func loadingLocatedWeights() throws -> KerasModelSnapshot {
    guard hasLocatedWeights else { return self }
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { throw KerasReaderError.fileNotFound(path: path) }
    defer { close(fd) }
    var info = stat()
    guard fstat(fd, &info) == 0, let expected = fileIdentity, FileIdentity(info) == expected else {
      throw KerasReaderError.readerFailed(
        path: path, detail: "the file changed while it was being read; convert it again")
    }
    let fileSize = Int(info.st_size)
    let located = weights.flatMap { group, entries in
      entries.compactMap { name, stored -> (group: String, name: String, shape: [Int], offset: Int)? in
        guard case .located(let shape, let offset) = stored else { return nil }
        return (group, name, shape, offset)
      }
    }
    // On every core: most of the time goes to the kernel providing fresh pages and copying into them.
    let results = UnsafeMutableBufferPointer<KerasStoredWeight>.allocate(capacity: located.count)
    defer { results.deallocate() }
    nonisolated(unsafe) let slots = results  // each iteration initializes its own slot
    DispatchQueue.concurrentPerform(iterations: located.count) { index in
      let item = located[index]
      (slots.baseAddress! + index).initialize(
        to: Self.load(
          fd: fd, fileSize: fileSize, shape: item.shape, offset: item.offset,
          what: "\(path): \(item.group)/\(item.name)"))
    }
    var loaded = self
    for (index, item) in located.enumerated() {
      loaded.weights[item.group]![item.name] = (results.baseAddress! + index).move()
    }
    loaded.fileIdentity = nil
    return loaded
  }

  /// One located weight: `shape`'s element count of little-endian float32 values at `offset`.
  static func load(fd: Int32, fileSize: Int, shape: [Int], offset: Int, what: String) -> KerasStoredWeight {
    var count = 1
    for dimension in shape {
      let (product, overflow) = count.multipliedReportingOverflow(by: dimension)
      guard !overflow, dimension >= 0, product <= maximumWeightElements else {
        return .unreadable("\(what): shape \(shape) is too large")
      }
      count = product
    }
    let bytes = count * 4
    let (end, overflow) = offset.addingReportingOverflow(bytes)
    guard offset >= 0, !overflow, end <= fileSize else {
      return .unreadable(
        "\(what): its \(bytes) bytes at offset \(offset) lie beyond the end of the file (\(fileSize) bytes)")
    }
    var failed = false
    let raw = Constant.newValues(count: count) { buffer in
      let base = UnsafeMutableRawPointer(buffer.baseAddress)
      var done = 0
      while done < bytes, let base {
        let got = pread(fd, base + done, bytes - done, off_t(offset + done))
        if got < 0 && errno == EINTR { continue }
        guard got > 0 else {
          failed = true
          break
        }
        done += got
      }
      // Every element is initialized even after a failed read (the array is then discarded).
      if failed, let base { memset(base + done, 0, bytes - done) }
    }
    if failed { return .unreadable("\(what): reading its \(bytes) bytes at offset \(offset) failed") }
    #if _endian(big)
      let values = raw.map { Float(bitPattern: UInt32(littleEndian: $0.bitPattern)) }
    #else
      let values = raw
    #endif
    return .values(shape: shape, values: values)
  }
}
