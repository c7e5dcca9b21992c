import ModelFormats
import ModelIR

/// An ONNX graph imported into the IR in ONNX's own layout: every tensor keeps its ONNX shape (batch
/// axis included, channels first), each operator computed with ONNX's semantics by IR operations
/// (channels-last spatial operations sit between transposes, which the passes cancel).
public struct ONNXImportedGraph: Sendable {
  public var graph: Graph
  /// The graph inputs' ONNX names, in graph order (initializers excluded).
  public var inputNames: [String]
  public var outputNames: [String]
  /// Operator histogram (`op type: count`) of the main graph.
  public var operatorCounts: [String: Int]
  /// The shape of every ONNX value the import computed or folded, by ONNX name.
  public var valueShapes: [String: [Int]]
  /// What the import decided that the file left open (a batch axis read as 1, sizes from the file's metadata).
  public var notes: [String] = []
}

public enum ONNXGraphImporter {
  /// Computes a graph of constants (no inputs): its outputs' values in order, or nil when it cannot
  /// (an operation the evaluator does not run, a value that is not finite). The ONNX frontend gives the
  /// reference runtime's direct loops; without one nothing is folded beyond what handlers fold.
  public typealias ConstantEvaluator = (Graph) -> [[Float]]?

  /// The unsupported operators of a model at its opset (`op type` or `domain::op type`), with counts;
  /// empty when every node has a handler.
  public static func unsupportedOperators(in model: ONNXModel) -> [String] {
    let opset = model.opsetVersion(domain: "") ?? 1
    var counts: [String: Int] = [:]
    // The nodes of If and Loop bodies too, as deep as they may nest (an explicit stack: no recursion).
    var pending: [(nodes: [ONNXNode], depth: Int)] = [(model.graph.nodes, 0)]
    while let (nodes, depth) = pending.popLast() {
      for node in nodes {
        if ONNXOperatorRegistry.entry(domain: node.domain, opType: node.opType, opset: opset) == nil {
          counts[
            node.domain.isEmpty || node.domain == "ai.onnx" ? node.opType : "\(node.domain)::\(node.opType)", default: 0
          ] += 1
        }
        guard depth < ONNXOperatorRegistry.maxSubgraphDepth else { continue }
        for attribute in node.attributes {
          switch attribute.value {
          case .graph(let g): pending.append((g.nodes, depth + 1))
          case .graphs(let gs): pending += gs.map { ($0.nodes, depth + 1) }
          default: break
          }
        }
      }
    }
    return counts.keys.sorted().map { counts[$0]! > 1 ? "\($0) (\(counts[$0]!) nodes)" : $0 }
  }

  /// Refuses a graph that is not in ONNX's single-assignment form, before anything is imported: every
  /// name is given a value once (no initializer, input or node output twice, no node output named like
  /// an input or initializer), every node input names a value defined before it (graph input,
  /// initializer or an earlier node's output), every declared output is computed, there is at least
  /// one output, and an initializer that is also a graph input (its default value) has the input's
  /// declared shape. Each error names the value and what it clashes with.
  static func checkWellFormed(_ graph: ONNXGraph, path: String) throws {
    func fail(_ detail: String) -> ONNXImportError { .invalidGraph(path: path, detail: detail) }
    guard !graph.outputs.isEmpty else { throw fail("the graph declares no outputs") }
    var defined: [String: String] = [:]
    var initializerShapes: [String: [Int]] = [:]
    for tensor in graph.initializers {
      guard defined[tensor.name] == nil else { throw fail("initializer '\(tensor.name)' is given twice") }
      defined[tensor.name] = "an initializer"
      initializerShapes[tensor.name] = tensor.dims
    }
    var inputNames = Set<String>()
    for input in graph.inputs {
      guard !input.name.isEmpty else { throw fail("a graph input has no name") }
      guard inputNames.insert(input.name).inserted else { throw fail("graph input '\(input.name)' is declared twice") }
      if let dims = initializerShapes[input.name] {
        // The initializer is the input's default value: it must fit the declared shape.
        if case .tensor(_, let declared?) = input.type {
          let fits =
            declared.count == dims.count
            && zip(declared, dims).allSatisfy { dim, size in
              if case .value(let v) = dim { return v == size }
              return true
            }
          guard fits else {
            throw fail(
              "initializer '\(input.name)' has shape \(dims), but the graph input of that name declares \(declared.map { "\($0)" })"
            )
          }
        }
      } else {
        defined[input.name] = "a graph input"
      }
    }
    for (index, node) in graph.nodes.enumerated() {
      let label = node.name.isEmpty ? "node #\(index) (\(node.opType))" : "node '\(node.name)' (\(node.opType))"
      for input in node.inputs where !input.isEmpty && defined[input] == nil {
        throw fail("\(label) reads '\(input)', which no graph input, initializer or earlier node defines")
      }
      for output in node.outputs where !output.isEmpty {
        if let other = defined[output] { throw fail("\(label) computes '\(output)', which is already \(other)") }
        defined[output] = label + "'s output"
      }
    }
    var outputNames = Set<String>()
    for output in graph.outputs {
      guard defined[output.name] != nil else {
        throw fail("output '\(output.name)' is not computed: no node, input or initializer defines it")
      }
      guard outputNames.insert(output.name).inserted else { throw fail("output '\(output.name)' is declared twice") }
    }
  }

  /// The shape each graph input is imported at: the sizes `given` by input name (which may fill open
  /// sizes but not contradict the file's), else the declared sizes with an open leading batch axis read
  /// as 1 and an image's open height and width taken from an Ultralytics export's `imgsz` metadata.
  /// Every input size still open is reported at once (`UnknownInputSizes`). `bound` names inputs given
  /// values (initializers, constants), which are not inputs.
  static func inputShapesToImport(
    _ model: ONNXModel, path: String, given: [String: [Int]], bound: Set<String>
  ) throws -> (shapes: [String: [Int]], notes: [String]) {
    var shapes: [String: [Int]] = [:]
    var notes: [String] = []
    var open: [UnknownInputSizes.Input] = []
    let inputs = model.graph.inputs.filter { !bound.contains($0.name) }
    // Ultralytics records the size it exported for: "imgsz": "[640, 640]" (height, width).
    let recordedSize: [Int]? = model.metadataProps["imgsz"].flatMap { text in
      let sizes = text.split(whereSeparator: { !$0.isNumber }).compactMap { Int($0) }
      guard sizes.count == 1 || sizes.count == 2, sizes.allSatisfy({ (1...GraphLimits.maxSize).contains($0) }) else {
        return nil
      }
      return sizes.count == 1 ? [sizes[0], sizes[0]] : sizes
    }
    for input in inputs {
      guard case .tensor(_, let declared) = input.type else { continue }
      guard let dims = declared ?? given[input.name].map({ $0.map { ONNXDimension.value($0) } }) else {
        open.append(UnknownInputSizes.Input(name: input.name, dimensions: []))
        continue
      }
      if let sizes = given[input.name] {
        guard sizes.count == dims.count else {
          throw ONNXImportError.invalidGraph(
            path: path, detail: "input '\(input.name)' has rank \(dims.count); the shape given has \(sizes.count) axes")
        }
        for (axis, (size, dim)) in zip(sizes, dims).enumerated() {
          if case .value(let fixed) = dim, fixed != size {
            throw ONNXImportError.invalidGraph(
              path: path,
              detail:
                "input '\(input.name)' axis \(axis) is \(fixed) in the file; the shape given has \(size) (only sizes the file leaves open can be given)"
            )
          }
        }
        shapes[input.name] = sizes
        continue
      }
      var shape: [Int] = []
      var dimensions: [UnknownInputSizes.Dimension] = []
      var stillOpen = false
      for (axis, dim) in dims.enumerated() {
        switch dim {
        case .value(let size):
          shape.append(size)
          dimensions.append(.size(size))
        case .symbol, .unknown:
          let label: String? = { if case .symbol(let name) = dim { return name } else { return nil } }()
          if axis == 0 && dims.count > 1 {
            notes.append(
              "input '\(input.name)': the batch axis has no fixed size in the file (\(dim)); converted with batch 1")
            shape.append(1)
            dimensions.append(.size(1))
          } else if let recordedSize, inputs.count == 1, dims.count == 4, axis >= 2 {
            shape.append(recordedSize[axis - 2])
            dimensions.append(.size(recordedSize[axis - 2]))
            if axis == 3 {
              notes.append(
                "input '\(input.name)': height and width \(recordedSize[0])x\(recordedSize[1]) from the file's 'imgsz' metadata (the size it was exported for)"
              )
            }
          } else {
            shape.append(0)
            dimensions.append(.open(label))
            stillOpen = true
          }
        }
      }
      if stillOpen {
        open.append(UnknownInputSizes.Input(name: input.name, dimensions: dimensions))
      } else {
        shapes[input.name] = shape
      }
    }
    guard open.isEmpty else { throw UnknownInputSizes(path: path, inputs: open) }
    return (shapes, notes)
  }

  /// Imports `model`; `inputShapes` fixes named (symbolic) dimensions by input name, and every other
  /// symbolic or unknown dimension must be a leading batch axis (read as 1). `constants` binds graph
  /// inputs to known values (as initializers would).
  public static func importGraph(
    _ model: ONNXModel, path: String, inputShapes: [String: [Int]] = [:], constants: [String: ONNXConstant] = [:],
    evaluator: ConstantEvaluator? = nil
  ) throws -> ONNXImportedGraph {
    let opsetVersion = model.opsetVersion(domain: "") ?? 1
    guard opsetVersion <= ONNXOperatorRegistry.newestOpset else {
      throw ONNXImportError.invalidGraph(
        path: path,
        detail:
          "the model imports opset \(opsetVersion) of the default domain; operators are known up to opset \(ONNXOperatorRegistry.newestOpset) (export with opset_version=\(ONNXOperatorRegistry.newestOpset) or lower)"
      )
    }
    let unsupported = unsupportedOperators(in: model)
    guard unsupported.isEmpty else {
      throw ONNXImportError.unsupportedOperators(path: path, operators: unsupported, opset: opsetVersion)
    }
    let graph = model.graph
    try checkWellFormed(graph, path: path)
    var values: [String: ONNXValue] = [:]
    for initializer in graph.initializers { values[initializer.name] = .constant(try ONNXConstant(initializer)) }
    for (name, value) in constants { values[name] = .constant(value) }
    var builder = GraphBuilder()
    var inputNames: [String] = []
    var inputIDs = Set<ValueID>()
    var integerValues = Set<ValueID>()
    var indexCasts: [ValueID: String] = [:]
    var constantNodes: [String: ValueID] = [:]
    let (shapes, notes) = try inputShapesToImport(model, path: path, given: inputShapes, bound: Set(values.keys))
    for input in graph.inputs where values[input.name] == nil {
      guard case .tensor(let elementType, _) = input.type, let shape = shapes[input.name] else {
        throw ONNXImportError.invalidGraph(path: path, detail: "input '\(input.name)' is not a tensor")
      }
      do {
        let id = try builder.addInput(name: input.name, type: TensorType(shape))
        values[input.name] = ONNXValue.tensor(id)
        inputIDs.insert(id)
        if elementType.isInteger { integerValues.insert(id) }
      } catch {
        throw ONNXImportError.invalidGraph(path: path, detail: "input '\(input.name)': \(error)")
      }
      inputNames.append(input.name)
    }
    let opset = model.opsetVersion(domain: "") ?? 1
    var counts: [String: Int] = [:]
    for node in graph.nodes {
      counts[node.opType, default: 0] += 1
      guard let entry = ONNXOperatorRegistry.entry(domain: node.domain, opType: node.opType, opset: opset) else {
        continue
      }
      var context = ONNXNodeContext(
        node: node, opset: opset, path: path, builder: builder, values: values, integerValues: integerValues,
        constantNodes: constantNodes)
      context.indexCasts = indexCasts
      builder = GraphBuilder()
      values = [:]
      defer {
        (builder, values, integerValues, constantNodes) = (
          context.builder, context.values, context.integerValues, context.constantNodes
        )
        indexCasts = context.indexCasts
      }
      // A node of float constants only is computed now (Swin V2's position-bias MLP of its coordinate
      // table, gathered by a constant index): its outputs become constants for the nodes after it.
      let present = node.inputs.filter { !$0.isEmpty }
      let foldable =
        evaluator != nil && !present.isEmpty
        && present.allSatisfy { name in
          if case .constant(let c) = context.values[name], c.ints == nil { return true }
          return false
        }
      let start = context.builder.nodeCount
      try entry.handler(&context)
      if foldable, let evaluator { fold(&context, from: start, evaluator: evaluator) }
    }
    var outputs: [ValueID] = []
    var outputNames: [String] = []
    for output in graph.outputs {
      guard let value = values[output.name] else {
        throw ONNXImportError.invalidGraph(path: path, detail: "output '\(output.name)' is not computed")
      }
      var id: ValueID
      switch value {
      case .tensor(let t): id = t
      case .constant(let c):
        builder.origin = LayerOrigin(name: output.name, type: "Constant")
        id = try builder.add(
          .constant(Constant(shape: c.shape.isEmpty ? [1] : c.shape, values: c.floats)), name: output.name, inputs: [])
      }
      // An output read twice, or an input passed through, needs a value of its own.
      if outputs.contains(id) || inputIDs.contains(id) {
        builder.origin = LayerOrigin(name: output.name, type: "Identity")
        id = try builder.add(
          .reshape(targetShape: builder.type(of: id).shape), name: output.name + "__copy", inputs: [id])
      }
      outputs.append(id)
      outputNames.append(output.name)
    }
    var result = builder.build(outputs: outputs).pruned()
    // A float cast to integers is read only as an embedding's ids (whole numbers there, as the cast's
    // truncation gives them): anything else would compute with the float values.
    for (id, castName) in indexCasts.sorted(by: { $0.key < $1.key }) {
      let readers = result.nodes.filter { $0.inputs.contains(id) }
      guard !result.outputs.contains(id),
        readers.allSatisfy({ node in
          if case .embedding = node.operation { return true }
          return false
        })
      else {
        throw ONNXImportError.invalidNode(
          path: path, node: castName, opType: "Cast",
          detail:
            "a cast of a computed float tensor to integers is supported only as the ids of a Gather from a constant table (an embedding), not read by \(readers.map(\.name).filter { !$0.isEmpty }.prefix(3).joined(separator: ", "))"
        )
      }
    }
    for (id, name) in zip(result.outputs, outputNames) { try result.claimName(name, for: id) }
    var valueShapes: [String: [Int]] = [:]
    for (name, value) in values {
      switch value {
      case .tensor(let id): valueShapes[name] = builder.type(of: id).shape
      case .constant(let c): valueShapes[name] = c.shape
      }
    }
    return ONNXImportedGraph(
      graph: result, inputNames: inputNames, outputNames: outputNames, operatorCounts: counts, valueShapes: valueShapes,
      notes: notes)
  }

  /// Replaces the tensor outputs of the node just imported (whose inputs were all constants) by their
  /// values, computed by `evaluator` on the IR nodes its handler added (from position `start`), when
  /// they read only constants and hold at most `ONNXConstant.maxFoldedCount` elements in all. The
  /// nodes stay in the builder, unread, and the final pruning drops them.
  static func fold(_ context: inout ONNXNodeContext, from start: Int, evaluator: ConstantEvaluator) {
    let added = context.builder.nodes(since: start)
    guard !added.isEmpty else { return }
    let outputs = context.node.outputs.compactMap { name -> (name: String, id: ValueID)? in
      guard case .tensor(let id) = context.values[name] else { return nil }
      return (name, id)
    }
    let total = outputs.reduce(0) { $0 + context.builder.type(of: $1.id).elementCount }
    guard !outputs.isEmpty, total <= ONNXConstant.maxFoldedCount,
      outputs.allSatisfy({ context.builder.type(of: $0.id).dataType == .float32 })
    else { return }
    // The constants the added nodes read that earlier nodes made, by value id.
    var known: [ValueID: ONNXConstant] = [:]
    for (name, id) in context.constantNodes {
      if case .constant(let c) = context.values[name] { known[id] = c }
    }
    var small = GraphBuilder()
    var mapped: [ValueID: ValueID] = [:]
    do {
      for node in added {
        for input in node.inputs where mapped[input] == nil {
          guard let c = known[input] else { return }  // a computed tensor: not a constant node
          mapped[input] = try small.add(
            .constant(Constant(shape: c.shape.isEmpty ? [1] : c.shape, values: c.floats)), name: "c\(input)", inputs: []
          )
        }
        mapped[node.output] = try small.add(
          node.operation, name: "n\(node.output)", inputs: node.inputs.map { mapped[$0]! })
      }
    } catch {
      return
    }
    guard let results = evaluator(small.build(outputs: outputs.map { mapped[$0.id]! })), results.count == outputs.count
    else { return }
    let shapes = outputs.map { context.builder.type(of: $0.id).shape }
    guard zip(shapes, results).allSatisfy({ $1.count == $0.reduce(1, *) && $1.allSatisfy(\.isFinite) }) else { return }
    for ((output, shape), values) in zip(zip(outputs, shapes), results) {
      context.values[output.name] = .constant(ONNXConstant(shape: shape, floats: values))
    }
  }
}
