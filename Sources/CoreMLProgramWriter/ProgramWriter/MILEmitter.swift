import CoreMLCommon
import ModelIR

/// How an IR value of shape `S` (no batch axis, channels last) is laid out in the program.
enum MILLayout: Hashable {
  /// `[1] + S`: the IR layout with a batch axis.
  case natural
  /// The channels moved next to the batch axis: `[1, S.last] + S.dropLast()` (NCHW for images).
  case channelsFirst

  /// The MIL shape of an IR shape in this layout.
  func shape(_ ir: [Int]) -> [Int] {
    guard self == .channelsFirst, ir.count >= 2 else { return [1] + ir }
    return [1, ir[ir.count - 1]] + ir.dropLast()
  }

  /// The `transpose` permutation from the other layout into this one, for an IR rank.
  func permutation(rank: Int) -> [Int] {
    switch self {
    case .channelsFirst: return [0, rank] + Array(1..<rank)
    case .natural: return [0] + Array(2...rank) + [1]
    }
  }

  var other: MILLayout { self == .natural ? .channelsFirst : .natural }
  var suffix: String { self == .natural ? "nhwc" : "nchw" }

  /// The MIL axis of IR axis `axis` (of an IR value of rank `rank`) in this layout.
  func axis(_ axis: Int, rank: Int) -> Int {
    guard self == .channelsFirst, rank >= 2 else { return axis + 1 }
    return axis == rank - 1 ? 1 : axis + 2
  }
}

/// The name the operation producing a value's result gets: the value's own (`exact`), or one derived from it.
struct MILName {
  var name: String
  var exact: Bool
}

/// Turns IR nodes into MIL operations through a `MILBuilder`, tracking for each IR value the layouts it
/// exists in so that transposes are only written where a consumer needs the other layout.
///
/// Naming contract: the MIL value first holding IR value X's result is named after X (sanitized, made
/// unique); its copy in the other layout gets a derived name. A graph output computed in another layout or
/// precision than the output feature gets a derived name, and the final float32 `[1] + S` value is named
/// after the output feature.
struct MILEmitter {
  let builder: MILBuilder
  let graph: Graph
  /// The element type the program computes in.
  let computeType: MILElementType
  /// Whether MIL's `lstm`, `gru` and `rnn` take float16 (opset CoreML7, iOS 17, and later); before, their
  /// type domain is float32 only, and a float16 program computes them in float32 between casts (as
  /// coremltools does).
  var recurrentTakesFloat16 = true
  /// Names reserved for IR values.
  var names: [ValueID: String] = [:]
  /// Values whose final form carries a feature name: graph outputs other than a classifier's probabilities.
  var featureOutputs: Set<ValueID> = []
  private(set) var values: [ValueID: [MILLayout: MILTensor]] = [:]
  /// The layout each value was first produced in.
  private(set) var firstLayout: [ValueID: MILLayout] = [:]

  init(builder: MILBuilder, graph: Graph, computeType: MILElementType) {
    self.builder = builder
    self.graph = graph
    self.computeType = computeType
  }

  // MARK: Values and layouts

  func rank(_ id: ValueID) -> Int { graph[id].type.shape.count }

  /// Whether `id` exists in the channels-first layout (and that layout differs from the natural one).
  func hasChannelsFirst(_ id: ValueID) -> Bool { rank(id) >= 2 && values[id]?[.channelsFirst] != nil }

  /// The layout the value was first produced in.
  func layout(of id: ValueID) -> MILLayout { firstLayout[id] ?? .natural }

  /// Records a tensor holding IR value `id` in `layout`.
  mutating func define(_ id: ValueID, _ layout: MILLayout, _ tensor: MILTensor) {
    let effective: MILLayout = rank(id) >= 2 ? layout : .natural
    if values[id] == nil { firstLayout[id] = effective }
    values[id, default: [:]][effective] = tensor
  }

  /// The value in `layout`, transposing (once) when it only exists in the other one.
  mutating func tensor(_ id: ValueID, _ layout: MILLayout) throws -> MILTensor {
    let wanted: MILLayout = rank(id) >= 2 ? layout : .natural
    if let existing = values[id]?[wanted] { return existing }
    guard let source = values[id]?[wanted.other] else {
      throw CoreMLWriterError.unsupportedOperation(layer: graph[id].name, detail: "value is used before it is computed")
    }
    let r = rank(id)
    let permutation = wanted.permutation(rank: r)
    let shape = wanted.shape(graph[id].type.shape)
    // Moving only axes of size 1 keeps the element order: a reshape.
    let kept = permutation.filter { source.shape[$0] != 1 }
    let result =
      kept == kept.sorted()
      ? try builder.op(
        "reshape", [("x", .tensor(source)), ("shape", .ints(shape))],
        name: "\(names[id] ?? graph[id].name)_\(wanted.suffix)", dataType: source.dataType, shape: shape)
      : try builder.op(
        "transpose", [("x", .tensor(source)), ("perm", .ints(permutation))],
        name: "\(names[id] ?? graph[id].name)_\(wanted.suffix)", dataType: source.dataType, shape: shape)
    values[id, default: [:]][wanted] = result
    return result
  }

  /// The value in the layout it was first produced in.
  mutating func tensor(_ id: ValueID) throws -> (MILTensor, MILLayout) {
    let layout = layout(of: id)
    return (try tensor(id, layout), layout)
  }

  /// The name for the operation producing `id`'s result in `layout` and `dataType`.
  func resultName(_ id: ValueID, layout: MILLayout, dataType: MILElementType) -> MILName {
    let name = names[id] ?? MILIdentifier.sanitize(graph[id].name)
    let effective: MILLayout = rank(id) >= 2 ? layout : .natural
    if featureOutputs.contains(id), effective != .natural || dataType != .fp32 {
      return MILName(
        name: "\(name)_\(effective == .natural ? "" : effective.suffix + "_")\(dataType.castName)", exact: false)
    }
    return MILName(name: name, exact: true)
  }

  /// A name for an intermediate operation of node output `id`.
  func temporary(_ id: ValueID, _ suffix: String) -> MILName {
    MILName(name: "\((names[id] ?? graph[id].name))_\(suffix)", exact: false)
  }

  /// Appends an operation and returns its tensor.
  @discardableResult
  func op(_ type: String, _ params: [(String, MILParam)], _ name: MILName, _ dataType: MILElementType, _ shape: [Int])
    throws -> MILTensor
  {
    try builder.op(type, params, name: name.name, exactName: name.exact, dataType: dataType, shape: shape)
  }

  /// Appends the operation producing node output `id` in `layout` (its type follows `dataType`) and records it.
  @discardableResult
  mutating func produce(
    _ id: ValueID, _ layout: MILLayout, _ type: String, _ params: [(String, MILParam)], dataType: MILElementType
  ) throws -> MILTensor {
    let name = resultName(id, layout: layout, dataType: dataType)
    let result = try op(type, params, name, dataType, layout.shape(graph[id].type.shape))
    define(id, layout, result)
    return result
  }

  /// Appends an `identity` producing `id` from `x` (an IR no-op such as a cast to the type it already has).
  mutating func alias(_ id: ValueID, _ x: MILTensor, _ layout: MILLayout) throws {
    try produce(id, layout, "identity", [("x", .tensor(x))], dataType: x.dataType)
  }

  // MARK: Nodes

  mutating func emit(_ node: Node) throws {
    builder.currentLayer = node.origin?.name ?? node.name
    func unsupported(_ detail: String) -> CoreMLWriterError {
      .unsupportedOperation(layer: node.origin?.name ?? node.name, detail: detail)
    }
    switch node.operation {
    case .convolution2D(let conv): try emitConvolution(node, conv)
    case .convolutionTranspose(let conv): try emitConvolutionTranspose(node, conv)
    case .pooling2D(let pool): try emitPooling(node, pool)
    case .globalPooling2D(let kind, let keepDims): try emitGlobalPooling(node, kind: kind, keepDims: keepDims)
    case .upsampling2D(let h, let w, let mode): try emitUpsampling(node, height: h, width: w, mode: mode)
    case .zeroPadding2D(let box): try emitZeroPadding(node, box)
    case .cropping2D(let box): try emitCropping(node, box)
    case .activation(let activation): try emitActivation(node, activation)
    case .softmax(let axis): try emitSoftmax(node, axis: axis)
    case .elementwise(let kind): try emitElementwise(node, kind)
    case .concatenate(let axis): try emitConcatenate(node, axis: axis)
    case .constant(let constant): try emitConstant(node, constant)
    case .reduce(let reduction): try emitReduce(node, reduction)
    case .cast(let type): try emitCast(node, type)
    case .flatten: try emitReshape(node, target: graph[node.output].type.shape)
    case .reshape(let target): try emitReshape(node, target: target)
    case .permute(let order): try emitPermute(node, order: order)
    case .channelShuffle(let axis, let groups): try emitChannelShuffle(node, axis: axis, groups: groups)
    case .constantPad(let padding): try emitConstantPad(node, padding)
    case .slice(let slice): try emitSlice(node, slice)
    case .dense(let dense): try emitDense(node, dense)
    case .batchNormalization(let norm): try emitBatchNormalization(node, norm)
    case .layerNormalization(let norm): try emitLayerNormalization(node, norm)
    case .l2Normalize(let epsilon): try emitL2Normalize(node, epsilon: epsilon)
    case .localResponseNormalization(let lrn): try emitLocalResponseNormalization(node, lrn)
    case .dot(let cosine): try emitDot(node, cosine: cosine)
    case .matMul: try emitMatMul(node)
    case .embedding(let table): try emitEmbedding(node, table: table)
    case .recurrent(let recurrent): try emitRecurrent(node, recurrent)
    case .custom(let layer):
      throw unsupported(
        "custom layer '\(layer.className)': ML Programs have no custom layers; write this model as a neural network (.mlmodel) instead"
      )
    }
  }

  /// Fails unless the node's input is a single `[H, W, C]` image.
  func requireImage(_ node: Node) throws {
    guard rank(node.inputs[0]) == 3 else {
      throw CoreMLWriterError.unsupportedOperation(
        layer: node.origin?.name ?? node.name,
        detail:
          "\(node.operation.kindName) on a \(graph[node.inputs[0]].type.shape) tensor (the ML Program writer takes [H, W, C] images only)"
      )
    }
  }
}
