import CProtobufC
import Foundation

/// Owns the C memory of a protobuf-c message tree while it is built and packed.
///
/// protobuf-c messages are plain C structs linked by pointers; everything allocated here is
/// released together when the arena goes away, after packing.
package final class MessageArena {
  private var allocations: [UnsafeMutableRawPointer] = []

  package init() {}

  deinit { for pointer in allocations { free(pointer) } }

  /// A new message, initialised by its protobuf-c `__init` function.
  package func message<T>(_ initialize: (UnsafeMutablePointer<T>?) -> Void) -> UnsafeMutablePointer<T> {
    let pointer = allocate(T.self, count: 1)
    initialize(pointer)
    return pointer
  }

  /// A C copy of a string.
  package func string(_ text: String) -> UnsafeMutablePointer<CChar> {
    let pointer = strdup(text)!
    allocations.append(UnsafeMutableRawPointer(pointer))
    return pointer
  }

  /// A C array copied from `items`, or nil when empty (protobuf-c accepts a nil array with count 0).
  package func array<T>(_ items: [T]) -> UnsafeMutablePointer<T>? {
    guard !items.isEmpty else { return nil }
    let pointer = allocate(T.self, count: items.count)
    items.withUnsafeBufferPointer { pointer.initialize(from: $0.baseAddress!, count: $0.count) }
    return pointer
  }

  /// An array of optional pointers, the form protobuf-c uses for repeated messages and strings.
  package func pointerArray<T>(_ items: [UnsafeMutablePointer<T>]) -> UnsafeMutablePointer<UnsafeMutablePointer<T>?>? {
    array(items.map { Optional($0) })
  }

  /// Bytes for a `bytes` field.
  package func binary(_ bytes: [UInt8]) -> ProtobufCBinaryData {
    ProtobufCBinaryData(len: bytes.count, data: array(bytes))
  }

  private func allocate<T>(_ type: T.Type, count: Int) -> UnsafeMutablePointer<T> {
    let raw = calloc(count, MemoryLayout<T>.stride)!
    allocations.append(raw)
    return raw.bindMemory(to: T.self, capacity: count)
  }
}
