import CProtobufC
import CoreMLSpec
import Foundation

/// A neural-network `Model` packed one layer at a time as it is written.
///
/// Packing the whole message at once would hold the weights three times (the IR's, the message's and
/// the packed bytes). Here each float32 kernel is put in Core ML's layout only while its layer is
/// packed (`DeferredWeight`), and the bytes go straight to the sink: the result is the same canonical
/// encoding protobuf-c would produce for the whole message (fields in number order; checked against
/// `get_packed_size` when built), spliced by hand around the layers:
///
///     [Model fields before the network][network tag][network length]
///       [0x0A][layer 1 length][layer 1] ... [0x0A][layer n length][layer n]
///       [the network's other fields: preprocessing, labels, ...]
///
/// The network's `layers` (field 1) come first inside it and the network is the last field of the
/// `Model` that the writer sets, so the splice is exactly the field order protobuf-c packs.
final class StreamedSpecification: @unchecked Sendable {
  /// The layers one graph node became, with the weights to fill in while they are packed.
  struct LayerGroup {
    var layers: [UnsafeMutablePointer<NNLayer>]
    var weights: [DeferredWeight]
  }

  private let arena: MessageArena
  private let groups: [LayerGroup]
  private let layerSizes: [Int]
  /// The `Model` bytes up to and including the network's tag.
  private let head: [UInt8]
  /// The network's fields after its layers.
  private let tail: [UInt8]
  private let networkLength: Int
  /// Packing sets and clears the deferred weights' pointers: one writer at a time.
  private let lock = NSLock()
  /// The whole specification's size in bytes.
  let byteCount: Int

  /// `setLayers` attaches (or, with an empty list, detaches) the layers to the network inside `model`.
  init(
    arena: MessageArena, model: UnsafeMutablePointer<CoreML__Specification__Model>, groups: [LayerGroup],
    packNetwork: () -> [UInt8],
    setLayers: ([UnsafeMutablePointer<NNLayer>]) -> Void
  ) {
    self.arena = arena
    self.groups = groups
    let layers = groups.flatMap(\.layers)
    layerSizes = layers.map { core_ml__specification__neural_network_layer__get_packed_size($0) }
    setLayers([])
    let tail = packNetwork()
    let withoutLayers = Self.pack(model)
    // The packed model ends with the network: its tag, its length, then `tail`.
    let lengthBytes = Self.varint(tail.count)
    precondition(withoutLayers.count >= tail.count + lengthBytes.count + 1 && withoutLayers.suffix(tail.count).elementsEqual(tail)
      && withoutLayers.dropLast(tail.count).suffix(lengthBytes.count).elementsEqual(lengthBytes), "the network is not the model's last field")
    head = Array(withoutLayers.dropLast(tail.count + lengthBytes.count))
    self.tail = tail
    networkLength = layerSizes.reduce(tail.count) { $0 + 1 + Self.varint($1).count + $1 }
    byteCount = head.count + Self.varint(networkLength).count + networkLength
    setLayers(layers)
    precondition(core_ml__specification__model__get_packed_size(model) == byteCount, "spliced size differs from protobuf-c's")
  }

  /// Sends every byte of the specification to `sink`, in order; rethrows the sink's errors.
  func write(to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
    try lock.withLock {
      try head.withUnsafeBytes(sink)
      try Self.varint(networkLength).withUnsafeBytes(sink)
      var index = 0
      for group in groups {
        try Self.withValues(group.weights.map { $0.values() }) { pointers in
          for (weight, pointer) in zip(group.weights, pointers) { weight.params.pointee.floatvalue = pointer }
          defer { for weight in group.weights { weight.params.pointee.floatvalue = nil } }
          for layer in group.layers {
            let size = layerSizes[index]
            index += 1
            try ([0x0A] + Self.varint(size)).withUnsafeBytes(sink)
            // protobuf-c hands the float arrays to the sink as they are (little-endian): no packed copy.
            let packed = try Self.pack(layer, to: sink)
            precondition(packed == size, "protobuf-c packed \(packed) of \(size) bytes")
          }
        }
      }
      try tail.withUnsafeBytes(sink)
    }
  }

  /// The whole specification in memory.
  func bytes() -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(byteCount)
    try! write { bytes.append(contentsOf: $0) }  // appending cannot fail
    return bytes
  }

  /// Runs `body` with pointers to each array's storage (nil for an empty one), valid only inside it.
  private static func withValues<R>(
    _ arrays: [[Float]], from index: Int = 0, _ pointers: [UnsafeMutablePointer<Float>?] = [],
    _ body: ([UnsafeMutablePointer<Float>?]) throws -> R
  ) rethrows -> R {
    guard index < arrays.count else { return try body(pointers) }
    return try arrays[index].withUnsafeBufferPointer { buffer in
      // protobuf-c's pack only reads through the pointer.
      try withValues(arrays, from: index + 1, pointers + [UnsafeMutablePointer(mutating: buffer.baseAddress)], body)
    }
  }

  /// Packs one layer through protobuf-c's buffer interface into `sink`; returns the bytes packed.
  private static func pack(_ layer: UnsafeMutablePointer<NNLayer>, to sink: (UnsafeRawBufferPointer) throws -> Void) throws -> Int {
    final class Destination {
      let sink: (UnsafeRawBufferPointer) throws -> Void
      var error: (any Error)?
      init(_ sink: @escaping (UnsafeRawBufferPointer) throws -> Void) { self.sink = sink }
    }
    return try withoutActuallyEscaping(sink) { sink in
      let destination = Destination(sink)
      var buffer = mc_context_buffer(
        base: ProtobufCBuffer(append: { base, length, data in
          let context = UnsafeMutableRawPointer(base!).assumingMemoryBound(to: mc_context_buffer.self).pointee.context!
          let destination = Unmanaged<Destination>.fromOpaque(context).takeUnretainedValue()
          guard destination.error == nil, length > 0 else { return }
          do { try destination.sink(UnsafeRawBufferPointer(start: data, count: length)) } catch { destination.error = error }
        }),
        context: Unmanaged.passUnretained(destination).toOpaque())
      let packed = withExtendedLifetime(destination) {
        withUnsafeMutablePointer(to: &buffer) { pointer in
          pointer.withMemoryRebound(to: ProtobufCBuffer.self, capacity: 1) { core_ml__specification__neural_network_layer__pack_to_buffer(layer, $0) }
        }
      }
      if let error = destination.error { throw error }
      return packed
    }
  }

  static func pack(_ model: UnsafeMutablePointer<CoreML__Specification__Model>) -> [UInt8] {
    let size = core_ml__specification__model__get_packed_size(model)
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      initialized = size > 0 ? core_ml__specification__model__pack(model, buffer.baseAddress!) : 0
    }
  }

  /// A protobuf varint.
  static func varint(_ value: Int) -> [UInt8] {
    var value = UInt64(value)
    var bytes: [UInt8] = []
    while value >= 0x80 {
      bytes.append(UInt8(value & 0x7F) | 0x80)
      value >>= 7
    }
    bytes.append(UInt8(value))
    return bytes
  }
}
