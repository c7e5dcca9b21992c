import CProtobufC
import CoreMLSpec
import Foundation

/// A `Model` unpacked by protobuf-c, which mutations change in place before it is packed again.
///
/// Messages a mutation allocates are owned here, not by the unpacked tree: every pointer a mutation
/// replaces is put back (with its oneof case) before `free_unpacked` runs, and the new memory is freed
/// separately, so nothing is freed twice and nothing leaks.
final class UnpackedModel {
  private let storage: UnsafeMutableBufferPointer<UInt8>
  let model: UnsafeMutablePointer<CoreML__Specification__Model>
  private var allocations: [UnsafeMutableRawPointer] = []
  private var restores: [() -> Void] = []

  init(_ bytes: [UInt8]) throws {
    // protobuf-c may point into the input; keep a private copy alive until the tree is freed.
    let storage = UnsafeMutableBufferPointer<UInt8>.allocate(capacity: max(bytes.count, 1))
    _ = storage.initialize(from: bytes)
    guard !bytes.isEmpty, let model = core_ml__specification__model__unpack(nil, bytes.count, storage.baseAddress)
    else {
      storage.deallocate()
      throw CoreMLMutationError.malformed
    }
    self.storage = storage
    self.model = model
  }

  deinit {
    for restore in restores.reversed() { restore() }
    core_ml__specification__model__free_unpacked(model, nil)
    for pointer in allocations { free(pointer) }
    storage.deallocate()
  }

  /// The model serialized again.
  func packed() -> [UInt8] {
    var bytes = [UInt8](repeating: 0, count: core_ml__specification__model__get_packed_size(model))
    _ = bytes.withUnsafeMutableBufferPointer { core_ml__specification__model__pack(model, $0.baseAddress) }
    return bytes
  }

  /// Runs `restore` before the unpacked tree is freed (to put back a replaced pointer).
  func onFree(_ restore: @escaping () -> Void) { restores.append(restore) }

  /// A new message owned by this model, initialised by its protobuf-c `__init` function.
  func message<T>(_ initialize: (UnsafeMutablePointer<T>?) -> Void) -> UnsafeMutablePointer<T> {
    let pointer = allocate(T.self, count: 1)
    initialize(pointer)
    return pointer
  }

  /// A new C array owned by this model.
  func array<T>(_ items: [T]) -> UnsafeMutablePointer<T> {
    let pointer = allocate(T.self, count: max(items.count, 1))
    for (index, item) in items.enumerated() { (pointer + index).initialize(to: item) }
    return pointer
  }

  private func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
    let raw = calloc(count, MemoryLayout<T>.stride)!
    allocations.append(raw)
    return raw.bindMemory(to: T.self, capacity: count)
  }

  // MARK: The neural network inside

  typealias Layer = CoreML__Specification__NeuralNetworkLayer
  typealias Preprocessing = CoreML__Specification__NeuralNetworkPreprocessing

  /// The layers of the neural network, classifier or regressor.
  var layers: [UnsafeMutablePointer<Layer>] {
    let m = model.pointee
    let (pointer, count): (UnsafeMutablePointer<UnsafeMutablePointer<Layer>?>?, Int)
    switch m.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER:
      guard let n = m.neuralnetworkclassifier else { return [] }
      (pointer, count) = (n.pointee.layers, n.pointee.n_layers)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK:
      guard let n = m.neuralnetwork else { return [] }
      (pointer, count) = (n.pointee.layers, n.pointee.n_layers)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR:
      guard let n = m.neuralnetworkregressor else { return [] }
      (pointer, count) = (n.pointee.layers, n.pointee.n_layers)
    default: return []
    }
    guard let pointer, count > 0 else { return [] }
    return UnsafeBufferPointer(start: pointer, count: count).compactMap { $0 }
  }

  var isNeuralNetwork: Bool {
    let m = model.pointee
    switch m.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER: return m.neuralnetworkclassifier != nil
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK: return m.neuralnetwork != nil
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR: return m.neuralnetworkregressor != nil
    default: return false
    }
  }

  /// The preprocessing entries of the network.
  var preprocessing: [UnsafeMutablePointer<Preprocessing>] {
    let (pointer, count) = preprocessingField
    guard let pointer, count > 0 else { return [] }
    return UnsafeBufferPointer(start: pointer, count: count).compactMap { $0 }
  }

  private var preprocessingField: (UnsafeMutablePointer<UnsafeMutablePointer<Preprocessing>?>?, Int) {
    let m = model.pointee
    switch m.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER:
      guard let n = m.neuralnetworkclassifier else { return (nil, 0) }
      return (n.pointee.preprocessing, n.pointee.n_preprocessing)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK:
      guard let n = m.neuralnetwork else { return (nil, 0) }
      return (n.pointee.preprocessing, n.pointee.n_preprocessing)
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR:
      guard let n = m.neuralnetworkregressor else { return (nil, 0) }
      return (n.pointee.preprocessing, n.pointee.n_preprocessing)
    default: return (nil, 0)
    }
  }

  private func setPreprocessingField(
    _ pointer: UnsafeMutablePointer<UnsafeMutablePointer<Preprocessing>?>?, _ count: Int
  ) {
    let m = model.pointee
    switch m.type_case {
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER:
      m.neuralnetworkclassifier?.pointee.preprocessing = pointer
      m.neuralnetworkclassifier?.pointee.n_preprocessing = count
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK:
      m.neuralnetwork?.pointee.preprocessing = pointer
      m.neuralnetwork?.pointee.n_preprocessing = count
    case CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_REGRESSOR:
      m.neuralnetworkregressor?.pointee.preprocessing = pointer
      m.neuralnetworkregressor?.pointee.n_preprocessing = count
    default: break
    }
  }

  /// Appends a scaler for `feature` (scale 1, no biases) and returns it; the original list is put back before freeing.
  func addScaler(for feature: UnsafeMutablePointer<CChar>) -> UnsafeMutablePointer<
    CoreML__Specification__NeuralNetworkImageScaler
  > {
    let scaler = message(core_ml__specification__neural_network_image_scaler__init)
    scaler.pointee.channelscale = 1
    let entry = message(core_ml__specification__neural_network_preprocessing__init)
    entry.pointee.featurename = feature
    entry.pointee.preprocessor_case = CORE_ML__SPECIFICATION__NEURAL_NETWORK_PREPROCESSING__PREPROCESSOR_SCALER
    entry.pointee.scaler = scaler
    let (old, count) = preprocessingField
    var items: [UnsafeMutablePointer<Preprocessing>?] =
      old.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
    items.append(entry)
    setPreprocessingField(array(items), items.count)
    onFree { [unowned self] in self.setPreprocessingField(old, count) }
    return scaler
  }

  /// The image inputs of the model description.
  var imageInputs:
    [(name: UnsafeMutablePointer<CChar>, type: UnsafeMutablePointer<CoreML__Specification__ImageFeatureType>)]
  {
    guard let description = model.pointee.description?.pointee, let inputs = description.input, description.n_input > 0
    else { return [] }
    return UnsafeBufferPointer(start: inputs, count: description.n_input).compactMap { feature in
      guard let feature, let name = feature.pointee.name, let type = feature.pointee.type,
        type.pointee.type_case == CORE_ML__SPECIFICATION__FEATURE_TYPE__TYPE_IMAGE_TYPE,
        let image = type.pointee.imagetype
      else { return nil }
      return (name, image)
    }
  }
}
