import ModelIR

/// Finds each layer's weight datasets through the `weight_names` attributes, never by rebuilding paths.
///
/// The top-level weight groups are named in `layer_names`; a nested model's group lists the weights
/// of all its inner layers, each named `.../<inner layer>/<weight>[:0]`.
struct KerasWeightStore {
  let root: HDF5Group
  let path: String
  /// Top-level layer name → its `weight_names`, each also the dataset path relative to the layer group.
  private var weightNames: [String: [String]] = [:]

  init(root: HDF5Group, path: String) throws {
    self.root = root
    self.path = path
    let layerNames = (try? root.stringArrayAttribute("layer_names")) ?? nil
    for layer in layerNames ?? [] {
      guard let group = root.group(layer) else { continue }
      weightNames[layer] = (try? group.stringArrayAttribute("weight_names")) ?? []
    }
  }

  /// The weight kind of a stored name: `conv2d/kernel:0` → `kernel`.
  private static func kind(of weightName: String) -> String {
    let last = weightName.split(separator: "/").last.map(String.init) ?? weightName
    return last.split(separator: ":").first.map(String.init) ?? last
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
  func weight(_ kinds: [String], layer: String, topLevel: String, expectedShape: [Int]?, direction: String? = nil) throws -> Constant {
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
      let group = root.group(topLevel), group.hasDataset(name)
    else { throw KerasReaderError.missingWeight(path: path, layer: layer, weight: kinds[0]) }
    // The declared shape is checked against the config before the data is read (and allocated).
    if let expectedShape {
      let declared: [Int]
      do { declared = try group.datasetShape(name) } catch { throw KerasReaderError.hdf5(String(describing: error)) }
      if expectedShape != declared {
        throw KerasReaderError.weightShapeMismatch(path: path, layer: layer, weight: name, expected: expectedShape, actual: declared)
      }
    }
    let data: (shape: [Int], values: [Float])
    do { data = try group.floatDataset(name) } catch { throw KerasReaderError.hdf5(String(describing: error)) }
    if let expectedShape, expectedShape != data.shape {
      throw KerasReaderError.weightShapeMismatch(path: path, layer: layer, weight: name, expected: expectedShape, actual: data.shape)
    }
    return Constant(shape: data.shape, values: data.values)
  }

  /// Every weight of a layer, in `weight_names` order (for custom layers, whose weights have no known kinds).
  func allWeights(layer: String, topLevel: String) throws -> [Constant] {
    let names = (weightNames[topLevel] ?? []).filter { topLevel == layer || $0.split(separator: "/").dropLast().contains { $0 == layer } }
    guard let group = root.group(topLevel) else { return [] }
    return try names.map { name in
      guard group.hasDataset(name) else { throw KerasReaderError.missingWeight(path: path, layer: layer, weight: name) }
      do {
        let data = try group.floatDataset(name)
        return Constant(shape: data.shape, values: data.values)
      } catch { throw KerasReaderError.hdf5(String(describing: error)) }
    }
  }
}
