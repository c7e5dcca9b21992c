import CProtobufC
import CoreMLCommon
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
  /// The storage of the weights written now (a layer whose weights float16 cannot store keeps float32
  /// in a float16 model: Core ML reads each layer's weights in the form they are stored).
  var precision: WeightPrecision
  /// The layers in network order.
  private(set) var layers: [UnsafeMutablePointer<NNLayer>] = []
  /// Weights in the order they were registered.
  private(set) var deferredWeights: [DeferredWeight] = []
  /// The names of the layers built so far.
  private var layerNames: Set<String> = []
  /// The lowest specification version the layers built so far need.
  private(set) var specificationVersion: Int32 = 1
  /// How convolution, inner-product and batched-matmul weights are quantized (nil: `precision`).
  var compression: WeightCompression?
  /// Each weight `compressibleWeights` saw, compressed or kept (and why).
  private(set) var compressionReports: [CompressedTensorReport] = []

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
    _ name: String, inputs: [String], outputs: [String],
    _ layerCase: CoreML__Specification__NeuralNetworkLayer__LayerCase,
    _ field: WritableKeyPath<NNLayer, UnsafeMutablePointer<Params>?>, _ params: UnsafeMutablePointer<Params>
  ) {
    let layer = arena.message(core_ml__specification__neural_network_layer__init)
    // Layer names are unique in a model (two IR nodes lowered to layers of one name get `_2`, `_3`, ...).
    var unique = name
    var suffix = 2
    while layerNames.contains(unique) {
      unique = "\(name)_\(suffix)"
      suffix += 1
    }
    layerNames.insert(unique)
    layer.pointee.name = arena.string(unique)
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

  /// A layer's main weights: quantized (`rawValue` with `QuantizationParams`, specification 3) when
  /// `compression` applies to them, else as `weights(_:layer:)`. `channels` is the number of leading
  /// rows that get a scale and bias of their own in linear quantization (1: one for the tensor).
  ///
  /// Linear quantization is the classic form `w = scale * q + bias` with uint8 codes: symmetric int8
  /// codes `q` become `q + 128` with `bias = -128 * scale`, affine ones keep `q` with `bias = -zero *
  /// scale`. A lookup table holds 2^n floats. Codes are packed most significant bit first, as Core ML
  /// reads `rawValue` (and coremltools writes it).
  mutating func compressibleWeights(_ values: CoreMLWeightValues, channels: Int, layer: String) throws
    -> UnsafeMutablePointer<WeightParams>
  {
    let elementBytes = precision == .float16 ? 2 : 4
    guard let compression else { return try weights(values, layer: layer) }
    guard values.count >= compression.minimumElements else {
      compressionReports.append(
        CompressedTensorReport(
          name: layer, shape: [values.count], originalBytes: values.count * elementBytes,
          writtenBytes: values.count * elementBytes, method: nil,
          skipped: "\(values.count) elements, fewer than \(compression.minimumElements)", relativeError: nil))
      return try weights(values, layer: layer)
    }
    let floats = values.materialized()
    let params = arena.message(core_ml__specification__weight_params__init)
    let quantization = arena.message(core_ml__specification__quantization_params__init)
    let codes: [UInt8]
    let bits: Int
    let decoded: (Int) -> Float
    var tableBytes = 0
    switch compression.method {
    case .prune:
      throw CoreMLWriterError.invalidOption(
        "pruned weights (sparse constants) exist in ML Programs (.mlpackage) only; a neural network (.mlmodel) has no sparse weight form"
      )
    case .palettize(let n):
      if let group = compression.groupSize {
        throw CoreMLWriterError.invalidOption(
          "a lookup table per \(group) channels is iOS 18's ML Program form; a neural network (.mlmodel) has one table per weight"
        )
      }
      bits = n
      let result = Palettizer.palettize(floats, bits: n, seed: compression.seed)
      codes = result.indices
      let table = arena.message(core_ml__specification__look_up_table_quantization_params__init)
      table.pointee.n_floatvalue = result.table.count
      table.pointee.floatvalue = arena.array(result.table)
      quantization.pointee.quantization_type_case =
        CORE_ML__SPECIFICATION__QUANTIZATION_PARAMS__QUANTIZATION_TYPE_LOOKUP_TABLE_QUANTIZATION
      quantization.pointee.lookuptablequantization = table
      tableBytes = result.table.count * 4
      decoded = { result.table[Int(result.indices[$0])] }
    case .quantize(let n, let mode):
      if let block = compression.blockSize {
        throw CoreMLWriterError.invalidOption(
          "a scale per block of \(block) input channels is iOS 18's ML Program form; a neural network (.mlmodel) has one per output channel"
        )
      }
      bits = n
      let result = LinearQuantizer.quantize(floats, channels: channels, mode: mode, bits: n)
      // Unsigned codes: symmetric ones shifted by 2^(bits-1).
      let shift = Float(1 << (n - 1))
      let biases = (0..<channels).map { c -> Float in
        mode == .symmetric ? -shift * result.scales[c] : -Float(result.zeroPoints[c]) * result.scales[c]
      }
      codes = mode == .symmetric ? result.data.map { UInt8(Int(Int8(bitPattern: $0)) + (1 << (n - 1))) } : result.data
      let linear = arena.message(core_ml__specification__linear_quantization_params__init)
      linear.pointee.n_scale = channels
      linear.pointee.scale = arena.array(result.scales)
      linear.pointee.n_bias = channels
      linear.pointee.bias = arena.array(biases)
      quantization.pointee.quantization_type_case =
        CORE_ML__SPECIFICATION__QUANTIZATION_PARAMS__QUANTIZATION_TYPE_LINEAR_QUANTIZATION
      quantization.pointee.linearquantization = linear
      tableBytes = channels * 8
      decoded = { result.value(at: $0) }
    }
    quantization.pointee.numberofbits = UInt64(bits)
    let packed = Palettizer.pack(codes, bits: bits, mostSignificantFirst: true)
    params.pointee.rawvalue = arena.binary(packed)
    params.pointee.quantization = quantization
    requireSpecificationVersion(3)
    var error = RelativeError()
    for (i, value) in floats.enumerated() { error.add(decoded: decoded(i), original: value) }
    compressionReports.append(
      CompressedTensorReport(
        name: layer, shape: [floats.count], originalBytes: floats.count * elementBytes,
        writtenBytes: packed.count + tableBytes,
        method: compression.summary, skipped: nil, relativeError: error.value))
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
