import ModelIR

/// Typed access to one layer's config values, with errors that name the layer.
struct LayerConfigReader {
  let layer: KerasLayerConfig

  /// The one input of a single-input layer call.
  func single(_ inputs: [ValueID]) throws -> ValueID {
    guard inputs.count == 1 else { throw fail("expects one input, got \(inputs.count)") }
    return inputs[0]
  }

  func fail(_ detail: String) -> KerasReaderError {
    .invalidLayer(layer: layer.name, className: layer.className, detail: detail)
  }

  func value(_ key: String) -> JSONValue? {
    guard let value = layer.config[key], !value.isNull else { return nil }
    return value
  }

  func int(_ key: String, default fallback: Int? = nil) throws -> Int {
    if let number = value(key)?.int { return number }
    if let single = value(key)?.array, single.count == 1, let number = single[0].int { return number }
    if let fallback { return fallback }
    throw fail("missing integer '\(key)'")
  }

  func float(_ key: String, default fallback: Float? = nil) throws -> Float {
    if let number = value(key)?.double { return Float(number) }
    if let fallback { return fallback }
    throw fail("missing number '\(key)'")
  }

  func optionalFloat(_ key: String) -> Float? { value(key)?.double.map(Float.init) }

  func bool(_ key: String, default fallback: Bool) -> Bool { value(key)?.bool ?? fallback }

  func string(_ key: String, default fallback: String? = nil) throws -> String {
    if let text = value(key)?.string { return text }
    if let fallback { return fallback }
    throw fail("missing string '\(key)'")
  }

  func ints(_ key: String) throws -> [Int] {
    guard let items = value(key)?.array else { throw fail("missing list '\(key)'") }
    let numbers = items.compactMap(\.int)
    guard numbers.count == items.count else { throw fail("'\(key)' is not a list of integers") }
    return numbers
  }

  /// A 2-D size given as one integer or a pair.
  func pair(_ key: String, default fallback: [Int]? = nil) throws -> [Int] {
    if let number = value(key)?.int { return [number, number] }
    if let items = value(key)?.array {
      let numbers = items.compactMap(\.int)
      if numbers.count == 2 { return numbers }
      if numbers.count == 1 { return [numbers[0], numbers[0]] }
      throw fail("'\(key)' must be one or two integers")
    }
    if let fallback { return fallback }
    throw fail("missing '\(key)'")
  }

  /// A 2-D box given as `n`, `(vertical, horizontal)` or `((top, bottom), (left, right))`.
  func box(_ key: String) throws -> Box2D {
    guard let value = value(key) else { throw fail("missing '\(key)'") }
    if let n = value.int { return Box2D(top: n, bottom: n, left: n, right: n) }
    guard let items = value.array, items.count == 2 else { throw fail("'\(key)' must be a number or a pair") }
    if let vertical = items[0].int, let horizontal = items[1].int {
      return Box2D(top: vertical, bottom: vertical, left: horizontal, right: horizontal)
    }
    guard let v = items[0].array?.compactMap(\.int), let h = items[1].array?.compactMap(\.int), v.count == 2, h.count == 2 else {
      throw fail("'\(key)' must be ((top, bottom), (left, right))")
    }
    return Box2D(top: v[0], bottom: v[1], left: h[0], right: h[1])
  }

  func padding() throws -> Padding {
    let text = try string("padding", default: "valid").lowercased()
    guard let padding = Padding(rawValue: text) else { throw fail("padding '\(text)' is not supported (use same or valid)") }
    return padding
  }

  /// Fails unless the layer is channels-last.
  func requireChannelsLast() throws {
    if let format = value("data_format")?.string, format != "channels_last" {
      throw fail("data_format '\(format)' is not supported; Core ML conversion needs channels_last")
    }
  }

  /// The activation function name (Keras 3 may wrap it in an object).
  func activationName(_ key: String = "activation") -> String {
    guard let value = value(key) else { return "linear" }
    if let name = value.string { return name }
    return value["config"]?.string ?? value["config"]?["name"]?.string ?? value["class_name"]?.string ?? "linear"
  }
}
