import ModelIR

/// The steps the fast interpreter runs: graph nodes with batch normalization folded into the
/// convolution before it and elementwise activations fused into the step before them.
///
/// Fusion only joins a node with its sole consumer, so no value that anything else reads is skipped.
/// The direct interpreter runs the graph node by node instead; tests hold the two together.
struct ExecutionPlan: Sendable {
  struct Step: Sendable {
    var operation: Operation
    var inputs: [ValueID]
    var output: ValueID
    /// Applied to every element of the result, in order, in one pass.
    var epilogue: [Activation]
    /// For convolutions on the fast path: the oneDNN kernel, which applies the epilogue's leading
    /// activations itself (`PreparedConvolution.remainingEpilogue` are left).
    var prepared: PreparedConvolution? = nil
    /// For a convolution with a residual `Add` fused in: the other operand, which the result is added to
    /// (it is also the last of `inputs`).
    var addend: ValueID? = nil
    /// For pooling on the fast path: the oneDNN kernel.
    var pooling: PreparedPooling? = nil
  }

  let steps: [Step]

  /// - Parameter observed: values that must be computed as they are (not fused away), besides the outputs.
  init(graph: Graph, fuse: Bool, observed: Set<ValueID> = []) {
    guard fuse else {
      steps = graph.nodes.map { Step(operation: $0.operation, inputs: $0.inputs, output: $0.output, epilogue: []) }
      return
    }
    var consumers = [Int](repeating: 0, count: graph.values.count)
    for node in graph.nodes { for input in node.inputs { consumers[input] += 1 } }
    for output in graph.outputs { consumers[output] += 1 }
    // An observed value counts as read once more, so no step fuses it away.
    for value in observed { consumers[value] += 1 }
    var consumerIndex: [ValueID: Int] = [:]
    for (index, node) in graph.nodes.enumerated() {
      for input in node.inputs where consumers[input] == 1 { consumerIndex[input] = index }
    }

    var absorbed = Set<Int>()
    // ZeroPadding2D read only by a `valid` convolution: the convolution pads instead (when oneDNN takes it).
    var paddingBefore: [Int: Int] = [:]
    for (index, node) in graph.nodes.enumerated() {
      guard case .zeroPadding2D = node.operation, consumers[node.output] == 1, !graph.outputs.contains(node.output),
        let consumer = consumerIndex[node.output], case .convolution2D(let conv) = graph.nodes[consumer].operation,
        conv.padding == .valid,
        graph[node.inputs[0]].type.shape.count == 3
      else { continue }
      paddingBefore[consumer] = index
      absorbed.insert(index)
    }
    var steps: [Step] = []
    for (index, node) in graph.nodes.enumerated() where !absorbed.contains(index) {
      var step = Step(operation: node.operation, inputs: node.inputs, output: node.output, epilogue: [])
      var padding: (node: Node, box: Box2D)?
      if let paddingIndex = paddingBefore[index], case .zeroPadding2D(let box) = graph.nodes[paddingIndex].operation {
        padding = (graph.nodes[paddingIndex], box)
        step.inputs = graph.nodes[paddingIndex].inputs
      }
      // The sole consumer of this step's output, when it can be fused.
      func next() -> (Int, Node)? {
        guard consumers[step.output] == 1, let consumer = consumerIndex[step.output],
          !graph.outputs.contains(step.output)
        else { return nil }
        return (consumer, graph.nodes[consumer])
      }
      if case .convolution2D(let conv) = step.operation, let (consumer, bn) = next(),
        case .batchNormalization(let norm) = bn.operation
      {
        step.operation = .convolution2D(Self.folding(norm, into: conv))
        step.output = bn.output
        absorbed.insert(consumer)
      }
      if Self.acceptsEpilogue(step.operation) {
        while let (consumer, activation) = next(), case .activation(let function) = activation.operation,
          Self.isElementwise(function)
        {
          step.epilogue.append(function)
          step.output = activation.output
          absorbed.insert(consumer)
        }
      }
      step.epilogue = Self.simplified(step.epilogue)
      if case .convolution2D(let conv) = step.operation {
        let input = Array(graph[step.inputs[0]].type.shape.suffix(3))
        let leading = graph[step.inputs[0]].type.shape.count - 3
        let output = Array(graph[step.output].type.shape.dropFirst(max(leading, 0)))
        step.prepared = PreparedConvolution(
          conv, inputShape: input, outputShape: output, epilogue: step.epilogue, zeroPadding: padding?.box)
        if let padding, step.prepared == nil {
          // oneDNN refused it: pad first after all, and convolve the padded value.
          steps.append(
            Step(
              operation: padding.node.operation, inputs: padding.node.inputs, output: padding.node.output, epilogue: [])
          )
          step.inputs = [padding.node.output]
        }
      }
      if case .pooling2D(let pool) = step.operation, graph[step.inputs[0]].type.shape.count == 3 {
        step.pooling = PreparedPooling(
          pool, inputShape: graph[step.inputs[0]].type.shape, outputShape: graph[node.output].type.shape)
      }
      if let fused = Self.fusingAdd(step, into: &steps, graph: graph, consumers: consumers) { step = fused }
      steps.append(step)
    }
    self.steps = steps
  }

  /// `conv(x) + y` (then activations) as one oneDNN convolution with a sum post-op writing into `y`'s
  /// buffer, when the convolution's result is read only by the `Add`: the convolution step moves to the
  /// `Add`'s place (its inputs are ready earlier; nothing else reads its result). Nil when it does not apply.
  static func fusingAdd(_ add: Step, into steps: inout [Step], graph: Graph, consumers: [Int]) -> Step? {
    guard case .elementwise(.add) = add.operation, add.inputs.count == 2, add.inputs[0] != add.inputs[1],
      graph[add.output].type.dataType == .float32,
      graph[add.inputs[0]].type.shape == graph[add.output].type.shape,
      graph[add.inputs[1]].type.shape == graph[add.output].type.shape
    else { return nil }
    for (k, operand) in add.inputs.enumerated() {
      let other = add.inputs[1 - k]
      guard consumers[operand] == 1, let index = steps.lastIndex(where: { $0.output == operand }),
        let prepared = steps[index].prepared,
        !prepared.accumulates, prepared.remainingEpilogue.isEmpty,
        case .convolution2D(let conv) = steps[index].operation,
        graph[operand].type.dataType == .float32,
        let fused = PreparedConvolution(
          conv, inputShape: prepared.inputShape, outputShape: prepared.outputShape, epilogue: steps[index].epilogue,
          zeroPadding: prepared.zeroPadding, afterSum: add.epilogue)
      else { continue }
      let convolution = steps.remove(at: index)
      var step = Step(
        operation: convolution.operation, inputs: convolution.inputs + [other], output: add.output, epilogue: [])
      step.prepared = fused
      step.addend = other
      return step
    }
    return nil
  }

  /// Rewrites the iOS 11 clip that converters emit for relu6, `-threshold(-x, -max)`, and a ReLU before
  /// it, into one clip.
  static func simplified(_ activations: [Activation]) -> [Activation] {
    var result: [Activation] = []
    for activation in activations {
      result.append(activation)
      if result.count >= 3, case .linear(-1, 0) = result[result.count - 3],
        case .unary(let threshold) = result[result.count - 2], threshold.kind == .threshold, threshold.scale == 1,
        threshold.shift == 0,
        case .linear(-1, 0) = result[result.count - 1]
      {
        result.removeLast(3)
        result.append(.clip(min: -.infinity, max: -threshold.alpha))
      }
      if result.count >= 2, case .relu = result[result.count - 2],
        case .clip(let low, let high) = result[result.count - 1], low <= 0
      {
        result.removeLast(2)
        result.append(.clip(min: 0, max: high))
      }
    }
    return result
  }

  /// Operations whose output may be transformed in place before anything reads it.
  static func acceptsEpilogue(_ operation: Operation) -> Bool {
    switch operation {
    case .convolution2D, .convolutionTranspose, .dense, .batchNormalization, .elementwise, .pooling2D, .globalPooling2D:
      return true
    case .activation(let function): return isElementwise(function)
    default: return false
    }
  }

  /// Activations that treat each element alone (PReLU depends on the channel).
  static func isElementwise(_ activation: Activation) -> Bool {
    if case .parametricReLU = activation { return false }
    return true
  }

  /// `gamma * (conv(x) - mean) / sqrt(variance + epsilon) + beta` as one convolution.
  static func folding(_ norm: BatchNormalization, into conv: Convolution2D) -> Convolution2D {
    var folded = conv
    let outputs = conv.outputChannels
    let scales = (0..<outputs).map { norm.gamma.values[$0] / (norm.variance.values[$0] + norm.epsilon).squareRoot() }
    var kernel = conv.kernel.values
    for index in kernel.indices { kernel[index] *= scales[index % outputs] }
    folded.kernel = Constant(shape: conv.kernel.shape, values: kernel)
    var bias = [Float](repeating: 0, count: outputs)
    for o in 0..<outputs {
      let centred: Float = (conv.bias?.values[o] ?? 0) - norm.mean.values[o]
      bias[o] = centred * scales[o] + norm.beta.values[o]
    }
    folded.bias = Constant(shape: [outputs], values: bias)
    return folded
  }
}
