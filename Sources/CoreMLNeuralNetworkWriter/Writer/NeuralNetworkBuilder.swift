import CoreMLCommon
import CProtobufC
import CoreMLSpec

/// Typed construction of classic (rank-5) Core ML neural-network layers: the one place that fills
/// protobuf-c `NeuralNetworkLayer` messages, as `MILBuilder` is for ML Programs.
///
/// Each method appends one layer with the parameters `Schemas/NeuralNetwork.proto` defines for it and
/// notes the specification version the layer needs (written next to each method; specification 1 unless
/// said otherwise). Weights are `CoreMLWeightValues` registered as `DeferredWeight`s in the order the
/// method lists them: their values are produced only while the layer is packed (`StreamedSpecification`),
/// and for float16 the first value outside float16's range, in that order, is the error.
struct NeuralNetworkBuilder {
  let arena: MessageArena
  let precision: WeightPrecision
  /// The layers in network order.
  private(set) var layers: [UnsafeMutablePointer<NNLayer>] = []
  /// Weights in the order they were registered.
  private(set) var deferredWeights: [DeferredWeight] = []
  /// The lowest specification version the layers built so far need.
  private(set) var specificationVersion: Int32 = 1

  init(arena: MessageArena, precision: WeightPrecision) {
    self.arena = arena
    self.precision = precision
    // float16 weights arrived with Core ML 2 (specification 2).
    if precision == .float16 { specificationVersion = 2 }
  }

  /// Notes that a layer needs at least this specification version.
  mutating func requireSpecificationVersion(_ version: Int32) {
    specificationVersion = max(specificationVersion, version)
  }

  // MARK: Plumbing

  /// Appends a layer whose oneof `layer` is `params`.
  mutating func append<Params>(
    _ name: String, inputs: [String], outputs: [String], _ layerCase: CoreML__Specification__NeuralNetworkLayer__LayerCase,
    _ field: WritableKeyPath<NNLayer, UnsafeMutablePointer<Params>?>, _ params: UnsafeMutablePointer<Params>
  ) {
    let layer = arena.message(core_ml__specification__neural_network_layer__init)
    layer.pointee.name = arena.string(name)
    layer.pointee.n_input = inputs.count
    layer.pointee.input = arena.pointerArray(inputs.map(arena.string))
    layer.pointee.n_output = outputs.count
    layer.pointee.output = arena.pointerArray(outputs.map(arena.string))
    layer.pointee.layer_case = layerCase
    layer.pointee[keyPath: field] = params
    layers.append(layer)
  }

  /// A `WeightParams` whose values are set while its layer is packed. A float16 model's values are
  /// checked against float16's range now (`layer` names the error).
  mutating func weights(_ values: CoreMLWeightValues, layer: String) throws -> UnsafeMutablePointer<WeightParams> {
    let params = arena.message(core_ml__specification__weight_params__init)
    switch precision {
    case .float32:
      params.pointee.n_floatvalue = values.count
    case .float16:
      if let value = values.firstOutsideFloat16 { throw CoreMLWriterError.float16Overflow(layer: layer, value: value) }
      params.pointee.float16value.len = values.count * 2
    }
    deferredWeights.append(DeferredWeight(params: params, values: values, precision: precision))
    return params
  }

  func uint64s(_ values: [Int]) -> UnsafeMutablePointer<UInt64>? { arena.array(values.map { UInt64($0) }) }

  /// `BorderAmounts` with one `(start, end)` pair per spatial axis (height, then width).
  func border(_ amounts: [(start: Int, end: Int)]) -> UnsafeMutablePointer<CoreML__Specification__BorderAmounts> {
    let border = arena.message(core_ml__specification__border_amounts__init)
    let edges = amounts.map { start, end -> UnsafeMutablePointer<CoreML__Specification__BorderAmounts__EdgeSizes> in
      let edge = arena.message(core_ml__specification__border_amounts__edge_sizes__init)
      edge.pointee.startedgesize = UInt64(start)
      edge.pointee.endedgesize = UInt64(end)
      return edge
    }
    border.pointee.n_borderamounts = edges.count
    border.pointee.borderamounts = arena.pointerArray(edges)
    return border
  }
}
