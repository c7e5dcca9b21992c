import Foundation

/// A JSON document built field by field, so every schema states its keys (absent values are `null`,
/// never missing) and their order.
indirect enum JSONValue {
  case null
  case bool(Bool)
  case number(Double)
  case string(String)
  case array([JSONValue])
  /// Keys in the order given.
  case object([(String, JSONValue)])

  static func optional(_ value: String?) -> JSONValue { value.map { .string($0) } ?? .null }
  static func optional(_ value: Double?) -> JSONValue { value.map { .number($0) } ?? .null }
  static func integers(_ values: [Int]) -> JSONValue { .array(values.map { .number(Double($0)) }) }

  /// Pretty-printed with two-space indentation.
  var rendered: String { render(indent: "") }

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
      return "{\n" + fields.map { inner + Self.quoted($0.0) + ": " + $0.1.render(indent: inner) }.joined(separator: ",\n") + "\n" + indent + "}"
    }
  }

  static func quoted(_ text: String) -> String {
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
