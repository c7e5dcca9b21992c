import CoreMLFormat
import ModelIR

/// Brings an imported Core ML (or ONNX) graph to the IR's conventions at its edges.
///
/// The IR's model inputs and outputs have no batch axis and are channels last: `[H, W, C]`, `[T, D]`
/// or `[D]` (what the writers map back to Core ML's `(C, H, W)` and `(D)` arrays, or `[1, C, H, W]`
/// and `[1, D]` in an ML Program). Each Core ML input becomes such a tensor followed by the transpose
/// and reshape back to the importer's layout; each output gets the inverse. The importer's graph sits
/// unchanged in between, and `GraphPipeline.standard` later cancels the transposes that meet.
enum SourceLayout {
  /// How a Core ML tensor corresponds to an IR tensor.
  enum Form: Equatable {
    /// `[..., C, H, W]` with unit leading axes, as IR `[H, W, C]`.
    case channelsFirst(c: Int, h: Int, w: Int)
    /// Any shape holding the IR shape's elements in the same order (unit axes added or dropped).
    case sameOrder([Int])

    var irShape: [Int] {
      switch self {
      case .channelsFirst(let c, let h, let w): return [h, w, c]
      case .sameOrder(let shape): return shape
      }
    }
  }

  /// The IR form of a Core ML tensor shape, or nil when the writers have no counterpart for it.
  /// - Parameter rank5: the classic rank-5 mapping, where `[S, C, H, W]` blobs carry vectors as `[S, C, 1, 1]`.
  /// - Parameter channelsLast: a `[1, H, W, C]` array the source computes on channels last (a TensorFlow
  ///   export's interface), read in its own element order.
  static func form(of shape: [Int], image: Bool, rank5: Bool, channelsLast: Bool = false) -> Form? {
    if channelsLast, !image, !rank5, shape.count == 4, shape[0] == 1 { return .sameOrder(Array(shape.dropFirst())) }
    if image {
      guard shape.count >= 3, shape.dropLast(3).allSatisfy({ $0 == 1 }) else { return nil }
      let chw = Array(shape.suffix(3))
      return .channelsFirst(c: chw[0], h: chw[1], w: chw[2])
    }
    if rank5 {
      guard shape.count == 4 else {
        return shape.count <= 2 ? .sameOrder(shape.count == 2 && shape[0] == 1 ? [shape[1]] : shape) : nil
      }
      let (s, c, h, w) = (shape[0], shape[1], shape[2], shape[3])
      if h == 1 && w == 1 { return .sameOrder(s == 1 ? [c] : [s, c]) }
      return s == 1 ? .channelsFirst(c: c, h: h, w: w) : nil
    }
    // Exact mapping and ML Programs: the description's shape, batch axis first; an array whose first axis
    // is not a unit batch axis ([3000, 3000]) is read whole, in its own order; so is a rank-5 or higher
    // array after its unit batch axis (coremltools' TimeDistributed input [1, T, H, W, C]).
    switch shape.count {
    case 1: return .sameOrder(shape)
    case 2: return .sameOrder(shape[0] == 1 ? [shape[1]] : shape)
    // [1, T, D] is a sequence; any other rank-3 array is read as (C, H, W), which holds its elements
    // exactly either way (the transposes are the IR's bookkeeping).
    case 3:
      return shape[0] == 1 ? .sameOrder([shape[1], shape[2]]) : .channelsFirst(c: shape[0], h: shape[1], w: shape[2])
    // A rank-4 array of a batch above 1 is not read: importers take rank 4 as NCHW images.
    case 4: return shape[0] == 1 ? .channelsFirst(c: shape[1], h: shape[2], w: shape[3]) : nil
    default: return shape[0] == 1 ? .sameOrder(shape) : nil
    }
  }

  /// The graph in the IR's conventions, and the form each multiarray input and output had in the source
  /// (by feature name), from which the writers can declare them as the source did.
  static func canonicalGraph(_ model: CoreMLModel, path: String) throws -> (graph: Graph, forms: [String: Form]) {
    let source = model.graph
    let rank5 = model.spec.program == nil && model.usesRank5Mapping
    var inputs: [SourceInput] = []
    for (input, id) in zip(model.inputs, source.inputs) {
      // A recurrent layer's optional state input, read as zeros: the written model does not declare it.
      if model.zeroStateInputs.contains(input.name) && !source.nodes.contains(where: { $0.inputs.contains(id) }) {
        continue
      }
      // An image input is read after its scaler: the scaler becomes the source's image preprocessing.
      inputs.append(
        SourceInput(
          name: input.name, value: input.image != nil ? model.blobs[input.name] ?? id : id, image: input.image != nil))
    }
    let imageOutputs = Set(
      model.spec.outputs.filter { if case .image = $0.kind { return true } else { return false } }.map(\.name))
    return try canonicalGraph(source, inputs: inputs, rank5: rank5, imageOutputs: imageOutputs) {
      CoreMLReaderError.invalidNetwork(path: path, detail: $0)
    }
  }

  /// A graph input as the source declares it: the value the converted graph starts from (an image
  /// input's scaled pixels), and whether it is an image (always channels first).
  struct SourceInput {
    var name: String
    var value: ValueID
    var image: Bool
  }

  /// `source` with its edges in the IR's conventions: each of `inputs` becomes a new graph input of its
  /// IR form, transposed and reshaped back to the source's shape; each output gets the inverse. Nodes
  /// that only compute what an input replaces (an image scaler) go. `fail` makes the format's error.
  /// `channelsLast` names the inputs and outputs to read as `[1, H, W, C]` in their own order.
  static func canonicalGraph(
    _ source: Graph, inputs: [SourceInput], rank5: Bool, channelsLast: Set<String> = [], imageOutputs: Set<String> = [],
    fail: (String) -> Error
  ) throws -> (graph: Graph, forms: [String: Form]) {
    var builder = GraphBuilder()
    var mapped: [ValueID: ValueID] = [:]
    var newInputs = Set<ValueID>()
    var forms: [String: Form] = [:]

    for input in inputs {
      let shape = source[input.value].type.shape
      guard
        let form = form(of: shape, image: input.image, rank5: rank5, channelsLast: channelsLast.contains(input.name))
      else {
        throw fail(
          "input '\(input.name)' has shape \(shape), which a written model cannot declare (batch and sequence axes must be 1)"
        )
      }
      if !input.image { forms[input.name] = form }
      let value = try builder.addInput(
        name: input.name, type: TensorType(form.irShape, dataType: source[input.value].type.dataType),
        optional: source[input.value].isOptional)
      newInputs.insert(value)
      builder.origin = LayerOrigin(name: input.name, type: "input")
      var adapted = value
      if case .channelsFirst = form {
        adapted = try builder.add(.permute(order: [2, 0, 1]), name: input.name + "__to_chw", inputs: [adapted])
      }
      if builder.type(of: adapted).shape != shape {
        adapted = try builder.add(.reshape(targetShape: shape), name: input.name + "__to_source", inputs: [adapted])
      }
      builder.origin = nil
      mapped[input.value] = adapted
    }

    // The source's nodes, but those computing what an input replaces (they read values that are gone).
    for node in source.nodes where mapped[node.output] == nil {
      let nodeInputs = node.inputs.compactMap { mapped[$0] }
      guard nodeInputs.count == node.inputs.count else { continue }
      builder.origin = node.origin
      mapped[node.output] = try builder.add(node.operation, name: node.name, inputs: nodeInputs)
    }
    builder.origin = nil

    var outputs: [ValueID] = []
    for id in source.outputs {
      let name = source[id].name
      guard let value = mapped[id] else {
        throw fail("output '\(name)' depends on an image input's raw pixels, not only on its scaled values")
      }
      let shape = source[id].type.shape
      // An image output is a [C, H, W] tensor (after unit axes), as Core ML makes pixels of it.
      guard
        let form = form(
          of: shape, image: imageOutputs.contains(name), rank5: rank5, channelsLast: channelsLast.contains(name))
      else {
        throw fail(
          "output '\(name)' has shape \(shape), which a written model cannot declare (batch and sequence axes must be 1)"
        )
      }
      if !imageOutputs.contains(name) { forms[name] = form }
      var adapted = value
      builder.origin = LayerOrigin(name: name, type: "output")
      if case .channelsFirst(let c, let h, let w) = form {
        if shape.count != 3 {
          adapted = try builder.add(.reshape(targetShape: [c, h, w]), name: name + "__squeezed", inputs: [adapted])
        }
        adapted = try builder.add(.permute(order: [1, 2, 0]), name: name + "__to_hwc", inputs: [adapted])
      } else if shape != form.irShape {
        adapted = try builder.add(.reshape(targetShape: form.irShape), name: name + "__to_ir", inputs: [adapted])
      }
      builder.origin = nil
      // An output read twice (or an input passed through) needs a value of its own.
      if outputs.contains(adapted) || newInputs.contains(adapted) {
        adapted = try builder.add(
          .reshape(targetShape: builder.type(of: adapted).shape), name: name + "__copy", inputs: [adapted])
      }
      outputs.append(adapted)
    }
    var graph = builder.build(outputs: outputs).pruned()
    // Outputs carry the feature names; an internal value with such a name steps aside.
    for (id, original) in zip(outputs, source.outputs) { try graph.claimName(source[original].name, for: id) }
    return (graph, forms)
  }
}
