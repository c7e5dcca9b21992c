import CZip
import Foundation
import ModelFormats

#if canImport(Glibc)
  import Glibc
#endif

/// Reads Keras 3's `.keras` format: a zip holding `config.json` (the serialized model),
/// `metadata.json` (`keras_version`) and `model.weights.h5`.
///
/// Only these named entries are read, into memory (the weights into a private temporary file for
/// libhdf5); nothing is extracted by path. Limits: at most `maximumEntries` entries, the config at
/// most 64 MiB, the metadata 1 MiB, the weights 2 GiB + 64 MiB, all entries together 4 GiB
/// uncompressed, and no entry over 1 MiB compressed more than 200:1.
///
/// The weights file names groups after the layer classes (`layers/dense_1/vars/0`, `1`, ...) with the
/// layer's real name in the `vars` group's `name` attribute; `read` maps them back to Keras' own weight
/// names (`dense_b/kernel`, `dense_b/bias`) so the importer sees the same store as for a legacy `.h5`.
public enum KerasArchive {
  public static let maximumEntries = 10_000
  public static let maximumConfigBytes = 64 << 20
  public static let maximumMetadataBytes = 1 << 20
  public static let maximumWeightsBytes = (2 << 30) + (64 << 20)
  public static let maximumTotalBytes: UInt64 = 4 << 30
  public static let maximumRatio: UInt64 = 200

  /// Reads a `.keras` file into a snapshot.
  public static func read(path: String) throws -> KerasModelSnapshot {
    let entries = try entries(path: path, limitsOnly: false)
    guard let configBytes = entries.config else {
      throw KerasReaderError.invalidArchive(path: path, detail: "no config.json")
    }
    guard let configText = String(validating: configBytes, as: UTF8.self) else {
      throw KerasReaderError.invalidConfig(path: path, detail: "config.json is not UTF-8 text")
    }
    var kerasVersion: String?
    if let metadata = entries.metadata, let json = try? JSONValue.parse(String(decoding: metadata, as: UTF8.self)) {
      kerasVersion = json["keras_version"]?.string
    }
    guard let weights = entries.weights else {
      throw KerasReaderError.invalidArchive(path: path, detail: "no model.weights.h5")
    }
    let config: JSONValue
    do { config = try JSONValue.parse(configText) } catch {
      throw KerasReaderError.invalidConfig(path: path, detail: "config.json is not valid JSON")
    }
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let weightsPath = directory.path + "/model.weights.h5"
    guard
      FileManager.default.createFile(
        atPath: weightsPath, contents: Data(weights), attributes: [.posixPermissions: 0o600])
    else {
      throw KerasReaderError.invalidArchive(path: path, detail: "cannot write a temporary copy of model.weights.h5")
    }
    let store: (names: [String: [String]], weights: [String: [String: KerasStoredWeight]])
    do {
      let file = try HDF5File(path: weightsPath)
      store = try HDF5Lock.run {
        var layout = WeightLayout(archivePath: path, file: file)
        return try layout.read(config: config)
      }
    } catch let error as KerasReaderError {
      throw error
    } catch {
      throw KerasReaderError.invalidArchive(path: path, detail: "model.weights.h5 is not a readable HDF5 file")
    }
    return KerasModelSnapshot(
      path: path, configText: configText, configPath: path, kerasVersion: kerasVersion, backend: nil,
      weightNames: store.names, weights: store.weights)
  }

  struct Entries {
    var config: [UInt8]?
    var metadata: [UInt8]?
    var weights: [UInt8]?
  }

  /// Opens the archive, checks the limits, and reads the three entries.
  static func entries(path: String, limitsOnly: Bool) throws -> Entries {
    try InputFile.checkRegular(path)
    var error: Int32 = 0
    guard let archive = zip_open(path, czip_rdonly() | czip_checkcons(), &error) else {
      throw KerasReaderError.invalidArchive(path: path, detail: "a damaged zip archive (libzip error \(error))")
    }
    defer { zip_discard(archive) }
    let count = zip_get_num_entries(archive, 0)
    guard count >= 0, count <= maximumEntries else {
      throw KerasReaderError.limitExceeded(
        path: path, detail: "the archive has \(count) entries (limit \(maximumEntries))")
    }
    var total: UInt64 = 0
    for index in 0..<UInt64(count) {
      var info = zip_stat_t()
      guard zip_stat_index(archive, index, 0, &info) == 0, info.valid & czip_stat_size() != 0 else {
        throw KerasReaderError.invalidArchive(path: path, detail: "entry \(index) is unreadable")
      }
      let (sum, overflow) = total.addingReportingOverflow(info.size)
      guard !overflow, sum <= maximumTotalBytes else {
        throw KerasReaderError.limitExceeded(
          path: path, detail: "the archive unpacks to more than \(maximumTotalBytes >> 30) GiB")
      }
      total = sum
    }
    func locate(_ name: String) -> Int64? {
      let index = zip_name_locate(archive, name, czip_fl_enc_raw())
      return index >= 0 ? index : nil
    }
    let config = locate("config.json")
    let weights = locate("model.weights.h5")
    if config == nil && weights == nil {
      throw KerasReaderError.unsupportedFormat(
        path: path, what: "a zip archive without config.json and model.weights.h5 (so not a Keras .keras file)",
        advice: "give a Keras model saved with model.save(\"model.keras\") or model.save(\"model.h5\")")
    }
    func read(_ index: Int64?, _ name: String, limit: Int) throws -> [UInt8]? {
      guard let index else { return nil }
      var info = zip_stat_t()
      guard zip_stat_index(archive, UInt64(index), 0, &info) == 0, info.valid & czip_stat_size() != 0 else {
        throw KerasReaderError.invalidArchive(path: path, detail: "\(name) is unreadable")
      }
      guard info.size <= UInt64(limit) else {
        throw KerasReaderError.limitExceeded(path: path, detail: "\(name) is \(info.size) bytes (limit \(limit))")
      }
      let compressed = info.valid & czip_stat_comp_size() != 0 ? info.comp_size : info.size
      guard info.size <= 1 << 20 || info.size / max(compressed, 1) <= maximumRatio else {
        throw KerasReaderError.limitExceeded(
          path: path,
          detail: "\(name) is compressed \(info.size / max(compressed, 1)):1 (limit \(maximumRatio):1): a zip bomb?")
      }
      guard let file = zip_fopen_index(archive, UInt64(index), 0) else {
        throw KerasReaderError.invalidArchive(
          path: path, detail: "cannot open \(name) (encrypted or an unknown compression method?)")
      }
      defer { zip_fclose(file) }
      let size = Int(info.size)
      var bytes = [UInt8](repeating: 0, count: size + 1)
      var filled = 0
      while filled <= size {
        let got = bytes.withUnsafeMutableBytes { zip_fread(file, $0.baseAddress! + filled, UInt64(size + 1 - filled)) }
        guard got >= 0 else {
          throw KerasReaderError.invalidArchive(path: path, detail: "\(name) is damaged (bad data or checksum)")
        }
        if got == 0 { break }
        filled += Int(got)
      }
      guard filled == size else {
        throw KerasReaderError.invalidArchive(
          path: path, detail: "\(name) holds \(filled) bytes, its header says \(size)")
      }
      bytes.removeLast()
      return bytes
    }
    return Entries(
      config: try read(config, "config.json", limit: maximumConfigBytes),
      metadata: try read(locate("metadata.json"), "metadata.json", limit: maximumMetadataBytes),
      weights: limitsOnly ? nil : try read(weights, "model.weights.h5", limit: maximumWeightsBytes))
  }

  /// A private temporary folder (mode 0700), removed with its contents by `remove()`.
  struct TemporaryDirectory {
    let path: String
    init() throws {
      var template = Array((NSTemporaryDirectory() + "/modelconv.XXXXXX").utf8CString)
      guard let made = template.withUnsafeMutableBufferPointer({ mkdtemp($0.baseAddress!) }) else {
        throw KerasReaderError.readerFailed(path: NSTemporaryDirectory(), detail: "cannot create a temporary folder")
      }
      path = String(cString: made)
    }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
  }
}

/// Maps the `.keras` weights layout back to Keras weight names, walking the model config.
private struct WeightLayout {
  let archivePath: String
  let file: HDF5File
  var total = 0

  init(archivePath: String, file: HDF5File) {
    self.archivePath = archivePath
    self.file = file
  }

  mutating func read(config: JSONValue) throws -> (
    names: [String: [String]], weights: [String: [String: KerasStoredWeight]]
  ) {
    let model = config["config"] ?? .null
    let layers = model["layers"]?.array ?? []
    let groups = layerGroups(layers, in: file.root, sequential: config["class_name"]?.string == "Sequential")
    var names: [String: [String]] = [:]
    var weights: [String: [String: KerasStoredWeight]] = [:]
    for (layer, group) in zip(layers, groups) {
      guard let name = layerName(layer), let group, names[name] == nil else { continue }
      var collected: [(String, KerasStoredWeight)] = []
      try collect(layer, group: group, prefix: name, into: &collected)
      names[name] = collected.map(\.0)
      weights[name] = Dictionary(collected, uniquingKeysWith: { first, _ in first })
    }
    return (names, weights)
  }

  private func layerName(_ layer: JSONValue) -> String? { layer["config"]?["name"]?.string ?? layer["name"]?.string }

  /// The weights group of each config layer: by the `vars` group's `name` attribute, else by Keras'
  /// naming rule (snake-cased class name, `_1`, `_2`, ... for repeats; Sequential skips its InputLayer).
  private func layerGroups(_ layers: [JSONValue], in parent: HDF5Group, sequential: Bool) -> [HDF5Group?] {
    guard let container = parent.group("layers") else { return layers.map { _ in nil } }
    var byName: [String: HDF5Group] = [:]
    for child in container.childNames() {
      guard let group = container.group(child), let vars = group.group("vars"),
        let name = try? vars.stringAttribute("name")
      else { continue }
      byName[name] = group
    }
    var used: [String: Int] = [:]
    return layers.map { layer in
      let className = layer["class_name"]?.string ?? ""
      if sequential && className == "InputLayer" { return nil }
      let base = Self.snakeCase(className)
      let generated = used[base].map { "\(base)_\($0)" } ?? base
      used[base, default: 0] += 1
      if let name = layerName(layer), let group = byName[name] { return group }
      return container.group(generated)
    }
  }

  /// Keras' `to_snake_case`.
  static func snakeCase(_ name: String) -> String {
    let characters = Array(name.filter { $0.isLetter || $0.isNumber || $0 == "_" })
    var result = ""
    for (index, character) in characters.enumerated() {
      if character.isUppercase && index > 0 {
        let previous = characters[index - 1]
        let next = index + 1 < characters.count ? characters[index + 1] : nil
        if previous.isLowercase || (next?.isLowercase == true && previous != "_") { result += "_" }
      }
      result.append(character)
    }
    return result.lowercased()
  }

  /// Weight kinds of a layer class, in the order Keras 3 stores them: a fact of the layer registry.
  private static func kinds(_ className: String, _ config: JSONValue) -> [String] {
    KerasLayerRegistry.storedWeightKinds(className, config: config)
  }

  private mutating func collect(
    _ layer: JSONValue, group: HDF5Group, prefix: String, into collected: inout [(String, KerasStoredWeight)]
  ) throws {
    let className = layer["class_name"]?.string ?? ""
    let config = layer["config"] ?? .null
    switch className {
    case "Sequential", "Functional", "Model":
      let inner = config["layers"]?.array ?? []
      let groups = layerGroups(inner, in: group, sequential: className == "Sequential")
      for (child, childGroup) in zip(inner, groups) {
        guard let name = layerName(child), let childGroup else { continue }
        try collect(child, group: childGroup, prefix: name, into: &collected)
      }
    case "Bidirectional":
      let forward = config["layer"] ?? .null
      let backward = config["backward_layer"] ?? forward
      let innerName = layerName(forward) ?? "rnn"
      if let group = group.group("forward_layer") {
        try collect(forward, group: group, prefix: "\(prefix)/forward_\(innerName)", into: &collected)
      }
      if let group = group.group("backward_layer") {
        try collect(
          backward, group: group, prefix: "\(prefix)/backward_\(layerName(backward) ?? innerName)", into: &collected)
      }
    case "TimeDistributed":
      let inner = config["layer"] ?? .null
      if let group = group.group("layer") {
        try collect(inner, group: group, prefix: "\(prefix)/\(layerName(inner) ?? "layer")", into: &collected)
      }
    case "SimpleRNN", "LSTM", "GRU":
      if let cell = group.group("cell") {
        try variables(cell, kinds: Self.kinds(className + "Cell", config), prefix: prefix + "/cell", into: &collected)
      }
    default:
      try variables(group, kinds: Self.kinds(className, config), prefix: prefix, into: &collected)
    }
  }

  /// `vars/0`, `vars/1`, ... of a layer group, named by `kinds` (extra ones `var<i>`).
  private mutating func variables(
    _ group: HDF5Group, kinds: [String], prefix: String, into collected: inout [(String, KerasStoredWeight)]
  ) throws {
    guard let vars = group.group("vars") else { return }
    var index = 0
    while vars.hasDataset(String(index)) {
      if let link = vars.foreignLink(String(index)) {
        throw KerasReaderError.externalLink(path: archivePath, object: link)
      }
      let name = prefix + "/" + (index < kinds.count ? kinds[index] : "var\(index)")
      do {
        let data = try vars.floatDataset(String(index))
        total += data.values.count
        guard total <= KerasModelSnapshot.maximumWeightElements else {
          throw KerasReaderError.limitExceeded(
            path: archivePath,
            detail: "more than \(KerasModelSnapshot.maximumWeightElements) weight values in all (2 GiB of float32)")
        }
        collected.append((name, .values(shape: data.shape, values: data.values)))
      } catch let error as KerasReaderError {
        throw error
      } catch {
        collected.append((name, .unreadable("\(archivePath): model.weights.h5: \(error)")))
      }
      index += 1
      guard index < 1 << 16 else { break }
    }
  }
}
