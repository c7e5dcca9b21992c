import ModelFormats

/// Turns any `Encodable` into a `JSONValue`: keys in declaration order, and `nil` optionals written as
/// `null` (Swift's synthesized coding skips them through `encodeIfPresent`, which this encoder overrides),
/// so JSON readers always find every documented key.
struct JSONValueEncoder {
  static func encode<T: Encodable>(_ value: T) throws -> JSONValue {
    let node = Node()
    try value.encode(to: NodeEncoder(node: node, codingPath: []))
    return node.value
  }

  final class Node {
    enum Kind {
      case unset
      case single(JSONValue)
      case keyed([(String, Node)])
      case unkeyed([Node])
    }
    var kind = Kind.unset

    var value: JSONValue {
      switch kind {
      case .unset: return .null
      case .single(let value): return value
      case .keyed(let fields): return .object(fields.map { ($0.0, $0.1.value) })
      case .unkeyed(let items): return .array(items.map(\.value))
      }
    }

    func child(forKey key: String) -> Node {
      var fields: [(String, Node)] = []
      if case .keyed(let existing) = kind { fields = existing }
      if let found = fields.first(where: { $0.0 == key }) { return found.1 }
      let node = Node()
      fields.append((key, node))
      kind = .keyed(fields)
      return node
    }

    func appended() -> Node {
      var items: [Node] = []
      if case .unkeyed(let existing) = kind { items = existing }
      let node = Node()
      items.append(node)
      kind = .unkeyed(items)
      return node
    }
  }

  struct NodeEncoder: Encoder {
    let node: Node
    var codingPath: [CodingKey]
    var userInfo: [CodingUserInfoKey: Any] { [:] }

    func container<Key: CodingKey>(keyedBy type: Key.Type) -> KeyedEncodingContainer<Key> {
      if case .keyed = node.kind {} else { node.kind = .keyed([]) }
      return KeyedEncodingContainer(Keyed<Key>(node: node, codingPath: codingPath))
    }

    func unkeyedContainer() -> UnkeyedEncodingContainer {
      if case .unkeyed = node.kind {} else { node.kind = .unkeyed([]) }
      return Unkeyed(node: node, codingPath: codingPath)
    }

    func singleValueContainer() -> SingleValueEncodingContainer { Single(node: node, codingPath: codingPath) }
  }

  static func primitive(_ value: Any) -> JSONValue? {
    switch value {
    case let v as Bool: return .bool(v)
    case let v as String: return .string(v)
    case let v as Double: return .number(v)
    case let v as Float: return .number(Double(v))
    case let v as Int: return .number(Double(v))
    case let v as Int64: return .number(Double(v))
    case let v as Int32: return .number(Double(v))
    case let v as UInt64: return .number(Double(v))
    case let v as UInt32: return .number(Double(v))
    default: return nil
    }
  }

  static func store<T: Encodable>(_ value: T, in node: Node, codingPath: [CodingKey]) throws {
    if let primitive = primitive(value) {
      node.kind = .single(primitive)
    } else {
      try value.encode(to: NodeEncoder(node: node, codingPath: codingPath))
    }
  }

  struct Keyed<Key: CodingKey>: KeyedEncodingContainerProtocol {
    let node: Node
    var codingPath: [CodingKey]

    mutating func encodeNil(forKey key: Key) throws { node.child(forKey: key.stringValue).kind = .single(.null) }
    mutating func encode<T: Encodable>(_ value: T, forKey key: Key) throws {
      try JSONValueEncoder.store(value, in: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
    // nil optionals become null instead of being left out.
    mutating func encodeIfPresent<T: Encodable>(_ value: T?, forKey key: Key) throws {
      if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }
    mutating func encodeIfPresent(_ value: Bool?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as Bool?, key)
    }
    mutating func encodeIfPresent(_ value: String?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as String?, key)
    }
    mutating func encodeIfPresent(_ value: Double?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as Double?, key)
    }
    mutating func encodeIfPresent(_ value: Float?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as Float?, key)
    }
    mutating func encodeIfPresent(_ value: Int?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as Int?, key)
    }
    mutating func encodeIfPresent(_ value: Int64?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as Int64?, key)
    }
    mutating func encodeIfPresent(_ value: UInt64?, forKey key: Key) throws {
      try encodeIfPresent(value.map { $0 } as UInt64?, key)
    }

    private mutating func encodeIfPresent<T: Encodable>(_ value: T?, _ key: Key) throws {
      if let value { try encode(value, forKey: key) } else { try encodeNil(forKey: key) }
    }

    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type, forKey key: Key)
      -> KeyedEncodingContainer<NestedKey>
    {
      NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer(forKey key: Key) -> UnkeyedEncodingContainer {
      NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key]).unkeyedContainer()
    }
    mutating func superEncoder() -> Encoder { NodeEncoder(node: node.child(forKey: "super"), codingPath: codingPath) }
    mutating func superEncoder(forKey key: Key) -> Encoder {
      NodeEncoder(node: node.child(forKey: key.stringValue), codingPath: codingPath + [key])
    }
  }

  struct Unkeyed: UnkeyedEncodingContainer {
    let node: Node
    var codingPath: [CodingKey]
    var count: Int {
      if case .unkeyed(let items) = node.kind { return items.count }
      return 0
    }

    mutating func encodeNil() throws { node.appended().kind = .single(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
      try JSONValueEncoder.store(value, in: node.appended(), codingPath: codingPath)
    }
    mutating func nestedContainer<NestedKey: CodingKey>(keyedBy keyType: NestedKey.Type) -> KeyedEncodingContainer<
      NestedKey
    > {
      NodeEncoder(node: node.appended(), codingPath: codingPath).container(keyedBy: keyType)
    }
    mutating func nestedUnkeyedContainer() -> UnkeyedEncodingContainer {
      NodeEncoder(node: node.appended(), codingPath: codingPath).unkeyedContainer()
    }
    mutating func superEncoder() -> Encoder { NodeEncoder(node: node.appended(), codingPath: codingPath) }
  }

  struct Single: SingleValueEncodingContainer {
    let node: Node
    var codingPath: [CodingKey]
    mutating func encodeNil() throws { node.kind = .single(.null) }
    mutating func encode<T: Encodable>(_ value: T) throws {
      try JSONValueEncoder.store(value, in: node, codingPath: codingPath)
    }
  }
}
