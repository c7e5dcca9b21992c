import ModelFormats
import ModelIR

extension KerasLayerRegistry {
  /// Rescaling and the normalizations (adapted statistics, layer and unit norm).
  /// Weights stored in another order than `kernel`, `bias`: gamma and beta only when `scale` and
  /// `center` keep them.
  static let normalizationStoredWeights: [String: @Sendable (JSONValue) -> [String]] = {
    @Sendable func affine(_ config: JSONValue) -> [String] {
      (config["scale"]?.bool ?? true ? ["gamma"] : []) + (config["center"]?.bool ?? true ? ["beta"] : [])
    }
    return [
      "BatchNormalization": { affine($0) + ["moving_mean", "moving_variance"] },
      "LayerNormalization": affine,
      "GroupNormalization": affine,
      "Normalization": { _ in ["mean", "variance", "count"] },
    ]
  }()

  static let normalizationHandlers: [String: KerasLayerHandler] = [
    "Rescaling": { try $0.convertRescaling($1) },
    "Normalization": { try $0.convertNormalization($1) },
    "LayerNormalization": { try $0.convertLayerNormalization($1) },
    "UnitNormalization": { try $0.convertUnitNormalization($1) },
  ]
}

extension KerasGraphImporter {
  mutating func convertRescaling(_ call: KerasLayerCall) throws -> ValueID {
    let scale = try call.reader.float("scale")
    let offset = try call.reader.float("offset", default: 0)
    return try add(.activation(.linear(scale: scale, offset: offset)), [try call.single()], call)
  }

  /// (x - mean) / sqrt(variance) along the last axis, from the weights (adapted) or the config.
  mutating func convertNormalization(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    let channels = shape(input).last ?? 1
    // A null axis means one mean and variance for every element (broadcast below).
    if reader.value("axis") != nil, case let axis = try reader.axes("axis", default: [-1], rank: shape(input).count),
      axis != [-1], axis != [shape(input).count]
    {
      throw reader.fail("normalizing axis \(axis) is not supported; only the last axis is")
    }
    guard !reader.bool("invert", default: false) else { throw reader.fail("invert=True is not supported") }
    func statistic(_ key: String) throws -> [Float] {
      if let stored = try? weight([key], nil, call), stored.count == channels || stored.count == 1 {
        return stored.values
      }
      if let json = reader.value(key) {
        // A number or a list of numbers, each finite.
        let items = json.array ?? [json]
        let values = items.compactMap { item -> Float? in
          guard case .number(let n) = item, n.isFinite, abs(n) <= Double(Float.greatestFiniteMagnitude) else {
            return nil
          }
          return Float(n)
        }
        guard !items.isEmpty, values.count == items.count else {
          throw reader.invalid(key, json, expected: "a finite number or a list of them")
        }
        return values
      }
      throw reader.fail("no \(key) in its weights or config")
    }
    var mean = try statistic("mean")
    var variance = try statistic("variance")
    if mean.count == 1 { mean = [Float](repeating: mean[0], count: channels) }
    if variance.count == 1 { variance = [Float](repeating: variance[0], count: channels) }
    guard mean.count == channels, variance.count == channels else {
      throw reader.fail("statistics do not fit \(channels) channels")
    }
    // Keras divides by max(sqrt(variance), 1e-7); a variance floor of 1e-14 gives the same. The epsilon
    // is tiny but not 0, which Core ML would read as 1e-5.
    let norm = BatchNormalization(
      gamma: .filled(1, shape: [channels]), beta: .filled(0, shape: [channels]),
      mean: Constant(shape: [channels], values: mean),
      variance: Constant(shape: [channels], values: variance.map { max($0, 1e-14) }), epsilon: 1e-20)
    return try add(.batchNormalization(norm), [input], call)
  }

  /// (x - mean) / sqrt(variance + epsilon) * gamma + beta over the last axis, from reductions.
  mutating func convertLayerNormalization(_ call: KerasLayerCall) throws -> ValueID {
    let reader = call.reader
    let input = try call.single()
    let rank = shape(input).count
    let channels = shape(input).last ?? 1
    let axes = try reader.axes("axis", default: [-1], rank: rank)
    guard axes.count == 1, axes[0] == -1 || axes[0] == rank else {
      throw reader.fail("normalizing axes \(axes) (only the last axis)")
    }
    guard !reader.bool("rms_scaling", default: false) else { throw reader.fail("rms_scaling is not supported") }
    let norm = LayerNormalization(
      gamma: reader.bool("scale", default: true) ? try weight(["gamma"], [channels], call) : nil,
      beta: reader.bool("center", default: true) ? try weight(["beta"], [channels], call) : nil,
      epsilon: try reader.float("epsilon", default: 1e-3, range: 0...1e10))
    return try add(.layerNormalization(norm), [input], call)
  }

  mutating func convertUnitNormalization(_ call: KerasLayerCall) throws -> ValueID {
    let input = try call.single()
    let axes = try call.reader.axes("axis", default: [-1], rank: shape(input).count)
    guard axes == [-1] || axes == [shape(input).count] else {
      throw call.reader.fail("normalizing axes \(axes) (only the last axis)")
    }
    // Keras divides by sqrt(max(sum, 1e-12)); adding 1e-12 instead differs only for all-but-zero vectors.
    return try add(.l2Normalize(epsilon: 1e-12), [input], call)
  }
}
