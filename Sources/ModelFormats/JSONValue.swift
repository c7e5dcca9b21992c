import Foundation

/// A JSON value: what the Keras config reader parses and what the command line's `--json` documents are
/// built from (one type for both).
///
/// Objects keep their keys in order: a document states its keys in the order its schema gives (absent
/// values are `null`, never missing); a parsed object has its keys sorted, so two parses of the same text
/// are equal.
public indirect enum JSONValue: Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  /// Keys in the order given.
  case object([(String, JSONValue)])

  // MARK: Parsing

  /// Parses JSON text.
  public static func parse(_ text: String) throws -> JSONValue {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    return JSONValue(foundation: object)
  }

  init(foundation object: Any) {
    switch object {
    case let dictionary as [String: Any]: self = .dictionary(dictionary.mapValues(JSONValue.init(foundation:)))
    case let array as [Any]: self = .array(array.map(JSONValue.init(foundation:)))
    case let string as String: self = .string(string)
    case let number as NSNumber:
      // JSONSerialization gives booleans as NSNumber too; their type encoding is "c" (char).
      if String(cString: number.objCType) == "c" {
        self = .bool(number.boolValue)
      } else {
        self = .number(number.doubleValue)
      }
    default: self = .null
    }
  }

  /// An object with `fields`' keys in sorted order.
  public static func dictionary(_ fields: [String: JSONValue]) -> JSONValue {
    .object(fields.sorted { $0.key < $1.key }.map { ($0.key, $0.value) })
  }

  // MARK: Reading

  public subscript(key: String) -> JSONValue? {
    if case .object(let fields) = self { return fields.first { $0.0 == key }?.1 }
    return nil
  }

  public var string: String? { if case .string(let s) = self { return s } else { return nil } }
  public var double: Double? {
    switch self {
    case .number(let n): return n
    case .bool(let b): return b ? 1 : 0
    default: return nil
    }
  }
  /// The value as an exact integer: nil for booleans, fractions, non-finite numbers and numbers beyond `Int`.
  public var int: Int? {
    if case .number(let n) = self { return Int(exactly: n) }
    return nil
  }
  public var bool: Bool? {
    switch self {
    case .bool(let b): return b
    case .number(let n): return n != 0
    default: return nil
    }
  }
  public var array: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
  /// An object's fields by key (the last one wins if a key repeats).
  public var object: [String: JSONValue]? {
    guard case .object(let fields) = self else { return nil }
    return Dictionary(fields, uniquingKeysWith: { _, last in last })
  }
  public var isNull: Bool { if case .null = self { return true } else { return false } }

  // MARK: Writing

  public static func optional(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
  public static func optional(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
  public static func integers(_ values: [Int]) -> JSONValue { .array(values.map { .number(Double($0)) }) }

  /// Pretty-printed with two-space indentation.
  public var rendered: String { render(indent: "") }

  private func render(indent: String) -> String {
    let inner = indent + "  "
    switch self {
    case .null: return "null"
    case .bool(let value): return value ? "true" : "false"
    case .number(let value):
      // JSON has no NaN or infinity: a number field that is not finite is null (documented in Docs/JSON.md).
      guard value.isFinite else { return "null" }
      if value == value.rounded() && abs(value) < 9.2e18 { return String(Int64(value)) }
      return "\(value)"
    case .string(let value): return Self.quoted(value)
    case .array(let values):
      guard !values.isEmpty else { return "[]" }
      if values.allSatisfy({ if case .number = $0 { return true } else { return false } }) {
        return "[" + values.map { $0.render(indent: inner) }.joined(separator: ", ") + "]"
      }
      return "[\n" + values.map { inner + $0.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "]"
    case .object(let fields):
      guard !fields.isEmpty else { return "{}" }
      return "{\n"
        + fields.map { inner + Self.quoted($0.0) + ": " + $0.1.render(indent: inner) }.joined(separator: ",\n") + "\n"
        + indent + "}"
    }
  }

  public static func quoted(_ text: String) -> String {
    var result = "\""
    for scalar in text.unicodeScalars {
      switch scalar {
      case "\"": result += "\\\""
      case "\\": result += "\\\\"
      case "\n": result += "\\n"
      case "\r": result += "\\r"
      case "\t": result += "\\t"
      case _ where scalar.value < 0x20 || scalar.value == 0x7F: result += String(format: "\\u%04x", scalar.value)
      default: result.unicodeScalars.append(scalar)
      }
    }
    return result + "\""
  }
}

extension JSONValue: Equatable {
  /// Objects are equal when they hold the same keys in the same order with equal values.
  public static func == (a: JSONValue, b: JSONValue) -> Bool {
    switch (a, b) {
    case (.null, .null): return true
    case (.bool(let x), .bool(let y)): return x == y
    case (.number(let x), .number(let y)): return x == y
    case (.string(let x), .string(let y)): return x == y
    case (.array(let x), .array(let y)): return x == y
    case (.object(let x), .object(let y)):
      return x.count == y.count && zip(x, y).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    default: return false
    }
  }
}
