import ModelFormats
import ModelIR

/// What a custom-layer conversion gets to know about one Keras layer call.
public struct KerasCustomLayerContext: Sendable {
  public var className: String
  public var name: String
  /// The layer's `config` object.
  public var config: JSONValue
  /// The layer's weights, in the order of its `weight_names`.
  public var weights: [Constant]
  /// The shapes of its inputs (channels-last, without the batch dimension).
  public var inputShapes: [[Int]]
}
