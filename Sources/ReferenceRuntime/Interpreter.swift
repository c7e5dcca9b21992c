import CComputeKernels
import Foundation
import ModelIR

/// A float32 reference interpreter of the IR, deterministic, one batch item at a time.
///
/// It follows the IR's semantics (Keras' channels-last layout and TensorFlow padding). By default
/// convolutions and pooling run on oneDNN and dense layers on its sgemm, with batch normalization folded
/// into the convolution before it, padding and residual additions folded in, and elementwise activations
/// fused into the step before them (`ExecutionPlan`); `.direct` runs every node with the plain loops the
/// fast path is tested against.
public struct Interpreter: Sendable {
  /// Which implementation runs convolution and dense layers.
  public enum KernelChoice: Sendable {
    /// oneDNN convolutions, pooling and GEMM (kernels chosen from the CPU's features) and vector loops, each step on one thread.
    case fast
    /// Direct loops accumulating in Double: the oracle.
    case direct
  }

  public let graph: Graph
  public let kernels: KernelChoice
  /// Values kept as they are computed (never fused away), for `run(_:observing:)`.
  public let observed: Set<ValueID>
  let plan: ExecutionPlan

  /// - Parameter observed: intermediate values to compute and return from `runObserving(_:)`; fusion
  ///   never skips them, so each holds what its own node computes.
  public init(graph: Graph, kernels: KernelChoice = .fast, observed: Set<ValueID> = []) {
    _ = Self.reuseFreedMemory
    self.graph = graph
    self.kernels = kernels
    self.observed = observed
    plan = ExecutionPlan(graph: graph, fuse: kernels == .fast, observed: observed)
  }

  /// Activations are allocated and freed layer after layer: glibc returns large blocks to the system
  /// at once (each then page-faults in again), unless its mmap and trim thresholds are raised (to the
  /// 32 MiB maximum), so freed activations are reused.
  static let reuseFreedMemory: Void = { mc_reuse_freed_memory() }()

  /// Bytes the kernels hold for each thread that runs the graph, besides the values: the prepared
  /// oneDNN steps' scratchpads, kept with the thread, and the largest im2col buffer of a convolution
  /// that runs without oneDNN (`FastKernels.patchCount`, one step long). The direct loops hold neither.
  public var kernelBytesPerThread: Int {
    guard kernels == .fast else { return 0 }
    var total = 0
    var largestPatches = 0
    func add(_ bytes: Int) {
      let (sum, overflow) = total.addingReportingOverflow(bytes)
      total = overflow ? .max : sum
    }
    for step in plan.steps {
      add(step.prepared?.bytesPerThread ?? 0)
      add(step.pooling?.bytesPerThread ?? 0)
      if step.prepared == nil, case .convolution2D(let conv) = step.operation {
        let patches = FastKernels.patchCount(conv, outputShape: Array(graph[step.output].type.shape.suffix(3)))
        largestPatches = max(largestPatches, patches.multipliedReportingOverflow(by: 4).overflow ? .max : patches * 4)
      }
    }
    add(largestPatches)
    return total
  }

  /// Runs the graph on one batch item per input (in `graph.inputs` order) and returns the outputs.
  public func run(_ inputs: [Tensor]) -> [Tensor] { runObserving(inputs).outputs }

  /// Runs the graph and returns its outputs and every observed value that the outputs depend on
  /// (values of pruned or unused nodes are absent).
  ///
  /// - Parameter substitutes: observed values that the nodes after them read in place of what their own
  ///   node computed (which is still what `observed` returns): each then measures only the nodes between
  ///   it and the substituted values before it. A substitute must have its value's shape.
  /// - Parameter roundoffNoise: when given, every step's result is perturbed by noise of float32 roundoff's
  ///   size: a run that shows how far the model's own rounding can move its outputs.
  public func runObserving(
    _ inputs: [Tensor], substitutes: [ValueID: Tensor] = [:], roundoffNoise: RoundoffNoise? = nil
  ) -> (
    outputs: [Tensor], observed: [ValueID: Tensor]
  ) {
    var kept: [ValueID: Tensor] = [:]
    var values = [Tensor?](repeating: nil, count: graph.values.count)
    for (id, tensor) in zip(graph.inputs, inputs) {
      precondition(
        tensor.shape == graph[id].type.shape, "input '\(graph[id].name)' needs shape \(graph[id].type.shape)")
      values[id] = tensor
    }
    // Free each intermediate after its last use, so large models keep few activations alive.
    var remainingUses = [Int](repeating: 0, count: graph.values.count)
    for step in plan.steps { for input in step.inputs { remainingUses[input] += 1 } }
    for output in graph.outputs { remainingUses[output] += 1 }
    for id in graph.inputs where observed.contains(id) { kept[id] = values[id] }
    for (position, step) in plan.steps.enumerated() {
      let shape = graph[step.output].type.shape
      var result: [Float]
      // With roundoff made visible, a mean or sum is a float32 running sum, one value after another.
      let runningSum =
        roundoffNoise == nil
        ? nil
        : step.inputs.first.flatMap { values[$0] }.flatMap { input in
          RoundoffNoise.summedAxes(step.operation, inputShape: input.shape).map { (input, $0) }
        }
      if let (input, summed) = runningSum {
        result = RoundoffNoise.runningSum(input, axes: summed.axes, mean: summed.mean)
        for activation in step.epilogue { Kernels.apply(activation, to: &result) }
      } else if let prepared = step.prepared, let addend = step.addend {
        // The addend's buffer becomes the result: taken over (no copy) when this is its last use.
        result = values[addend]!.values
        if remainingUses[addend] == 1 && !observed.contains(addend) && !graph.outputs.contains(addend) {
          values[addend] = nil
        }
        prepared.run(values[step.inputs[0]]!.values, threads: 1, adding: &result)
        for activation in prepared.remainingEpilogue { Kernels.apply(activation, to: &result) }
      } else if let prepared = step.prepared {
        result = prepared.run(values[step.inputs[0]]!.values, threads: 1)
        for activation in prepared.remainingEpilogue { Kernels.apply(activation, to: &result) }
      } else if let pooling = step.pooling {
        result = pooling.run(values[step.inputs[0]]!.values)
        for activation in step.epilogue { Kernels.apply(activation, to: &result) }
      } else {
        result = evaluate(step.operation, step.inputs.map { values[$0]! }, outputShape: shape)
        for activation in step.epilogue { Kernels.apply(activation, to: &result) }
      }
      if let roundoffNoise, runningSum == nil {
        let size = RoundoffNoise.size(step.operation, inputShapes: step.inputs.map { graph[$0].type.shape })
        roundoffNoise.perturb(&result, size: size, step: position)
      }
      if graph[step.output].type.dataType == .float16 {
        if kernels == .fast { FastKernels.roundToFloat16(&result) } else { Kernels.roundToFloat16(&result) }
      }
      values[step.output] = Tensor(shape: shape, values: result)
      if observed.contains(step.output) {
        kept[step.output] = values[step.output]
        if let substitute = substitutes[step.output] {
          precondition(substitute.shape == shape, "substitute for '\(graph[step.output].name)' needs shape \(shape)")
          values[step.output] = substitute
        }
      }
      for input in step.inputs {
        remainingUses[input] -= 1
        if remainingUses[input] == 0 { values[input] = nil }
      }
    }
    return (graph.outputs.map { values[$0]! }, kept)
  }

  /// The operations this interpreter cannot evaluate (custom layers, whose code is the app's).
  public static func unsupportedOperations(in graph: Graph) -> [String] {
    graph.nodes.compactMap { node in
      if case .custom(let layer) = node.operation { return "\(node.name) (custom layer \(layer.className))" }
      return nil
    }
  }

  /// Operations defined on one `[H, W, C]` image, applied to each image when there are leading axes.
  static func isSpatial(_ operation: ModelIR.Operation) -> Bool {
    switch operation {
    case .convolution2D, .convolutionTranspose, .pooling2D, .globalPooling2D, .zeroPadding2D, .cropping2D,
      .upsampling2D:
      return true
    default: return false
    }
  }

  /// Runs the graph on every batch item in turn; `batch[i]` holds item `i`'s inputs.
  public func run(batch: [[Tensor]]) -> [[Tensor]] { batch.map { run($0) } }

  func evaluate(_ operation: ModelIR.Operation, _ inputs: [Tensor], outputShape: [Int]) -> [Float] {
    if case .constant(let value) = operation { return value.values }
    let x = inputs[0]
    if Self.isSpatial(operation), x.shape.count > 3 {
      // Images along leading axes (TimeDistributed): one image at a time.
      let leadingCount = x.shape.count - 3
      // Global pooling may drop H and W, so each image's output shape is what follows the leading axes.
      let (inImage, outImage) = (Array(x.shape.suffix(3)), Array(outputShape.dropFirst(leadingCount)))
      let (inSize, count) = (inImage.reduce(1, *), x.shape.dropLast(3).reduce(1, *))
      return (0..<count).flatMap { index in
        evaluate(
          operation, [Tensor(shape: inImage, values: Array(x.values[index * inSize..<(index + 1) * inSize]))],
          outputShape: outImage)
      }
    }
    switch operation {
    case .convolution2D(let conv):
      return kernels == .fast
        ? FastKernels.convolution(x, conv, outputShape: outputShape)
        : Kernels.convolution(x, conv, outputShape: outputShape)
    case .convolutionTranspose(let conv): return Kernels.convolutionTranspose(x, conv, outputShape: outputShape)
    case .dense(let dense): return kernels == .fast ? FastKernels.dense(x, dense) : Kernels.dense(x, dense)
    case .batchNormalization(let norm):
      let c = norm.channels
      let scales = (0..<c).map { norm.gamma.values[$0] / (norm.variance.values[$0] + norm.epsilon).squareRoot() }
      let shifts = (0..<c).map { norm.beta.values[$0] - scales[$0] * norm.mean.values[$0] }
      var result = x.values
      result.withUnsafeMutableBufferPointer { out in
        for start in stride(from: 0, to: out.count, by: c) {
          for k in 0..<c { out[start + k] = scales[k] * out[start + k] + shifts[k] }
        }
      }
      return result
    case .activation(let activation): return Kernels.activation(activation, x)
    case .softmax(let axis): return Kernels.softmax(x, axis: axis)
    case .pooling2D(let pool):
      return kernels == .fast
        ? FastKernels.pooling(x, pool, outputShape: outputShape) : Kernels.pooling(x, pool, outputShape: outputShape)
    case .globalPooling2D(let kind, _):
      if kernels == .fast && x.shape.count == 3 && x.shape[0] * x.shape[1] > 0 {
        return FastKernels.globalPooling(x, kind: kind)
      }
      return Kernels.reduce(x, Reduction(kind: kind == .max ? .max : .mean, axes: [0, 1], keepDims: false))
    case .flatten, .reshape, .cast: return x.values
    case .permute(let order):
      var result = [Float](repeating: 0, count: x.values.count)
      let inStrides = Kernels.strides(x.shape)
      let sourceStrides = order.map { inStrides[$0] }
      Kernels.forEachIndex(outputShape) { index, coordinates in
        var source = 0
        for axis in coordinates.indices { source += coordinates[axis] * sourceStrides[axis] }
        result[index] = x.values[source]
      }
      return result
    case .channelShuffle(let axis, let groups):
      // Output entry j * groups + i of the axis is input entry i * n + j, for every outer and inner index.
      let count = x.shape[axis]
      let n = count / groups
      let inner = x.shape.suffix(from: axis + 1).reduce(1, *)
      let outer = x.shape.prefix(axis).reduce(1, *)
      var result = [Float](repeating: 0, count: x.values.count)
      for o in 0..<outer {
        for i in 0..<groups {
          for j in 0..<n {
            let source = (o * count + i * n + j) * inner
            let target = (o * count + j * groups + i) * inner
            for k in 0..<inner { result[target + k] = x.values[source + k] }
          }
        }
      }
      return result
    case .zeroPadding2D(let box):
      return Kernels.window(x, outputShape: outputShape) { y, xx in (y - box.top, xx - box.left) }
    case .cropping2D(let box):
      return Kernels.window(x, outputShape: outputShape) { y, xx in (y + box.top, xx + box.left) }
    case .upsampling2D(let fh, let fw, let mode):
      return mode.isBilinear
        ? Kernels.bilinear(x, outputShape: outputShape, mode: mode)
        : Kernels.window(x, outputShape: outputShape) { y, xx in (y / fh, xx / fw) }
    case .elementwise(let kind):
      if kernels == .fast, let result = FastKernels.elementwise(kind, inputs, outputShape: outputShape) {
        return result
      }
      return Kernels.elementwise(kind, inputs, outputShape: outputShape)
    case .concatenate(let axis):
      let outer = outputShape.prefix(axis).reduce(1, *)
      var result: [Float] = []
      result.reserveCapacity(outputShape.reduce(1, *))
      for o in 0..<outer {
        for input in inputs {
          let block = input.shape.suffix(from: axis).reduce(1, *)
          result += input.values[(o * block)..<((o + 1) * block)]
        }
      }
      return result
    case .reduce(let reduction): return Kernels.reduce(x, reduction)
    case .constantPad(let padding):
      return kernels == .fast
        ? FastKernels.constantPad(x, padding, outputShape: outputShape)
        : Kernels.constantPad(x, padding, outputShape: outputShape)
    case .slice(let slice):
      return kernels == .fast
        ? FastKernels.slice(x, slice, outputShape: outputShape) : Kernels.slice(x, slice, outputShape: outputShape)
    case .constant(let value): return value.values
    case .recurrent(let layer): return RecurrentKernel.run(x, layer, initial: inputs.dropFirst().map(\.values))
    case .layerNormalization(let norm):
      let c = x.shape.last ?? 1
      var result = x.values
      for start in stride(from: 0, to: result.count, by: c) {
        let row = x.values[start..<start + c]
        let mean = row.reduce(0.0) { $0 + Double($1) } / Double(c)
        let variance = row.reduce(0.0) { $0 + (Double($1) - mean) * (Double($1) - mean) } / Double(c)
        let inverse = 1 / (variance + Double(norm.epsilon)).squareRoot()
        for k in 0..<c {
          let normalized = (Double(row[start + k]) - mean) * inverse
          result[start + k] = Float(normalized * Double(norm.gamma?.values[k] ?? 1) + Double(norm.beta?.values[k] ?? 0))
        }
      }
      return result
    case .localResponseNormalization(let lrn): return Kernels.localResponseNormalization(x, lrn)
    case .l2Normalize(let epsilon):
      let c = x.shape.last ?? 1
      return stride(from: 0, to: x.values.count, by: c).flatMap { start -> [Float] in
        let row = x.values[start..<start + c]
        let norm = (row.reduce(0.0) { $0 + Double($1) * Double($1) } + Double(epsilon)).squareRoot()
        return row.map { Float(Double($0) / norm) }
      }
    case .dot(let cosine):
      let (a, b) = (inputs[0].values, inputs[1].values)
      let product = zip(a, b).reduce(0.0) { $0 + Double($1.0) * Double($1.1) }
      guard cosine else { return [Float(product)] }
      let norms = (a.reduce(0.0) { $0 + Double($1) * Double($1) } * b.reduce(0.0) { $0 + Double($1) * Double($1) })
        .squareRoot()
      return [Float(product / max(norms, 1e-12))]
    case .matMul:
      return kernels == .fast
        ? MatrixProduct.fast(inputs[0], inputs[1], outputShape: outputShape)
        : MatrixProduct.direct(inputs[0], inputs[1], outputShape: outputShape)
    case .custom(let layer):
      preconditionFailure("custom layer \(layer.className) cannot run; check Interpreter.unsupportedOperations first")
    case .embedding(let table):
      let (rows, width) = (table.shape[0], table.shape[1])
      // Indices arrive as floats; out-of-range ones clamp to the table, as a lookup must return a row.
      return x.values.flatMap { value -> ArraySlice<Float> in
        let row = min(max(Int(value.rounded()), 0), rows - 1)
        return table.values[row * width..<(row + 1) * width]
      }
    }
  }
}
