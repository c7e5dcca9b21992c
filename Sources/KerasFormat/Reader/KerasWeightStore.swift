import ModelIR

/// One stored weight: its values, where they lie in the weights file (until
/// `KerasModelSnapshot.loadingLocatedWeights()` reads them), or why libhdf5 could not read them
/// (reported only when a layer needs it).
public enum KerasStoredWeight: Sendable, Equatable {
  case values(shape: [Int], values: [Float])
  /// Little-endian float32 values at a byte offset of the snapshot's file.
  case located(shape: [Int], offset: Int)
  case unreadable(String)

  /// The number of values, when known.
  var count: Int {
    switch self {
    case .values(_, let values): return values.count
    case .located(let shape, _): return shape.reduce(1) { $0.multipliedReportingOverflow(by: $1).partialValue }
    case .unreadable: return 0
    }
  }
}

/// Finds each layer's weight datasets through the `weight_names` attributes, never by rebuilding paths.
///
/// The top-level weight groups are named in `layer_names`; a nested model's group lists the weights
/// of all its inner layers, each named `.../<inner layer>/<weight>[:0]`. Everything is read when the
/// file is opened (`read(root:path:)`), so the store itself never calls libhdf5 and can cross a process
/// boundary (see `KerasModelSnapshot`).
struct KerasWeightStore: Sendable, Equatable {
  let path: String
  /// Top-level layer name → its `weight_names`, each also the dataset path relative to the layer group.
  let weightNames: [String: [String]]
  /// Top-level layer name → dataset path → values, for every layer group that exists.
  let datasets: [String: [String: KerasStoredWeight]]

  /// Reads every weight named in `layer_names`/`weight_names` under `root`.
  ///
  /// Refuses external links (they would open another file) and more than `KerasModelSnapshot.maximumWeightElements`
  /// values in all; a dataset libhdf5 cannot read is kept as `.unreadable` and reported if a layer uses it.
  /// With `locatingContiguous`, a dataset stored as one plain float32 run is kept `.located` (not read).
  static func read(root: HDF5Group, path: String, locatingContiguous: Bool = false) throws -> KerasWeightStore {
    // An attribute that exists but cannot be read is an error, not an empty list: read as empty, a layer
    // whose `weight_names` libhdf5 refused (a corrupt string length beyond the reader's memory) was
    // reported as missing its weights.
    func strings(_ group: HDF5Group, _ name: String) throws -> [String]? {
      do { return try group.stringArrayAttribute(name) } catch {
        throw KerasReaderError.hdf5(String(describing: error))
      }
    }
    let layerNames = try strings(root, "layer_names")
    var weightNames: [String: [String]] = [:]
    var datasets: [String: [String: KerasStoredWeight]] = [:]
    var total = 0
    for layer in layerNames ?? [] where datasets[layer] == nil {
      if let link = root.foreignLink(layer) { throw KerasReaderError.externalLink(path: path, object: link) }
      guard let group = root.group(layer) else { continue }
      let names = try strings(group, "weight_names") ?? []
      var stored: [String: KerasStoredWeight] = [:]
      for name in names where stored[name] == nil {
        if let link = group.foreignLink(name) { throw KerasReaderError.externalLink(path: path, object: link) }
        guard group.hasDataset(name) else { continue }
        do {
          let data = try group.floatDataset(name, locatingContiguous: locatingContiguous)
          let weight: KerasStoredWeight
          switch data {
          case .values(let shape, let values): weight = .values(shape: shape, values: values)
          case .located(let shape, let offset): weight = .located(shape: shape, offset: offset)
          }
          total += weight.count
          guard total <= KerasModelSnapshot.maximumWeightElements else {
            throw KerasReaderError.limitExceeded(
              path: path,
              detail: "more than \(KerasModelSnapshot.maximumWeightElements) weight values in all (2 GiB of float32)")
          }
          stored[name] = weight
        } catch let error as KerasReaderError {
          throw error
        } catch {
          stored[name] = .unreadable(String(describing: error))
        }
      }
      weightNames[layer] = names
      datasets[layer] = stored
    }
    return KerasWeightStore(path: path, weightNames: weightNames, datasets: datasets)
  }

  /// The weight kind of a stored name: `conv2d/kernel:0` → `kernel`.
  private static func kind(of weightName: String) -> String {
    let last = weightName.split(separator: "/").last.map(String.init) ?? weightName
    return last.split(separator: ":").first.map(String.init) ?? last
  }

  private func constant(_ stored: KerasStoredWeight) throws -> (shape: [Int], values: [Float]) {
    switch stored {
    case .values(let shape, let values): return (shape, values)
    case .unreadable(let detail): throw KerasReaderError.hdf5(detail)
    case .located: throw KerasReaderError.readerFailed(path: path, detail: "a weight was not loaded from the file")
    }
  }

  /// Reads one weight of a layer.
  ///
  /// - Parameters:
  ///   - kinds: accepted names for the weight (Keras 2 and 3 differ, e.g. `depthwise_kernel`/`kernel`).
  ///   - layer: the layer's own name.
  ///   - topLevel: the top-level layer (group) holding it: itself, or the outermost nested model.
  ///   - expectedShape: the shape the config implies, checked when given.
  ///   - direction: for the halves of a Bidirectional wrapper, `forward` or `backward`: only names with a
  ///     path component starting with `forward_` / `backward_` match.
  func weight(_ kinds: [String], layer: String, topLevel: String, expectedShape: [Int]?, direction: String? = nil)
    throws -> Constant
  {
    let names = weightNames[topLevel] ?? []
    let nested = topLevel != layer
    func inDirection(_ name: String) -> Bool {
      guard let direction else { return true }
      return name.split(separator: "/").contains { $0.hasPrefix(direction + "_") }
    }
    // Wrapped layers (Bidirectional, TimeDistributed) store weights one level deeper, under the inner layer.
    func owned(_ name: String) -> Bool {
      !nested || name.split(separator: "/").dropLast().contains { $0 == layer }
    }
    // Keras 1 names weights `<layer>_W`, `<layer>_b`, ...
    func kind(_ name: String) -> String {
      let stored = Self.kind(of: name)
      guard stored.hasPrefix(layer + "_") else { return stored }
      let suffix = String(stored.dropFirst(layer.count + 1))
      return KerasLegacyConfig.weightKinds[suffix] ?? suffix
    }
    let candidates = names.filter { kinds.contains(kind($0)) && owned($0) && inDirection($0) }
    // Several matches happen only in a nested group holding same-named inner layers; keep the first per kind order.
    guard let name = kinds.lazy.compactMap({ wanted in candidates.first { kind($0) == wanted } }).first,
      let stored = datasets[topLevel]?[name]
    else { throw KerasReaderError.missingWeight(path: path, layer: layer, weight: kinds[0]) }
    let data = try constant(stored)
    if let expectedShape, expectedShape != data.shape {
      throw KerasReaderError.weightShapeMismatch(
        path: path, layer: layer, weight: name, expected: expectedShape, actual: data.shape)
    }
    return Constant(shape: data.shape, values: data.values)
  }

  /// The stored names of a layer's weights: the whole group of a top-level layer, or the names with a
  /// path component naming the layer inside a nested model's group.
  func names(ownedBy layer: String, topLevel: String) -> [String] {
    (weightNames[topLevel] ?? []).filter {
      topLevel == layer || $0.split(separator: "/").dropLast().contains { $0 == layer }
    }
  }

  /// How many values the readable datasets hold.
  static func valueCount(_ datasets: [String: [String: KerasStoredWeight]]) -> Int {
    datasets.values.reduce(0) { total, group in
      group.values.reduce(total) { sum, stored in
        sum + stored.count
      }
    }
  }

  /// Every weight of a layer, in `weight_names` order (for custom layers, whose weights have no known kinds).
  func allWeights(layer: String, topLevel: String) throws -> [Constant] {
    let names = names(ownedBy: layer, topLevel: topLevel)
    guard let group = datasets[topLevel] else { return [] }
    return try names.map { name in
      guard let stored = group[name] else {
        throw KerasReaderError.missingWeight(path: path, layer: layer, weight: name)
      }
      let data = try constant(stored)
      return Constant(shape: data.shape, values: data.values)
    }
  }
}
