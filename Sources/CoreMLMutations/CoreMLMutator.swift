import CProtobufC
import CoreMLSpec
import Foundation

/// Lists and applies the mutations of a written Core ML neural network, on the protobuf level.
public enum CoreMLMutator {
  /// Every mutation applicable to this file (deterministic order: layers in file order, then model-level ones).
  public static func mutations(of bytes: [UInt8]) throws -> [CoreMLMutation] {
    let model = try UnpackedModel(bytes)
    return try candidates(of: model).map(\.mutation)
  }

  /// The file with one mutation applied.
  public static func apply(_ mutation: CoreMLMutation, to bytes: [UInt8]) throws -> [UInt8] {
    let model = try UnpackedModel(bytes)
    guard let candidate = try candidates(of: model).first(where: { $0.mutation == mutation }) else {
      throw CoreMLMutationError.notApplicable(mutation)
    }
    candidate.apply()
    return model.packed()
  }

  // MARK: Candidates

  /// A mutation and the change that makes it, bound to one unpacked model.
  struct Candidate {
    var mutation: CoreMLMutation
    var apply: () -> Void
  }

  struct Collector {
    let model: UnpackedModel
    var list: [Candidate] = []
    var layer: String?
    var blob: String?

    mutating func add(_ kind: CoreMLMutation.Kind, _ detail: String, _ apply: @escaping () -> Void) {
      list.append(
        Candidate(mutation: CoreMLMutation(kind: kind, layer: layer, blob: blob, detail: detail), apply: apply))
    }
  }

  static func candidates(of model: UnpackedModel) throws -> [Candidate] {
    guard model.isNeuralNetwork else { throw CoreMLMutationError.notANeuralNetwork }
    var collector = Collector(model: model)
    for layer in model.layers {
      let l = layer.pointee
      collector.layer = text(l.name)
      collector.blob = l.n_output > 0 ? l.output.flatMap { $0[0] }.map { String(cString: $0) } : nil
      switch l.layer_case {
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONVOLUTION:
        if let c = l.convolution { convolution(c, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_INNER_PRODUCT:
        if let p = l.innerproduct { innerProduct(p, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_POOLING:
        if let p = l.pooling { pooling(p, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHED_MATMUL:
        if let p = l.batchedmatmul, l.n_input == 1 { weightedMatMul(p, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PADDING:
        if let p = l.padding, let amounts = p.pointee.paddingamounts { borderAmounts(amounts, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_ACTIVATION:
        if let a = l.activation { activation(a, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNARY:
        if let u = l.unary { unary(u, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CLIP:
        if let c = l.clip {
          let (low, high) = (c.pointee.minval, c.pointee.maxval)
          let changed = high > low ? low + (high - low) * 0.1 : high + 0.5
          collector.add(.activationParameter, "clip maxVal \(format(high)) -> \(format(changed))") {
            c.pointee.maxval = changed
          }
        }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BATCHNORM:
        if let b = l.batchnorm { epsilon(&b.pointee.epsilon, name: "epsilon", &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_L2NORMALIZE:
        if let n = l.l2normalize { epsilon(&n.pointee.epsilon, name: "epsilon", &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_MVN:
        if let n = l.mvn { epsilon(&n.pointee.epsilon, name: "epsilon", &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_LAYER_NORMALIZATION:
        if let n = l.layernormalization { epsilon(&n.pointee.eps, name: "eps", &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNI_DIRECTIONAL_LSTM:
        if let w = l.unidirectionallstm?.pointee.weightparams { lstmGates(w, &collector) }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BI_DIRECTIONAL_LSTM:
        if let b = l.bidirectionallstm?.pointee, b.n_weightparams > 0, let w = b.weightparams?[0] {
          lstmGates(w, &collector, prefix: "forward ")
        }
      case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GRU:
        if let g = l.gru { gruGates(g, &collector) }
      default:
        axis(layer, &collector)
      }
    }
    collector.layer = nil
    collector.blob = nil
    labels(model, &collector)
    images(model, &collector)
    return collector.list
  }

  // MARK: Weights

  static func convolution(
    _ c: UnsafeMutablePointer<CoreML__Specification__ConvolutionLayerParams>, _ collector: inout Collector
  ) {
    let p = c.pointee
    let kernel = ints(p.kernelsize, p.n_kernelsize)
    let (kh, kw) = kernel.count == 2 ? (kernel[0], kernel[1]) : (3, 3)
    let dilation = ints(p.dilationfactor, p.n_dilationfactor)
    let (dh, dw) = dilation.count == 2 ? (max(dilation[0], 1), max(dilation[1], 1)) : (1, 1)
    let out = Int(clamping: p.outputchannels)
    let kc = Int(clamping: p.kernelchannels)
    let groups = max(1, Int(clamping: p.ngroups))
    let deconv = p.isdeconvolution != 0
    if let w = WeightBlob(p.weights), out > 0, kc > 0, !deconv || out % groups == 0 {
      let (d0, d1) = deconv ? (kc, out / groups) : (out, kc)
      if let total = Blocks.product([d0, d1, kh, kw]), total == w.count {
        let area = kh * kw
        let bias = p.hasbias != 0 ? WeightBlob(p.bias).flatMap { $0.count == out ? $0 : nil } : nil
        spatial(w, slabs: d0 * d1, kh: kh, kw: kw, &collector)
        if deconv {
          // [kernelChannels, outputChannels / groups, kh, kw]: outputs are the second axis, within each group.
          if d1 >= 2 {
            let detail = "swap output channels 0 and \(d1 - 1)" + (groups > 1 ? " of every group" : "")
            collector.add(.swappedOutputChannels, detail) {
              var v = w.values
              for i in 0..<d0 { Blocks.swap(&v, (i * d1) * area, (i * d1 + d1 - 1) * area, size: area) }
              w.values = v
              if let bias {
                var b = bias.values
                for g in 0..<groups { b.swapAt(g * d1, g * d1 + d1 - 1) }
                bias.values = b
              }
            }
          }
          let perGroup = kc / groups
          if kc % groups == 0, perGroup >= 2 {
            collector.add(.swappedInputChannels, "swap input channels 0 and \(perGroup - 1)") {
              var v = w.values
              Blocks.swap(&v, 0, (perGroup - 1) * d1 * area, size: d1 * area)
              w.values = v
            }
          }
        } else {
          if out >= 2 { swapOutputs(w, bias, count: out, rowSize: kc * area, &collector) }
          if kc >= 2 {
            collector.add(.swappedInputChannels, "swap input channels 0 and \(kc - 1)") {
              var v = w.values
              for o in 0..<out { Blocks.swap(&v, (o * kc) * area, (o * kc + kc - 1) * area, size: area) }
              w.values = v
            }
          }
        }
        if let bias { changeBias(bias, weights: w, &collector) }
      }
    }
    convolutionPadding(c, effectiveKernel: ((kh - 1) * dh + 1, (kw - 1) * dw + 1), deconvolution: deconv, &collector)
  }

  /// Transposed and flipped kernels of `slabs` blocks of `kh x kw`.
  static func spatial(_ w: WeightBlob, slabs: Int, kh: Int, kw: Int, _ collector: inout Collector) {
    let area = kh * kw
    if kh == kw && kh > 1 {
      collector.add(.transposedKernel, "swap the kernel's height and width axes (\(kh)x\(kw))") {
        let v = w.values
        var t = v
        for s in 0..<slabs {
          for y in 0..<kh { for x in 0..<kw { t[s * area + y * kw + x] = v[s * area + x * kw + y] } }
        }
        w.values = t
      }
    }
    if area > 1 {
      collector.add(.flippedKernel, "rotate the \(kh)x\(kw) kernel by 180 degrees") {
        let v = w.values
        var t = v
        for s in 0..<slabs { for j in 0..<area { t[s * area + j] = v[s * area + area - 1 - j] } }
        w.values = t
      }
    }
  }

  static func swapOutputs(_ w: WeightBlob, _ bias: WeightBlob?, count: Int, rowSize: Int, _ collector: inout Collector)
  {
    collector.add(
      .swappedOutputChannels, "swap output channels 0 and \(count - 1)" + (bias == nil ? "" : " (weights and bias)")
    ) {
      var v = w.values
      Blocks.swap(&v, 0, (count - 1) * rowSize, size: rowSize)
      w.values = v
      if let bias {
        var b = bias.values
        b.swapAt(0, count - 1)
        bias.values = b
      }
    }
  }

  static func changeBias(_ bias: WeightBlob, weights: WeightBlob, _ collector: inout Collector) {
    var delta = 0.5 * (Blocks.maxMagnitude(bias.values) + Blocks.maxMagnitude(weights.values))
    if !(delta > 0) || !delta.isFinite { delta = 1 }
    collector.add(.changedBias, "add \(format(delta)) to bias[0]") {
      var b = bias.values
      b[0] += delta
      bias.values = b
    }
  }

  static func innerProduct(
    _ ip: UnsafeMutablePointer<CoreML__Specification__InnerProductLayerParams>, _ collector: inout Collector
  ) {
    let p = ip.pointee
    matrix(
      p.weights, bias: p.hasbias != 0 ? p.bias : nil, inputs: Int(clamping: p.inputchannels),
      outputs: Int(clamping: p.outputchannels),
      transposable: false, &collector)
  }

  /// A one-input `batchedMatMul`: its stored matrix is `[X1, X2]` in column-major order, that is
  /// `[X2, X1]` (outputs, inputs) row-major as an inner product's, with a bias of X2.
  static func weightedMatMul(
    _ m: UnsafeMutablePointer<CoreML__Specification__BatchedMatMulLayerParams>, _ collector: inout Collector
  ) {
    let p = m.pointee
    matrix(
      p.weights, bias: p.hasbias != 0 ? p.bias : nil, inputs: Int(clamping: p.weightmatrixfirstdimension),
      outputs: Int(clamping: p.weightmatrixseconddimension), transposable: true, &collector)
  }

  /// A stored `[outputs, inputs]` row-major matrix and its bias: swapped outputs, swapped inputs, a changed
  /// bias and, for a square matrix stored in an order the layer defines (`transposable`), the transpose.
  static func matrix(
    _ weights: UnsafeMutablePointer<CoreML__Specification__WeightParams>?,
    bias biasParams: UnsafeMutablePointer<CoreML__Specification__WeightParams>?, inputs: Int, outputs: Int,
    transposable: Bool, _ collector: inout Collector
  ) {
    guard let w = WeightBlob(weights), let total = Blocks.product([inputs, outputs]), total == w.count else { return }
    let bias = biasParams.flatMap { WeightBlob($0) }.flatMap { $0.count == outputs ? $0 : nil }
    if outputs >= 2 { swapOutputs(w, bias, count: outputs, rowSize: inputs, &collector) }
    if inputs >= 2 {
      collector.add(.swappedInputChannels, "swap input channels 0 and \(inputs - 1)") {
        var v = w.values
        for o in 0..<outputs { v.swapAt(o * inputs, o * inputs + inputs - 1) }
        w.values = v
      }
    }
    if transposable && inputs == outputs && inputs >= 2 {
      // The matrix stored in the other order (its transpose): the writer's classic mistake.
      collector.add(.transposedKernel, "store the \(inputs)x\(outputs) matrix transposed") {
        let v = w.values
        var t = v
        for r in 0..<inputs { for c in 0..<outputs { t[c * inputs + r] = v[r * outputs + c] } }
        w.values = t
      }
    }
    if let bias { changeBias(bias, weights: w, &collector) }
  }

  // MARK: Padding and pooling

  static func convolutionPadding(
    _ c: UnsafeMutablePointer<CoreML__Specification__ConvolutionLayerParams>, effectiveKernel: (Int, Int),
    deconvolution: Bool,
    _ collector: inout Collector
  ) {
    let model = collector.model
    let oldCase = c.pointee.convolution_padding_type_case
    let oldPointer = c.pointee.same
    func restoreLater() {
      model.onFree {
        c.pointee.convolution_padding_type_case = oldCase
        c.pointee.same = oldPointer
      }
    }
    switch oldCase {
    case CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_SAME:
      let (kh, kw) = effectiveKernel
      if deconvolution {
        collector.add(.paddingMode, "same -> valid") {
          restoreLater()
          c.pointee.convolution_padding_type_case =
            CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID
          c.pointee.valid = model.message(core_ml__specification__valid_padding__init)
        }
      } else if kh > 1 || kw > 1 {
        // Valid with every padding row and column at the top and left: the same output size, shifted windows.
        collector.add(.paddingMode, "same -> valid with padding (\(kh - 1), 0), (\(kw - 1), 0) at the top and left") {
          restoreLater()
          let valid = model.message(core_ml__specification__valid_padding__init)
          valid.pointee.paddingamounts = border([(kh - 1, 0), (kw - 1, 0)], model)
          c.pointee.convolution_padding_type_case =
            CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID
          c.pointee.valid = valid
        }
      }
    case CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_VALID:
      if let amounts = c.pointee.valid?.pointee.paddingamounts, !deconvolution,
        edges(amounts).contains(where: { $0.pointee.startedgesize + $0.pointee.endedgesize > 0 })
      {
        borderAmounts(amounts, &collector)
      } else {
        collector.add(.paddingMode, "valid -> same") {
          restoreLater()
          c.pointee.convolution_padding_type_case =
            CORE_ML__SPECIFICATION__CONVOLUTION_LAYER_PARAMS__CONVOLUTION_PADDING_TYPE_SAME
          c.pointee.same = model.message(core_ml__specification__same_padding__init)
        }
      }
    default: break
    }
  }

  static func pooling(
    _ pool: UnsafeMutablePointer<CoreML__Specification__PoolingLayerParams>, _ collector: inout Collector
  ) {
    let p = pool.pointee
    let names: [UInt32: String] = [0: "MAX", 1: "AVERAGE", 2: "L2"]
    let type = p.type.rawValue
    let newType: UInt32 = type == 0 ? 1 : 0
    collector.add(.poolingMode, "type \(names[type] ?? "\(type)") -> \(names[newType]!)") {
      pool.pointee.type = CoreML__Specification__PoolingLayerParams__PoolingType(rawValue: newType)
    }
    let same = p.pooling_padding_type_case == CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME
    if type == 1 && same && p.globalpooling == 0 {
      let exclude = p.avgpoolexcludepadding != 0
      collector.add(.poolingMode, "avgPoolExcludePadding \(exclude) -> \(!exclude)") {
        pool.pointee.avgpoolexcludepadding = exclude ? 0 : 1
      }
    }
    guard p.globalpooling == 0 else { return }
    let model = collector.model
    let oldCase = p.pooling_padding_type_case
    let oldPointer = p.same
    func restoreLater() {
      model.onFree {
        pool.pointee.pooling_padding_type_case = oldCase
        pool.pointee.same = oldPointer
      }
    }
    switch oldCase {
    case CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME:
      collector.add(.paddingMode, "same -> valid") {
        restoreLater()
        pool.pointee.pooling_padding_type_case =
          CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID
        pool.pointee.valid = model.message(core_ml__specification__valid_padding__init)
      }
    case CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID,
      CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_INCLUDE_LAST_PIXEL:
      let from =
        oldCase == CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_VALID
        ? "valid" : "includeLastPixel"
      collector.add(.paddingMode, "\(from) -> same") {
        restoreLater()
        pool.pointee.pooling_padding_type_case = CORE_ML__SPECIFICATION__POOLING_LAYER_PARAMS__POOLING_PADDING_TYPE_SAME
        pool.pointee.same = model.message(core_ml__specification__same_padding__init)
      }
    default: break
    }
  }

  static func edges(_ amounts: UnsafeMutablePointer<CoreML__Specification__BorderAmounts>) -> [UnsafeMutablePointer<
    CoreML__Specification__BorderAmounts__EdgeSizes
  >] {
    guard let list = amounts.pointee.borderamounts, amounts.pointee.n_borderamounts > 0 else { return [] }
    return UnsafeBufferPointer(start: list, count: amounts.pointee.n_borderamounts).compactMap { $0 }
  }

  /// Explicit padding amounts changed without changing the output size: each uneven edge pair swapped,
  /// each even one moved entirely to the start.
  static func borderAmounts(
    _ amounts: UnsafeMutablePointer<CoreML__Specification__BorderAmounts>, _ collector: inout Collector
  ) {
    let list = edges(amounts)
    let old = list.map { ($0.pointee.startedgesize, $0.pointee.endedgesize) }
    guard old.contains(where: { $0.0 + $0.1 > 0 }) else { return }
    let new = old.map { start, end in start != end ? (end, start) : (start + end, 0) }
    let describe = { (pairs: [(UInt64, UInt64)]) in pairs.map { "(\($0.0), \($0.1))" }.joined(separator: ", ") }
    collector.add(.paddingMode, "padding amounts \(describe(old)) -> \(describe(new))") {
      for (edge, amount) in zip(list, new) {
        edge.pointee.startedgesize = amount.0
        edge.pointee.endedgesize = amount.1
      }
    }
  }

  static func border(_ amounts: [(Int, Int)], _ model: UnpackedModel) -> UnsafeMutablePointer<
    CoreML__Specification__BorderAmounts
  > {
    let border = model.message(core_ml__specification__border_amounts__init)
    let edges = amounts.map { start, end -> UnsafeMutablePointer<CoreML__Specification__BorderAmounts__EdgeSizes>? in
      let edge = model.message(core_ml__specification__border_amounts__edge_sizes__init)
      edge.pointee.startedgesize = UInt64(start)
      edge.pointee.endedgesize = UInt64(end)
      return edge
    }
    border.pointee.n_borderamounts = edges.count
    border.pointee.borderamounts = model.array(edges)
    return border
  }

  // MARK: Helpers

  static func text(_ pointer: UnsafeMutablePointer<CChar>?) -> String { pointer.map { String(cString: $0) } ?? "" }

  static func ints(_ pointer: UnsafeMutablePointer<UInt64>?, _ count: Int) -> [Int] {
    guard let pointer, count > 0 else { return [] }
    return UnsafeBufferPointer(start: pointer, count: count).map { Int(clamping: $0) }
  }

  static func format(_ value: Float) -> String { String(format: "%g", Double(value)) }
}
