import Foundation
import ModelIR

/// Everything the converter needs from a Keras model file: the config text, the versions, and every
/// weight. `KerasModelFile` is built from one; the isolated reader (`KerasReaderIsolation`) makes one in
/// a child process and hands it over in `encoded()` form.
///
/// A weight stored as one plain float32 run in the `.h5` (Keras' usual layout) is `.located`: libhdf5
/// only says where its bytes are, and `loadingLocatedWeights()` reads them straight from the file into
/// their final arrays, once, after checking the file is the one libhdf5 read (`fileIdentity`).
public struct KerasModelSnapshot: Sendable, Equatable {
  /// At most 2^29 weight values (2 GiB of float32) in one model.
  public static let maximumWeightElements = GraphLimits.maxWeightCount

  /// The file the weights came from.
  public var path: String
  /// The architecture JSON.
  public var configText: String
  /// The file the architecture came from (the model itself, or `--architecture`).
  public var configPath: String
  public var kerasVersion: String?
  public var backend: String?
  /// Top-level layer name → the weight names of its group.
  public var weightNames: [String: [String]]
  /// Top-level layer name → weight name → values.
  public var weights: [String: [String: KerasStoredWeight]]
  /// The weights file as the reader found it, when any weight is `.located` in it.
  public var fileIdentity: FileIdentity?

  public init(
    path: String, configText: String, configPath: String, kerasVersion: String?, backend: String?,
    weightNames: [String: [String]], weights: [String: [String: KerasStoredWeight]], fileIdentity: FileIdentity? = nil
  ) {
    self.fileIdentity = fileIdentity
    self.path = path
    self.configText = configText
    self.configPath = configPath
    self.kerasVersion = kerasVersion
    self.backend = backend
    self.weightNames = weightNames
    self.weights = weights
  }
}

// MARK: - Reading in this process

extension KerasModelSnapshot {
  /// Reads a full model (`.h5` or `.keras`) in this process.
  public static func read(path: String) throws -> KerasModelSnapshot {
    switch try ModelFileFormat.check(path) {
    case .kerasArchive: return try KerasArchive.read(path: path)
    case .hdf5: break
    }
    let file = try openHDF5(path)
    return try HDF5Lock.run {
      let root = file.root
      guard let configText = try string(root, "model_config") else {
        let weightsOnly = root.hasAttribute("layer_names") || root.group("model_weights") != nil
        throw KerasReaderError.noModelConfig(path: path, weightsOnly: weightsOnly)
      }
      return try read(file: file, configText: configText, configPath: path)
    }
  }

  /// Reads a weights-only `.h5` with its architecture JSON in this process.
  public static func read(weightsPath: String, architectureJSONPath: String) throws -> KerasModelSnapshot {
    try InputFile.checkRegular(architectureJSONPath)
    let size = (try? FileManager.default.attributesOfItem(atPath: architectureJSONPath)[.size] as? Int) ?? 0
    guard size <= KerasArchive.maximumConfigBytes else {
      throw KerasReaderError.limitExceeded(
        path: architectureJSONPath, detail: "architecture JSON larger than \(KerasArchive.maximumConfigBytes >> 20) MiB"
      )
    }
    guard let configText = try? String(contentsOfFile: architectureJSONPath, encoding: .utf8) else {
      throw KerasReaderError.fileNotFound(path: architectureJSONPath)
    }
    guard try ModelFileFormat.check(weightsPath) == .hdf5 else {
      throw KerasReaderError.unsupportedFormat(
        path: weightsPath, what: "a .keras archive",
        advice: "a .keras file holds its architecture: convert it without a separate one")
    }
    let file = try openHDF5(weightsPath)
    return try HDF5Lock.run { try read(file: file, configText: configText, configPath: architectureJSONPath) }
  }

  private static func read(file: HDF5File, configText: String, configPath: String) throws -> KerasModelSnapshot {
    let root = file.root
    let identity = FileIdentity(path: file.path)
    if let link = root.foreignLink("model_weights") {
      throw KerasReaderError.externalLink(path: file.path, object: link)
    }
    let weightsRoot = root.group("model_weights") ?? root
    let store = try KerasWeightStore.read(root: weightsRoot, path: file.path, locatingContiguous: identity != nil)
    // The file must not have changed while libhdf5 read it: its offsets are used after it is closed.
    guard identity == FileIdentity(path: file.path) else {
      throw KerasReaderError.readerFailed(path: file.path, detail: "the file changed while it was being read")
    }
    return KerasModelSnapshot(
      path: file.path, configText: configText, configPath: configPath,
      kerasVersion: try string(root, "keras_version") ?? string(weightsRoot, "keras_version"),
      backend: try string(root, "backend") ?? string(weightsRoot, "backend"),
      weightNames: store.weightNames, weights: store.datasets, fileIdentity: identity)
  }

  static func openHDF5(_ path: String) throws -> HDF5File {
    try InputFile.checkRegular(path)
    do { return try HDF5File(path: path) } catch HDF5Error.notHDF5 {
      throw KerasReaderError.notHDF5(path: path)
    } catch { throw KerasReaderError.hdf5(String(describing: error)) }
  }

  private static func string(_ group: HDF5Group, _ name: String) throws -> String? {
    do { return try group.stringAttribute(name) } catch { throw KerasReaderError.hdf5(String(describing: error)) }
  }
}

// MARK: - The wire format between the reader process and the converter

/// `encoded()` / `decode(_:)`: a length-prefixed binary form, validated field by field on decoding.
///
/// Layout (little-endian): magic `MCKSNAP2`; a kind byte (0 snapshot, 1 error); for an error, a
/// string holding `KerasReaderError` as JSON; for a snapshot: path, config text, config path, optional
/// keras version, optional backend, optional file identity (a 0/1 byte, then 5 × u64: device, inode,
/// size, modification seconds and nanoseconds); the weight-name table (u32 count of (group, u32 count
/// of names)); the weights (u32 count of (group, u32 count of (name, tag 0 = values: u8 rank, rank ×
/// u64 dims, the float32 values; tag 1 = unreadable: a detail string; tag 2 = located: u8 rank, rank ×
/// u64 dims, u64 file offset))); and the trailer `END!`.
/// A string is a u32 byte count and UTF-8 bytes; an optional is a 0/1 byte then the value.
extension KerasModelSnapshot {
  static let magic = Array("MCKSNAP2".utf8)
  static let trailer = Array("END!".utf8)

  /// Writes the snapshot (or an error) in the wire format.
  struct Writer {
    var bytes: [UInt8] = []
    mutating func u8(_ value: UInt8) { bytes.append(value) }
    mutating func u32(_ value: Int) { withUnsafeBytes(of: UInt32(value).littleEndian) { bytes += $0 } }
    mutating func u64(_ value: Int) { withUnsafeBytes(of: UInt64(value).littleEndian) { bytes += $0 } }
    mutating func string(_ value: String) {
      let utf8 = Array(value.utf8)
      u32(utf8.count)
      bytes += utf8
    }
    mutating func optional(_ value: String?) {
      u8(value == nil ? 0 : 1)
      if let value { string(value) }
    }
    mutating func floats(_ values: [Float]) {
      #if _endian(little)
        values.withUnsafeBytes { bytes += $0 }
      #else
        for value in values { withUnsafeBytes(of: value.bitPattern.littleEndian) { bytes += $0 } }
      #endif
    }
  }

  /// The snapshot in the wire format.
  public func encoded() -> [UInt8] {
    var writer = Writer()
    // Room for the weights at once: growing a 100 MB buffer by doubling would copy it several times.
    writer.bytes.reserveCapacity(KerasWeightStore.valueCount(weights) * 4 + configText.utf8.count + 1 << 20)
    writer.bytes += Self.magic
    writer.u8(0)
    writer.string(path)
    writer.string(configText)
    writer.string(configPath)
    writer.optional(kerasVersion)
    writer.optional(backend)
    writer.u8(fileIdentity == nil ? 0 : 1)
    if let fileIdentity { for field in fileIdentity.fields { writer.u64(field) } }
    writer.u32(weightNames.count)
    for (group, names) in weightNames.sorted(by: { $0.key < $1.key }) {
      writer.string(group)
      writer.u32(names.count)
      for name in names { writer.string(name) }
    }
    writer.u32(weights.count)
    for (group, entries) in weights.sorted(by: { $0.key < $1.key }) {
      writer.string(group)
      writer.u32(entries.count)
      for (name, stored) in entries.sorted(by: { $0.key < $1.key }) {
        writer.string(name)
        switch stored {
        case .values(let shape, let values):
          writer.u8(0)
          writer.u8(UInt8(shape.count))
          for dimension in shape { writer.u64(dimension) }
          writer.floats(values)
        case .unreadable(let detail):
          writer.u8(1)
          writer.string(detail)
        case .located(let shape, let offset):
          writer.u8(2)
          writer.u8(UInt8(shape.count))
          for dimension in shape { writer.u64(dimension) }
          writer.u64(offset)
        }
      }
    }
    writer.bytes += Self.trailer
    return writer.bytes
  }

  /// An error in the wire format.
  static func encoded(error: KerasReaderError) -> [UInt8] {
    var writer = Writer()
    writer.bytes += magic
    writer.u8(1)
    let json = (try? JSONEncoder().encode(error)) ?? Data()
    writer.string(String(decoding: json, as: UTF8.self))
    writer.bytes += trailer
    return writer.bytes
  }

  /// Why decoding failed: the bytes are not a complete, well-formed message.
  struct FormatError: Error, CustomStringConvertible {
    var detail: String
    var description: String { "malformed reader output: \(detail)" }
  }

  /// Reads the wire format; returns the snapshot, or the error the reader reported.
  static func decode(_ bytes: [UInt8]) throws -> Result<KerasModelSnapshot, KerasReaderError> {
    var reader = Reader(bytes: bytes)
    guard Array(try reader.take(magic.count)) == magic else { throw FormatError(detail: "bad magic") }
    let kind = try reader.u8()
    let result: Result<KerasModelSnapshot, KerasReaderError>
    switch kind {
    case 1:
      let json = try reader.string()
      guard let error = try? JSONDecoder().decode(KerasReaderError.self, from: Data(json.utf8)) else {
        throw FormatError(detail: "unreadable error record")
      }
      result = .failure(error)
    case 0:
      let path = try reader.string()
      let configText = try reader.string()
      let configPath = try reader.string()
      let kerasVersion = try reader.optionalString()
      let backend = try reader.optionalString()
      var identity: FileIdentity?
      switch try reader.u8() {
      case 0: break
      case 1: identity = FileIdentity(fields: try (0..<5).map { _ in try reader.u64() })
      default: throw FormatError(detail: "bad file identity")
      }
      var weightNames: [String: [String]] = [:]
      for _ in 0..<(try reader.count(minimumItemBytes: 8)) {
        let group = try reader.string()
        var names: [String] = []
        for _ in 0..<(try reader.count(minimumItemBytes: 4)) { names.append(try reader.string()) }
        weightNames[group] = names
      }
      var weights: [String: [String: KerasStoredWeight]] = [:]
      var total = 0
      for _ in 0..<(try reader.count(minimumItemBytes: 8)) {
        let group = try reader.string()
        var entries: [String: KerasStoredWeight] = [:]
        for _ in 0..<(try reader.count(minimumItemBytes: 5)) {
          let name = try reader.string()
          let tag = try reader.u8()
          switch tag {
          case 0, 2:
            let rank = Int(try reader.u8())
            guard rank <= HDF5Limits.maximumRank else { throw FormatError(detail: "rank \(rank)") }
            var shape: [Int] = []
            var count = 1
            for _ in 0..<rank {
              let dimension = try reader.u64()
              let (product, overflow) = count.multipliedReportingOverflow(by: dimension)
              guard !overflow, product <= maximumWeightElements else { throw FormatError(detail: "weight too large") }
              shape.append(dimension)
              count = product
            }
            total += count
            guard total <= maximumWeightElements else { throw FormatError(detail: "too many weight values") }
            entries[name] =
              tag == 0
              ? .values(shape: shape, values: try reader.floats(count))
              : .located(shape: shape, offset: try reader.u64())
          case 1: entries[name] = .unreadable(try reader.string())
          default: throw FormatError(detail: "bad weight tag")
          }
        }
        weights[group] = entries
      }
      result = .success(
        KerasModelSnapshot(
          path: path, configText: configText, configPath: configPath, kerasVersion: kerasVersion, backend: backend,
          weightNames: weightNames, weights: weights, fileIdentity: identity))
    default: throw FormatError(detail: "bad kind \(kind)")
    }
    guard Array(try reader.take(trailer.count)) == trailer, reader.atEnd else {
      throw FormatError(detail: "bad trailer")
    }
    return result
  }

  struct Reader {
    let bytes: [UInt8]
    var offset = 0
    var atEnd: Bool { offset == bytes.count }
    var remaining: Int { bytes.count - offset }

    mutating func take(_ count: Int) throws -> ArraySlice<UInt8> {
      guard count >= 0, count <= remaining else { throw FormatError(detail: "truncated") }
      defer { offset += count }
      return bytes[offset..<(offset + count)]
    }
    mutating func u8() throws -> UInt8 { try take(1).first! }
    mutating func u32() throws -> Int { Int(try take(4).reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }) }
    mutating func u64() throws -> Int {
      let value = try take(8).reversed().reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
      guard value <= UInt64(Int.max) else { throw FormatError(detail: "number out of range") }
      return Int(value)
    }
    /// A count of items that each take at least `minimumItemBytes`: never more than the bytes left allow.
    mutating func count(minimumItemBytes: Int) throws -> Int {
      let count = try u32()
      guard count <= remaining / minimumItemBytes else { throw FormatError(detail: "count \(count) beyond the data") }
      return count
    }
    mutating func string() throws -> String {
      let length = try u32()
      guard let text = String(validating: try take(length), as: UTF8.self) else {
        throw FormatError(detail: "invalid UTF-8")
      }
      return text
    }
    mutating func optionalString() throws -> String? {
      switch try u8() {
      case 0: return nil
      case 1: return try string()
      default: throw FormatError(detail: "bad optional")
      }
    }
    mutating func floats(_ count: Int) throws -> [Float] {
      guard count <= remaining / 4 else { throw FormatError(detail: "truncated weights") }
      let slice = try take(count * 4)
      // Copied straight into uninitialized storage (no zero fill first: weights are most of the snapshot).
      var values = [Float](unsafeUninitializedCapacity: count) { buffer, initialized in
        slice.withUnsafeBytes { raw in UnsafeMutableRawBufferPointer(buffer).copyMemory(from: raw) }
        initialized = count
      }
      #if _endian(big)
        values = values.map { Float(bitPattern: UInt32(littleEndian: $0.bitPattern)) }
      #endif
      return values
    }
  }
}

extension KerasModelSnapshot {
  /// Decodes the wire format, throwing the reported error too (for tests and fuzzing).
  public static func decodeForTesting(_ bytes: [UInt8]) throws -> KerasModelSnapshot {
    try decode(bytes).get()
  }
}

// MARK: - Verification reference files

extension KerasModelSnapshot {
  /// The group of `weights` that holds a reference file's datasets.
  public static let referenceGroup = "reference"

  /// Reads a verification reference file (`inputs/<i>`, `outputs/<i>`, `pixels/<i>`, `pixels` and the
  /// `labels` attribute) into a snapshot: the datasets under `weights[referenceGroup]` by their paths,
  /// the labels as a JSON array in `configText` (empty when there are none). Run in the reader child
  /// for untrusted files, like a model.
  public static func readReference(path: String) throws -> KerasModelSnapshot {
    let file = try openHDF5(path)
    let root = file.root
    var datasets: [String: KerasStoredWeight] = [:]
    for group in ["inputs", "outputs", "pixels"] {
      var index = 0
      while index < 4096, root.hasDataset("\(group)/\(index)") {
        datasets["\(group)/\(index)"] = stored(root, "\(group)/\(index)")
        index += 1
      }
    }
    if root.hasDataset("pixels") { datasets["pixels"] = stored(root, "pixels") }
    var configText = ""
    do {
      if let labels = try root.stringArrayAttribute("labels"), let json = try? JSONEncoder().encode(labels) {
        configText = String(decoding: json, as: UTF8.self)
      }
    } catch { throw KerasReaderError.hdf5(String(describing: error)) }
    return KerasModelSnapshot(
      path: path, configText: configText, configPath: "labels", kerasVersion: nil, backend: nil, weightNames: [:],
      weights: [referenceGroup: datasets])
  }

  private static func stored(_ root: HDF5Group, _ name: String) -> KerasStoredWeight {
    do {
      let (shape, values) = try root.floatDataset(name)
      return .values(shape: shape, values: values)
    } catch { return .unreadable(String(describing: error)) }
  }

  /// A reference file read by `readReference`, in a child process when `KerasModelFile.isolation` is set.
  public static func reference(path: String) throws -> KerasModelSnapshot {
    if let isolation = KerasModelFile.isolation { return try isolation.read(.reference(path: path)) }
    return try readReference(path: path)
  }
}
