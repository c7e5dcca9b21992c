import CProtobufC
import CoreMLSpec
import Foundation
import ModelIR

package typealias NNLayer = CoreML__Specification__NeuralNetworkLayer
package typealias WeightParams = CoreML__Specification__WeightParams
package typealias MILOperationMessage = CoreML__Specification__MILSpec__Operation
package typealias MILValueMessage = CoreML__Specification__MILSpec__Value

/// A neural-network `Model` packed one layer at a time as it is written.
///
/// Packing the whole message at once would hold the weights three times (the IR's, the message's and
/// the packed bytes). Here each weight (float32 or float16) is put in Core ML's layout only while its
/// layer is packed, 1 MiB at a time (`DeferredWeight`, `withDeferredWeights`), and the bytes go to the
/// sink: beyond the IR, writing needs about 1 MiB whatever the model. The result is the same canonical
/// encoding protobuf-c would produce for the whole message (fields in number order; checked against
/// `get_packed_size` when built), spliced by hand around the layers:
///
///     [Model fields before the network][network tag][network length]
///       [0x0A][layer 1 length][layer 1] ... [0x0A][layer n length][layer n]
///       [the network's other fields: preprocessing, labels, ...]
///
/// The network's `layers` (field 1) come first inside it and the network is the last field of the
/// `Model` that the writer sets, so the splice is exactly the field order protobuf-c packs.
package final class StreamedSpecification: @unchecked Sendable {
  /// The layers one graph node became, with the weights to fill in while they are packed.
  package struct LayerGroup {
    var layers: [UnsafeMutablePointer<NNLayer>]
    var weights: [DeferredWeight]

    package init(layers: [UnsafeMutablePointer<NNLayer>], weights: [DeferredWeight]) {
      self.layers = layers
      self.weights = weights
    }
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
  package let byteCount: Int

  /// `setLayers` attaches (or, with an empty list, detaches) the layers to the network inside `model`.
  package init(
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
    precondition(
      withoutLayers.count >= tail.count + lengthBytes.count + 1 && withoutLayers.suffix(tail.count).elementsEqual(tail)
        && withoutLayers.dropLast(tail.count).suffix(lengthBytes.count).elementsEqual(lengthBytes),
      "the network is not the model's last field")
    head = Array(withoutLayers.dropLast(tail.count + lengthBytes.count))
    self.tail = tail
    networkLength = layerSizes.reduce(tail.count) { $0 + 1 + Self.varint($1).count + $1 }
    byteCount = head.count + Self.varint(networkLength).count + networkLength
    setLayers(layers)
    precondition(
      core_ml__specification__model__get_packed_size(model) == byteCount, "spliced size differs from protobuf-c's")
  }

  /// Sends every byte of the specification to `sink`, in order; rethrows the sink's errors.
  package func write(to sink: (UnsafeRawBufferPointer) throws -> Void) throws {
    try lock.withLock {
      try head.withUnsafeBytes(sink)
      try Self.varint(networkLength).withUnsafeBytes(sink)
      var index = 0
      for group in groups {
        try Self.withDeferredWeights(group.weights, sink: sink) { buffer in
          for layer in group.layers {
            let size = layerSizes[index]
            index += 1
            try ([0x0A] + Self.varint(size)).withUnsafeBytes(sink)
            let packed = core_ml__specification__neural_network_layer__pack_to_buffer(layer, buffer)
            precondition(packed == size, "protobuf-c packed \(packed) of \(size) bytes")
          }
        }
      }
      try tail.withUnsafeBytes(sink)
    }
  }

  /// The whole specification in memory.
  package func bytes() -> [UInt8] {
    var bytes: [UInt8] = []
    bytes.reserveCapacity(byteCount)
    try! write { bytes.append(contentsOf: $0) }  // appending cannot fail
    return bytes
  }

  /// Runs `body` with a protobuf-c buffer that sends what is packed into it to `sink`, while `weights`
  /// point at stand-ins that the buffer replaces with their values.
  ///
  /// protobuf-c hands a packed float32 field (and a `bytes` field) to its buffer as one `append` of the
  /// array's own memory (little-endian). Each deferred weight's `floatValue` (or `float16Value`)
  /// therefore points into a reserved, inaccessible address range (address space only: no memory behind
  /// it, nothing resident); when protobuf-c appends exactly that weight's range, its values are produced
  /// in Core ML's layout a block at a time and sent instead. Every deferred weight must be sent so,
  /// whole and once (checked); protobuf-c reading the range itself would fault, never write other numbers.
  private static func withDeferredWeights(
    _ weights: [DeferredWeight], sink: (UnsafeRawBufferPointer) throws -> Void,
    _ body: (UnsafeMutablePointer<ProtobufCBuffer>) throws -> Void
  ) throws {
    let offsets = weights.reduce(into: [0]) { $0.append($0.last! + $1.byteCount) }
    let total = offsets.last!
    var region: UnsafeMutableRawPointer?
    if total > 0 {
      let mapped = mmap(nil, total, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
      guard let mapped, mapped != MAP_FAILED else {
        throw CoreMLWriterError.invalidOption("cannot reserve \(total) bytes of address space for the weights")
      }
      region = mapped
    }
    for (weight, offset) in zip(weights, offsets) where weight.values.count > 0 { weight.attach(region! + offset) }
    defer {
      for weight in weights { weight.attach(nil) }
      if let region { munmap(region, total) }
    }
    try withoutActuallyEscaping(sink) { sink in
      let destination = WeightDestination(
        sink: sink, weights: weights, region: region.map { UnsafeRawPointer($0) }, offsets: offsets)
      var buffer = mc_context_buffer(
        base: ProtobufCBuffer(append: { base, length, data in
          let context = UnsafeMutableRawPointer(base!).assumingMemoryBound(to: mc_context_buffer.self).pointee.context!
          let destination = Unmanaged<WeightDestination>.fromOpaque(context).takeUnretainedValue()
          guard destination.error == nil, length > 0, let data else { return }
          do { try destination.append(data, length) } catch { destination.error = error }
        }),
        context: Unmanaged.passUnretained(destination).toOpaque())
      try withExtendedLifetime(destination) {
        try withUnsafeMutablePointer(to: &buffer) { pointer in
          try pointer.withMemoryRebound(to: ProtobufCBuffer.self, capacity: 1) { try body($0) }
        }
      }
      if let error = destination.error { throw error }
      for (weight, sent) in zip(weights, destination.sent) where weight.values.count > 0 {
        precondition(sent, "protobuf-c did not pack a weight")
      }
    }
  }

  /// Where `withDeferredWeights`' buffer sends bytes (a class: protobuf-c's callback reaches it by pointer).
  private final class WeightDestination {
    let sink: (UnsafeRawBufferPointer) throws -> Void
    let weights: [DeferredWeight]
    let region: UnsafeRawPointer?
    let offsets: [Int]
    var sent: [Bool]
    var error: (any Error)?

    init(
      sink: @escaping (UnsafeRawBufferPointer) throws -> Void, weights: [DeferredWeight], region: UnsafeRawPointer?,
      offsets: [Int]
    ) {
      self.sink = sink
      self.weights = weights
      self.region = region
      self.offsets = offsets
      sent = Array(repeating: false, count: weights.count)
    }

    func append(_ data: UnsafeRawPointer, _ length: Int) throws {
      guard let region, data >= region, data < region + offsets.last!,
        let index = offsets.indices.dropLast().last(where: { region + offsets[$0] <= data })
      else { return try sink(UnsafeRawBufferPointer(start: data, count: length)) }
      precondition(
        data == region + offsets[index] && length == offsets[index + 1] - offsets[index] && !sent[index],
        "protobuf-c did not pack a weight as one run of its values")
      sent[index] = true
      try weights[index].values.encodedBlocks(float16: weights[index].precision == .float16, sink)
    }
  }

  package static func pack(_ model: UnsafeMutablePointer<CoreML__Specification__Model>) -> [UInt8] {
    let size = core_ml__specification__model__get_packed_size(model)
    return [UInt8](unsafeUninitializedCapacity: size) { buffer, initialized in
      initialized = size > 0 ? core_ml__specification__model__pack(model, buffer.baseAddress!) : 0
    }
  }

  /// A protobuf varint.
  package static func varint(_ value: Int) -> [UInt8] {
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

/// A `WeightParams` whose `floatValue` (float32) or `float16Value` (float16, little-endian) is produced
/// only while its layer is packed.
package struct DeferredWeight: @unchecked Sendable {
  package let params: UnsafeMutablePointer<WeightParams>
  package let values: CoreMLWeightValues
  package let precision: WeightPrecision

  package init(params: UnsafeMutablePointer<WeightParams>, values: CoreMLWeightValues, precision: WeightPrecision) {
    self.params = params
    self.values = values
    self.precision = precision
  }

  /// Bytes of the stored field.
  package var byteCount: Int { values.count * (precision == .float16 ? 2 : 4) }

  /// Points the field at `address` (nil: no values attached).
  package func attach(_ address: UnsafeMutableRawPointer?) {
    switch precision {
    case .float32: params.pointee.floatvalue = address?.assumingMemoryBound(to: Float.self)
    case .float16: params.pointee.float16value.data = address?.assumingMemoryBound(to: UInt8.self)
    }
  }
}
