import CProtobufC
import CoreMLCommon
import CoreMLSpec

extension CoreMLSpecReader {
  /// The parameters of embedding, sequence-repeat, recurrent and the remaining classic layers; nil for other layers.
  ///
  /// Gate weights keep Core ML's layout: per gate an input matrix `W`, a recursion matrix `R` and a bias `b`
  /// (gates `i f z o` for an LSTM, `z r o` for a GRU, one for a simple RNN).
  static func recurrentParameters(_ l: CoreML__Specification__NeuralNetworkLayer, decode: WeightDecoder) throws
    -> CoreMLLayerParameters?
  {
    func activations(_ list: [UnsafeMutablePointer<CoreML__Specification__ActivationParams>?]) throws
      -> [ActivationParameters]
    {
      try list.compactMap { pointer in try pointer.map { try activation($0.pointee, decode: nil) } }
    }
    func gate(
      _ letter: String, prefix: String, _ w: UnsafeMutablePointer<CoreML__Specification__WeightParams>?,
      _ r: UnsafeMutablePointer<CoreML__Specification__WeightParams>?,
      _ b: UnsafeMutablePointer<CoreML__Specification__WeightParams>?
    ) throws -> RecurrentGateWeights {
      RecurrentGateWeights(
        weightMatrix: try decode(prefix + "W_" + letter, w, nil),
        recursionMatrix: try decode(prefix + "R_" + letter, r, nil),
        biasVector: try decode(prefix + "b_" + letter, b, nil))
    }
    func lstmWeights(_ pointer: UnsafeMutablePointer<CoreML__Specification__LSTMWeightParams>?, prefix: String) throws
      -> LSTMWeights
    {
      var result = LSTMWeights()
      guard let w = pointer?.pointee else { return result }
      result.inputGate = try gate(
        "i", prefix: prefix, w.inputgateweightmatrix, w.inputgaterecursionmatrix, w.inputgatebiasvector)
      result.forgetGate = try gate(
        "f", prefix: prefix, w.forgetgateweightmatrix, w.forgetgaterecursionmatrix, w.forgetgatebiasvector)
      result.blockInput = try gate(
        "z", prefix: prefix, w.blockinputweightmatrix, w.blockinputrecursionmatrix, w.blockinputbiasvector)
      result.outputGate = try gate(
        "o", prefix: prefix, w.outputgateweightmatrix, w.outputgaterecursionmatrix, w.outputgatebiasvector)
      result.hasPeepholeVector = w.inputgatepeepholevector != nil
      return result
    }
    func lstmSettings(_ pointer: UnsafeMutablePointer<CoreML__Specification__LSTMParams>?) -> LSTMSettings {
      var s = LSTMSettings()
      guard let p = pointer?.pointee else { return s }
      (s.sequenceOutput, s.hasBiasVectors, s.forgetBias) = (
        p.sequenceoutput != 0, p.hasbiasvectors != 0, p.forgetbias != 0
      )
      (s.hasPeepholeVectors, s.coupledInputAndForgetGate, s.cellClipThreshold) = (
        p.haspeepholevectors != 0, p.coupledinputandforgetgate != 0, p.cellclipthreshold
      )
      return s
    }

    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EMBEDDING:
      var p = EmbeddingParameters()
      guard let e = l.embedding?.pointee else { return .embedding(p) }
      (p.inputDim, p.outputChannels, p.hasBias) = (
        Int(clamping: e.inputdim), Int(clamping: e.outputchannels), e.hasbias != 0
      )
      p.weights = try decode("weights", e.weights, nil)
      p.bias = try decode("bias", e.bias, nil)
      return .embedding(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE:
      var p = SliceParameters()
      if let c = l.slice?.pointee {
        (p.startIndex, p.endIndex, p.stride, p.axis) = (
          Int(c.startindex), Int(c.endindex), Int(clamping: c.stride), .init(rawValue: Int(c.axis.rawValue))
        )
      }
      return .slice(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE:
      var p = ReduceParameters()
      if let r = l.reduce?.pointee {
        (p.mode, p.axis, p.epsilon) = (
          .init(rawValue: Int(r.mode.rawValue)), .init(rawValue: Int(r.axis.rawValue)), r.epsilon
        )
      }
      return .reduce(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SCALE:
      var p = ScaleParameters()
      guard let c = l.scale?.pointee else { return .scale(p) }
      (p.shapeScale, p.hasBias, p.shapeBias) = (
        ints(c.shapescale, c.n_shapescale), c.hasbias != 0, ints(c.shapebias, c.n_shapebias)
      )
      p.scale = try decode("scale", c.scale, nil)
      p.bias = try decode("bias", c.bias, nil)
      return .scale(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_L2NORMALIZE:
      return .l2normalize(L2NormalizeParameters(epsilon: l.l2normalize?.pointee.epsilon ?? 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_DOT:
      return .dot(DotParameters(cosineSimilarity: (l.dot?.pointee.cosinesimilarity ?? 0) != 0))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CUSTOM:
      return .custom(CustomParameters(className: text(l.custom?.pointee.classname)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SPLIT:
      return .split(SplitParameters(nOutputs: Int(clamping: l.split?.pointee.noutputs ?? 0)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SEQUENCE_REPEAT:
      return .sequenceRepeat(
        SequenceRepeatParameters(nRepetitions: Int(clamping: l.sequencerepeat?.pointee.nrepetitions ?? 0)))
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SIMPLE_RECURRENT:
      var p = SimpleRecurrentParameters()
      guard let r = l.simplerecurrent?.pointee else { return .simpleRecurrent(p) }
      (p.inputVectorSize, p.outputVectorSize) = (Int(clamping: r.inputvectorsize), Int(clamping: r.outputvectorsize))
      (p.sequenceOutput, p.hasBiasVector, p.reverseInput) = (
        r.sequenceoutput != 0, r.hasbiasvector != 0, r.reverseinput != 0
      )
      p.activations = try activations([r.activation])
      p.gate = try gate("x", prefix: "", r.weightmatrix, r.recursionmatrix, r.biasvector)
      return .simpleRecurrent(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GRU:
      var p = GRUParameters()
      guard let g = l.gru?.pointee else { return .gru(p) }
      (p.inputVectorSize, p.outputVectorSize) = (Int(clamping: g.inputvectorsize), Int(clamping: g.outputvectorsize))
      (p.sequenceOutput, p.hasBiasVectors, p.reverseInput) = (
        g.sequenceoutput != 0, g.hasbiasvectors != 0, g.reverseinput != 0
      )
      p.activations = try activations(buffer(g.activations, g.n_activations))
      p.updateGate = try gate(
        "z", prefix: "", g.updategateweightmatrix, g.updategaterecursionmatrix, g.updategatebiasvector)
      p.resetGate = try gate(
        "r", prefix: "", g.resetgateweightmatrix, g.resetgaterecursionmatrix, g.resetgatebiasvector)
      p.outputGate = try gate(
        "o", prefix: "", g.outputgateweightmatrix, g.outputgaterecursionmatrix, g.outputgatebiasvector)
      return .gru(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNI_DIRECTIONAL_LSTM:
      var p = UniDirectionalLSTMParameters()
      guard let u = l.unidirectionallstm?.pointee else { return .uniDirectionalLSTM(p) }
      (p.inputVectorSize, p.outputVectorSize, p.reverseInput) = (
        Int(clamping: u.inputvectorsize), Int(clamping: u.outputvectorsize), u.reverseinput != 0
      )
      p.params = lstmSettings(u.params)
      p.activations = try activations(buffer(u.activations, u.n_activations))
      p.weightParams = try lstmWeights(u.weightparams, prefix: "")
      return .uniDirectionalLSTM(p)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BI_DIRECTIONAL_LSTM:
      var p = BiDirectionalLSTMParameters()
      guard let b = l.bidirectionallstm?.pointee else { return .biDirectionalLSTM(p) }
      (p.inputVectorSize, p.outputVectorSize) = (Int(clamping: b.inputvectorsize), Int(clamping: b.outputvectorsize))
      p.params = lstmSettings(b.params)
      p.activationsForwardLSTM = try activations(buffer(b.activationsforwardlstm, b.n_activationsforwardlstm))
      p.activationsBackwardLSTM = try activations(buffer(b.activationsbackwardlstm, b.n_activationsbackwardlstm))
      let halves = buffer(b.weightparams, b.n_weightparams)
      p.forwardWeights = try lstmWeights(halves.first ?? nil, prefix: "")
      p.backwardWeights = try lstmWeights(halves.count > 1 ? halves[1] : nil, prefix: "backward.")
      return .biDirectionalLSTM(p)
    default: return nil
    }
  }
}
