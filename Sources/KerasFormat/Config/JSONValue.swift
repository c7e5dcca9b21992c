import Foundation

/// A parsed JSON value from a Keras model config.
public indirect enum JSONValue: Equatable, Sendable {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  case object([String: JSONValue])

  /// Parses JSON text.
  public static func parse(_ text: String) throws -> JSONValue {
    let object = try JSONSerialization.jsonObject(with: Data(text.utf8), options: [.fragmentsAllowed])
    return JSONValue(foundation: object)
  }

  init(foundation object: Any) {
    switch object {
    case let dictionary as [String: Any]: self = .object(dictionary.mapValues(JSONValue.init(foundation:)))
    case let array as [Any]: self = .array(array.map(JSONValue.init(foundation:)))
    case let string as String: self = .string(string)
    case let number as NSNumber:
      // JSONSerialization gives booleans as NSNumber too; their type encoding is "c" (char).
      if String(cString: number.objCType) == "c" { self = .bool(number.boolValue) } else { self = .number(number.doubleValue) }
    default: self = .null
    }
  }

  public subscript(key: String) -> JSONValue? {
    if case .object(let dictionary) = self { return dictionary[key] }
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
  /// The number as an integer (toward zero); nil when it is not a number or is NaN, infinite or beyond `Int`.
  public var int: Int? { double.flatMap { $0.isFinite ? Int(exactly: $0.rounded(.towardZero)) : nil } }
  public var bool: Bool? {
    switch self {
    case .bool(let b): return b
    case .number(let n): return n != 0
    default: return nil
    }
  }
  public var array: [JSONValue]? { if case .array(let a) = self { return a } else { return nil } }
  public var object: [String: JSONValue]? { if case .object(let o) = self { return o } else { return nil } }
  public var isNull: Bool { self == .null }
}
