import ModelIR

extension ONNXOperatorRegistry {
  /// `If` whose condition is known at import (a shape test exporters write) and `Loop` with a known trip
  /// count (tf2onnx's recurrences): the branch taken, or every iteration, imported in place.
  static let controlFlowOperators: [String: [ONNXOperatorEntry]] =
    entries(["If": [1, 11, 13, 16, 19, 21]]) { try $0.ifNode() }
    .merging(entries(["Loop": [1, 11, 13, 16, 19, 21]]) { try $0.loop() }) { $0 + $1 }

  /// The most nodes all iterations of one `Loop` may add (its body's nodes times the trip count).
  static let maxUnrolledNodes = 200_000
  /// How deep `If` and `Loop` bodies may nest.
  static let maxSubgraphDepth = 16
}

extension ONNXNodeContext {
  /// `If`: the branch the constant condition selects; its outputs are the node's.
  mutating func ifNode() throws {
    let condition = try requiredConstant(0, "cond (a condition known when the model is read)")
    guard condition.floats.count == 1 else { throw invalid("cond has \(condition.floats.count) values, not one") }
    let key = condition.floats[0] != 0 ? "then_branch" : "else_branch"
    guard let branch = node.attribute(key)?.graph else { throw invalid("attribute '\(key)' must be a graph") }
    guard branch.outputs.count == outputCount else {
      throw invalid("\(key) has \(branch.outputs.count) outputs, the node \(outputCount)")
    }
    let results = try importSubgraph(branch, bindings: [:], tag: key == "then_branch" ? "then" : "else")
    for (index, value) in results.enumerated() { defineValue(value, output: index) }
  }

  /// `Loop` whose iterations are known when the model is read: a constant trip count `M`, a condition known
  /// at each iteration (TensorFlow's while loops as tf2onnx writes them: no `M`, the body compares a
  /// carried counter with a carried constant), or both. Every iteration is imported in turn, the
  /// loop-carried values passed on, each scan output stacked along a new first axis; the loop stops where
  /// `M` is reached or the condition turns false.
  mutating func loop() throws {
    guard let body = node.attribute("body")?.graph else { throw invalid("attribute 'body' must be a graph") }
    var trips: Int? = nil
    if hasInput(0) {
      let tripCounts = try requiredInts(0, "M (the trip count)")
      guard tripCounts.count == 1, tripCounts[0] >= 0 else {
        throw invalid("M \(tripCounts) must be one count, not negative")
      }
      trips = tripCounts[0]
    }
    var running = true
    if hasInput(1) {
      let condition = try requiredConstant(1, "cond (a condition known when the model is read)")
      guard condition.floats.count == 1 else { throw invalid("cond has \(condition.floats.count) values, not one") }
      running = condition.floats[0] != 0
    } else if trips == nil {
      throw invalid("a loop with neither a trip count (M) nor a condition never ends")
    }
    let carriedCount = inputCount - 2
    guard carriedCount >= 0, body.inputs.count == carriedCount + 2, body.outputs.count >= carriedCount + 1 else {
      throw invalid(
        "the body's \(body.inputs.count) inputs and \(body.outputs.count) outputs do not fit \(max(carriedCount, 0)) loop-carried values"
      )
    }
    let scanCount = body.outputs.count - 1 - carriedCount
    guard outputCount <= carriedCount + scanCount else {
      throw invalid("\(outputCount) outputs for \(carriedCount + scanCount) results")
    }
    var carried: [ONNXValue] = []
    for index in 0..<carriedCount { carried.append(try inputValue(index + 2)) }
    var scans = [[ONNXValue]](repeating: [], count: scanCount)
    var iteration = 0
    // Bounded as it runs (steps and nodes), whether M or the condition ends it: exporters write a huge M
    // beside a condition that stops the loop early.
    while running && iteration < (trips ?? Int.max) {
      guard iteration < GraphLimits.maxUnrolledSteps else {
        throw invalid("the loop runs more than the \(GraphLimits.maxUnrolledSteps) steps unrolled")
      }
      let (importedNodes, overflow) = body.nodes.count.multipliedReportingOverflow(by: iteration + 1)
      guard !overflow, importedNodes <= ONNXOperatorRegistry.maxUnrolledNodes else {
        throw invalid(
          "\(iteration + 1) iterations of a \(body.nodes.count)-node body are more than \(ONNXOperatorRegistry.maxUnrolledNodes) nodes"
        )
      }
      var bindings: [String: ONNXValue] = [
        body.inputs[0].name: .constant(ONNXConstant(shape: [], ints: [iteration])),
        body.inputs[1].name: .constant(ONNXConstant(shape: [], ints: [1])),
      ]
      for (index, value) in carried.enumerated() { bindings[body.inputs[index + 2].name] = value }
      let results = try importSubgraph(body, bindings: bindings, tag: "iter\(iteration)")
      // The condition the body computes decides whether another iteration runs: it must be known.
      guard case .constant(let c) = results[0], c.floats.count == 1 else {
        throw invalid("the body's condition is computed from the data: a loop that stops on its data is not supported")
      }
      running = c.floats[0] != 0
      carried = Array(results[1..<(1 + carriedCount)])
      for (index, value) in results[(1 + carriedCount)...].enumerated() { scans[index].append(value) }
      iteration += 1
    }
    for (index, value) in carried.enumerated() { defineValue(value, output: index) }
    for (index, steps) in scans.enumerated() where carriedCount + index < outputCount {
      guard !steps.isEmpty else { throw invalid("a scan output of a loop of no iterations has no shape") }
      // Each step gets a leading axis of 1; the steps are joined along it.
      var parts: [ValueID] = []
      for (step, value) in steps.enumerated() {
        let id = try tensorOf(value, suffix: "__scan\(index)_\(step)")
        let shape = builder.type(of: id).shape
        parts.append(try add(.reshape(targetShape: [1] + shape), [id], suffix: "__scan\(index)_step\(step)"))
      }
      let joined = parts.count == 1 ? parts[0] : try add(.concatenate(axis: 0), parts, suffix: "__scan\(index)")
      defineValue(.tensor(joined), output: carriedCount + index)
    }
  }

  // MARK: Subgraphs

  /// The value of input `index` as it is (constant or tensor).
  func inputValue(_ index: Int) throws -> ONNXValue {
    guard hasInput(index), let value = values[node.inputs[index]] else { throw invalid("input \(index) is missing") }
    return value
  }

  /// A value as an IR tensor (a constant becomes a constant node).
  mutating func tensorOf(_ value: ONNXValue, suffix: String) throws -> ValueID {
    switch value {
    case .tensor(let id): return id
    case .constant(let c):
      return try add(.constant(Constant(shape: c.shape.isEmpty ? [1] : c.shape, values: c.floats)), [], suffix: suffix)
    }
  }

  /// Defines output `index` as `value`, constant or tensor.
  mutating func defineValue(_ value: ONNXValue, output index: Int) {
    switch value {
    case .tensor(let id): define(id, output: index)
    case .constant(let c): define(c, output: index)
    }
  }

  /// Imports `graph`'s nodes here, seeing this scope's values and `bindings` (its inputs), and returns
  /// its outputs' values. The names it defines are gone afterwards; the IR nodes it adds stay.
  mutating func importSubgraph(_ graph: ONNXGraph, bindings: [String: ONNXValue], tag _: String) throws -> [ONNXValue] {
    guard depth < ONNXOperatorRegistry.maxSubgraphDepth else {
      throw invalid("subgraphs nested more than \(ONNXOperatorRegistry.maxSubgraphDepth) deep")
    }
    let outer = values
    var scope = values
    for initializer in graph.initializers { scope[initializer.name] = .constant(try ONNXConstant(initializer)) }
    for (name, value) in bindings { scope[name] = value }
    for inner in graph.nodes {
      guard let entry = ONNXOperatorRegistry.entry(domain: inner.domain, opType: inner.opType, opset: opset) else {
        throw invalid("its subgraph's \(inner.opType) node '\(inner.name)' is not supported at opset \(opset)")
      }
      for name in inner.inputs where !name.isEmpty && scope[name] == nil {
        throw invalid("its subgraph's node '\(inner.name)' reads '\(name)', which is not computed before it")
      }
      var context = ONNXNodeContext(
        node: inner, opset: opset, path: path, builder: builder, values: scope, integerValues: integerValues,
        constantNodes: [:])
      context.indexCasts = indexCasts
      context.depth = depth + 1
      builder = GraphBuilder()
      try entry.handler(&context)
      (builder, scope, integerValues, indexCasts) = (
        context.builder, context.values, context.integerValues, context.indexCasts
      )
    }
    var results: [ONNXValue] = []
    for output in graph.outputs {
      guard let value = scope[output.name] else {
        throw invalid("its subgraph's output '\(output.name)' is not computed")
      }
      results.append(value)
    }
    values = outer
    return results
  }
}
