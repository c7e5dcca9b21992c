import Foundation
import ModelFormats
import ModelIR

/// Typed access to one layer's config values, with errors that name the file, the layer and the field.
///
/// Every number in a config is untrusted. A key that is absent takes Keras' default; a key that is
/// present must have the documented type and lie in its range: integers must be exact (no 1.5, no
/// 1e300), `null`, strings and empty lists are refused where a number is needed.
struct LayerConfigReader {
  let layer: KerasLayerConfig
  /// The file the config came from, for error messages.
  let path: String

  /// The largest size, stride, count or padding a config may give: any larger value cannot fit a tensor
  /// within `GraphLimits.maxElementCount`.
  static let maxConfigInteger = GraphLimits.maxSize

  /// The one input of a single-input layer call.
  func single(_ inputs: [ValueID]) throws -> ValueID {
    guard inputs.count == 1 else { throw fail("expects one input, got \(inputs.count)") }
    return inputs[0]
  }

  func fail(_ detail: String) -> KerasReaderError {
    .invalidLayer(path: path, layer: layer.name, className: layer.className, detail: detail)
  }

  /// An error naming the field, its value (as JSON) and what was expected.
  func invalid(_ key: String, _ value: JSONValue?, expected: String) -> KerasReaderError {
    .invalidLayerValue(
      path: path, layer: layer.name, className: layer.className, field: key,
      value: value.map(Self.describe) ?? "missing", expected: expected)
  }

  /// A JSON value as short text for an error message.
  static func describe(_ value: JSONValue) -> String {
    switch value {
    case .null: return "null"
    case .bool(let b): return b ? "true" : "false"
    case .number(let n): return Int(exactly: n).map(String.init) ?? "\(n)"
    case .string(let s):
      return "\""
        + String(s.unicodeScalars.prefix(40).map { $0.properties.generalCategory == .control ? "?" : Character($0) })
        + "\""
    case .array(let items):
      return "[" + items.prefix(8).map(describe).joined(separator: ", ") + (items.count > 8 ? ", ..." : "") + "]"
    case .object: return "an object"
    }
  }

  /// The value of a key, nil when absent or null (for keys where Keras documents null as "not set").
  func value(_ key: String) -> JSONValue? {
    guard let value = layer.config[key], !value.isNull else { return nil }
    return value
  }

  /// The value of a key, nil only when absent: a null is returned for the caller to refuse.
  func present(_ key: String) -> JSONValue? { layer.config[key] }

  /// An exact integer within `range`, from a number or a one-element list.
  func exactInt(_ key: String, _ json: JSONValue, range: ClosedRange<Int>) throws -> Int {
    let expected = "an integer in \(Self.describe(range))"
    let number: Int?
    if let n = json.int {
      number = n
    } else if let single = json.array, single.count == 1, let n = single[0].int {
      number = n
    } else {
      number = nil
    }
    guard let number, range.contains(number) else { throw invalid(key, json, expected: expected) }
    return number
  }

  static func describe(_ range: ClosedRange<Int>) -> String {
    if range.upperBound >= maxConfigInteger { return "\(range.lowerBound)...\(maxConfigInteger)" }
    return "\(range.lowerBound)...\(range.upperBound)"
  }

  /// An integer in `range` (default: a size, 1 or more); an absent key takes `fallback`.
  func int(_ key: String, default fallback: Int? = nil, range: ClosedRange<Int> = 1...maxConfigInteger) throws -> Int {
    guard let json = present(key) else {
      if let fallback { return fallback }
      throw invalid(key, nil, expected: "an integer in \(Self.describe(range))")
    }
    return try exactInt(key, json, range: range)
  }

  /// A finite number that fits float32, in `range`; an absent key takes `fallback`.
  func float(
    _ key: String, default fallback: Float? = nil,
    range: ClosedRange<Double> = -Double(Float.greatestFiniteMagnitude)...Double(Float.greatestFiniteMagnitude)
  ) throws -> Float {
    guard let json = present(key) else {
      if let fallback { return fallback }
      throw invalid(key, nil, expected: "a number")
    }
    return try finiteFloat(key, json, range: range)
  }

  private func finiteFloat(_ key: String, _ json: JSONValue, range: ClosedRange<Double>) throws -> Float {
    let full = Double(Float.greatestFiniteMagnitude)
    let expected =
      range == -full...full ? "a finite number" : "a finite number in \(range.lowerBound)...\(range.upperBound)"
    guard case .number(let number) = json, number.isFinite, abs(number) <= full, range.contains(number) else {
      throw invalid(key, json, expected: expected)
    }
    return Float(number)
  }

  /// A number, or nil when the key is absent or null (Keras' "not set", as for ReLU's `max_value`).
  func optionalFloat(
    _ key: String,
    range: ClosedRange<Double> = -Double(Float.greatestFiniteMagnitude)...Double(Float.greatestFiniteMagnitude)
  ) throws -> Float? {
    guard let json = value(key) else { return nil }
    return try finiteFloat(key, json, range: range)
  }

  func bool(_ key: String, default fallback: Bool) -> Bool { value(key)?.bool ?? fallback }

  /// A string; an absent key takes `fallback`, any other type is refused.
  func string(_ key: String, default fallback: String? = nil) throws -> String {
    guard let json = present(key) else {
      if let fallback { return fallback }
      throw invalid(key, nil, expected: "a string")
    }
    guard let text = json.string else { throw invalid(key, json, expected: "a string") }
    return text
  }

  /// A non-empty list of integers, each in `range`.
  func ints(_ key: String, range: ClosedRange<Int> = 1...maxConfigInteger) throws -> [Int] {
    guard let json = present(key), let items = json.array, !items.isEmpty else {
      throw invalid(key, present(key), expected: "a list of integers in \(Self.describe(range))")
    }
    let numbers = items.compactMap(\.int)
    guard numbers.count == items.count, numbers.allSatisfy(range.contains) else {
      throw invalid(key, json, expected: "a list of integers in \(Self.describe(range))")
    }
    return numbers
  }

  /// An axis or list of axes (`axis: -1` or `axis: [-1]`), each within `-rank...rank` (Keras counts the batch axis).
  func axes(_ key: String, default fallback: [Int], rank: Int) throws -> [Int] {
    guard let json = present(key) else { return fallback }
    let range = -rank...rank
    if json.array != nil { return try ints(key, range: range) }
    return [try exactInt(key, json, range: range)]
  }

  /// A 2-D size given as one integer or a pair, each in `range`.
  func pair(_ key: String, default fallback: [Int]? = nil, range: ClosedRange<Int> = 1...maxConfigInteger) throws
    -> [Int]
  {
    guard let json = present(key) else {
      if let fallback { return fallback }
      throw invalid(key, nil, expected: "one or two integers in \(Self.describe(range))")
    }
    if let number = json.int, range.contains(number) { return [number, number] }
    if let items = json.array, (1...2).contains(items.count) {
      let numbers = items.compactMap(\.int)
      if numbers.count == items.count, numbers.allSatisfy(range.contains) {
        return numbers.count == 1 ? [numbers[0], numbers[0]] : numbers
      }
    }
    throw invalid(key, json, expected: "one or two integers in \(Self.describe(range))")
  }

  /// A 2-D box given as `n`, `(vertical, horizontal)` or `((top, bottom), (left, right))`, each 0 or more.
  func box(_ key: String) throws -> Box2D {
    guard let json = present(key) else { throw invalid(key, nil, expected: "a padding or cropping amount") }
    let range = 0...Self.maxConfigInteger
    let expected =
      "n, (vertical, horizontal) or ((top, bottom), (left, right)) with integers in \(Self.describe(range))"
    if let n = json.int, range.contains(n) { return Box2D(top: n, bottom: n, left: n, right: n) }
    guard let items = json.array, items.count == 2 else { throw invalid(key, json, expected: expected) }
    if let vertical = items[0].int, let horizontal = items[1].int, range.contains(vertical), range.contains(horizontal)
    {
      return Box2D(top: vertical, bottom: vertical, left: horizontal, right: horizontal)
    }
    guard let vItems = items[0].array, let hItems = items[1].array, vItems.count == 2, hItems.count == 2 else {
      throw invalid(key, json, expected: expected)
    }
    let v = vItems.compactMap(\.int)
    let h = hItems.compactMap(\.int)
    guard v.count == 2, h.count == 2, (v + h).allSatisfy(range.contains) else {
      throw invalid(key, json, expected: expected)
    }
    return Box2D(top: v[0], bottom: v[1], left: h[0], right: h[1])
  }

  /// A 1-D amount given as `n` or `(before, after)`, each 0 or more.
  func amounts(_ key: String) throws -> [Int] {
    guard let json = present(key) else { throw invalid(key, nil, expected: "one or two integers") }
    let range = 0...Self.maxConfigInteger
    if let n = json.int, range.contains(n) { return [n, n] }
    if let items = json.array, items.count == 2 {
      let numbers = items.compactMap(\.int)
      if numbers.count == 2, numbers.allSatisfy(range.contains) { return numbers }
    }
    throw invalid(key, json, expected: "n or (before, after) with integers in \(Self.describe(range))")
  }

  func padding() throws -> Padding {
    let text = try string("padding", default: "valid").lowercased()
    guard let padding = Padding(rawValue: text) else {
      throw fail("padding '\(text)' is not supported (use same or valid)")
    }
    return padding
  }

  /// Fails unless the layer is channels-last.
  func requireChannelsLast() throws {
    guard let json = value("data_format") else { return }
    guard let format = json.string else { throw invalid("data_format", json, expected: "\"channels_last\"") }
    if format != "channels_last" {
      throw fail("data_format '\(format)' is not supported; Core ML conversion needs channels_last")
    }
  }

  /// The activation function name (Keras 3 may wrap it in an object); absent or null is linear.
  func activationName(_ key: String = "activation") throws -> String {
    guard let value = value(key) else { return "linear" }
    if let name = value.string { return name }
    if value.object != nil,
      let name = value["config"]?.string ?? value["config"]?["name"]?.string ?? value["class_name"]?.string
    {
      return name
    }
    throw invalid(key, value, expected: "an activation name")
  }
}
