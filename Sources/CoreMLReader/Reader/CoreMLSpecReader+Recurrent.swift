import CoreMLCommon
import CProtobufC
import CoreMLSpec

extension CoreMLSpecReader {
  /// Decodes embedding, sequence-repeat and recurrent layers into the layer view.
  ///
  /// Gate matrices keep Core ML's names: `W_<gate>`, `R_<gate>`, `b_<gate>` with gates `i f z o` (LSTM),
  /// `z r o` (GRU, update/reset/output) or `x` (simple RNN); the backward half of a bidirectional LSTM
  /// adds a `backward.` prefix. Activations are listed by their oneof field number in `activations`,
  /// with `activation<k>.alpha` / `.beta` parameters.
  static func decodeRecurrentLayer(_ l: CoreML__Specification__NeuralNetworkLayer, into result: inout CoreMLModelSpec.Layer, decode: WeightDecoder) throws {
    func weight(_ name: String, _ params: UnsafeMutablePointer<CoreML__Specification__WeightParams>?) throws {
      guard let decoded = try decode(name, params, nil) else { return }
      result.weights[name] = decoded.values
      result.usesFloat16 = result.usesFloat16 || decoded.half
      result.quantizationBits = max(result.quantizationBits, decoded.bits)
    }
    /// `prefix` is `activation` (forward) or `backwardActivation` (a bidirectional LSTM's backward half, whose kinds
    /// go to `backwardActivations`).
    func activations(_ list: [UnsafeMutablePointer<CoreML__Specification__ActivationParams>?], offset: Int = 0, prefix: String = "activation") {
      for (index, pointer) in list.enumerated() {
        guard let a = pointer?.pointee else { continue }
        let k = offset + index
        if prefix == "activation" { result.integers["activations", default: []].append(Int(a.nonlinearity_type_case.rawValue)) }
        switch a.nonlinearity_type_case {
        case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD:
          result.floats["\(prefix)\(k).alpha"] = a.sigmoidhard.pointee.alpha
          result.floats["\(prefix)\(k).beta"] = a.sigmoidhard.pointee.beta
        case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR:
          result.floats["\(prefix)\(k).alpha"] = a.linear.pointee.alpha
          result.floats["\(prefix)\(k).beta"] = a.linear.pointee.beta
        case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SCALED_TANH:
          result.floats["\(prefix)\(k).alpha"] = a.scaledtanh.pointee.alpha
          result.floats["\(prefix)\(k).beta"] = a.scaledtanh.pointee.beta
        default: break
        }
      }
    }
    func lstmWeights(_ pointer: UnsafeMutablePointer<CoreML__Specification__LSTMWeightParams>?, prefix: String) throws {
      guard let w = pointer?.pointee else { return }
      try weight(prefix + "W_i", w.inputgateweightmatrix)
      try weight(prefix + "W_f", w.forgetgateweightmatrix)
      try weight(prefix + "W_z", w.blockinputweightmatrix)
      try weight(prefix + "W_o", w.outputgateweightmatrix)
      try weight(prefix + "R_i", w.inputgaterecursionmatrix)
      try weight(prefix + "R_f", w.forgetgaterecursionmatrix)
      try weight(prefix + "R_z", w.blockinputrecursionmatrix)
      try weight(prefix + "R_o", w.outputgaterecursionmatrix)
      try weight(prefix + "b_i", w.inputgatebiasvector)
      try weight(prefix + "b_f", w.forgetgatebiasvector)
      try weight(prefix + "b_z", w.blockinputbiasvector)
      try weight(prefix + "b_o", w.outputgatebiasvector)
      if w.inputgatepeepholevector != nil { result.integers["peephole"] = [1] }
    }
    func lstmSettings(_ pointer: UnsafeMutablePointer<CoreML__Specification__LSTMParams>?) {
      guard let p = pointer?.pointee else { return }
      result.integers["sequenceOutput"] = [Int(p.sequenceoutput)]
      result.integers["hasBiasVectors"] = [Int(p.hasbiasvectors)]
      result.integers["forgetBias"] = [Int(p.forgetbias)]
      result.integers["peephole"] = [Int(p.haspeepholevectors)]
      result.integers["coupledInputAndForgetGate"] = [Int(p.coupledinputandforgetgate)]
      result.floats["cellClipThreshold"] = p.cellclipthreshold
    }

    /// The fields every simple recurrent and GRU layer has.
    func sizes(_ inputs: UInt64, _ outputs: UInt64, sequenceOutput: protobuf_c_boolean, bias: protobuf_c_boolean, reverse: protobuf_c_boolean) {
      result.integers = [
        "inputVectorSize": [Int(clamping: inputs)], "outputVectorSize": [Int(clamping: outputs)],
        "sequenceOutput": [Int(sequenceOutput)], "hasBiasVectors": [Int(bias)], "reverseInput": [Int(reverse)],
      ]
    }

    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_EMBEDDING:
      let e = l.embedding.pointee
      result.integers = ["inputDim": [Int(clamping: e.inputdim)], "outputChannels": [Int(clamping: e.outputchannels)], "hasBias": [Int(e.hasbias)]]
      try weight("weights", e.weights)
      try weight("bias", e.bias)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE:
      let c = l.slice.pointee
      result.integers = ["startIndex": [Int(c.startindex)], "endIndex": [Int(c.endindex)], "stride": [Int(clamping: c.stride)], "axis": [Int(c.axis.rawValue)]]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE:
      let r = l.reduce.pointee
      result.integers = ["mode": [Int(r.mode.rawValue)], "axis": [Int(r.axis.rawValue)]]
      result.floats["epsilon"] = r.epsilon
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SCALE:
      let c = l.scale.pointee
      result.integers = ["shapeScale": ints(c.shapescale, c.n_shapescale), "hasBias": [Int(c.hasbias)], "shapeBias": ints(c.shapebias, c.n_shapebias)]
      try weight("scale", c.scale)
      try weight("bias", c.bias)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_L2NORMALIZE:
      result.floats["epsilon"] = l.l2normalize.pointee.epsilon
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_DOT:
      result.integers["cosineSimilarity"] = [Int(l.dot.pointee.cosinesimilarity)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CUSTOM:
      result.texts["className"] = text(l.custom.pointee.classname)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SPLIT:
      result.integers["nOutputs"] = [Int(clamping: l.split.pointee.noutputs)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SEQUENCE_REPEAT:
      result.integers["nRepetitions"] = [Int(clamping: l.sequencerepeat.pointee.nrepetitions)]
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SIMPLE_RECURRENT:
      let r = l.simplerecurrent.pointee
      sizes(r.inputvectorsize, r.outputvectorsize, sequenceOutput: r.sequenceoutput, bias: r.hasbiasvector, reverse: r.reverseinput)
      activations([r.activation])
      try weight("W_x", r.weightmatrix)
      try weight("R_x", r.recursionmatrix)
      try weight("b_x", r.biasvector)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_GRU:
      let g = l.gru.pointee
      sizes(g.inputvectorsize, g.outputvectorsize, sequenceOutput: g.sequenceoutput, bias: g.hasbiasvectors, reverse: g.reverseinput)
      activations(buffer(g.activations, g.n_activations))
      try weight("W_z", g.updategateweightmatrix)
      try weight("W_r", g.resetgateweightmatrix)
      try weight("W_o", g.outputgateweightmatrix)
      try weight("R_z", g.updategaterecursionmatrix)
      try weight("R_r", g.resetgaterecursionmatrix)
      try weight("R_o", g.outputgaterecursionmatrix)
      try weight("b_z", g.updategatebiasvector)
      try weight("b_r", g.resetgatebiasvector)
      try weight("b_o", g.outputgatebiasvector)
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UNI_DIRECTIONAL_LSTM:
      let u = l.unidirectionallstm.pointee
      result.integers = [
        "inputVectorSize": [Int(clamping: u.inputvectorsize)], "outputVectorSize": [Int(clamping: u.outputvectorsize)],
        "reverseInput": [Int(u.reverseinput)],
      ]
      lstmSettings(u.params)
      activations(buffer(u.activations, u.n_activations))
      try lstmWeights(u.weightparams, prefix: "")
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_BI_DIRECTIONAL_LSTM:
      let b = l.bidirectionallstm.pointee
      result.integers = ["inputVectorSize": [Int(clamping: b.inputvectorsize)], "outputVectorSize": [Int(clamping: b.outputvectorsize)]]
      lstmSettings(b.params)
      activations(buffer(b.activationsforwardlstm, b.n_activationsforwardlstm))
      result.integers["backwardActivations"] = buffer(b.activationsbackwardlstm, b.n_activationsbackwardlstm).map {
        Int($0?.pointee.nonlinearity_type_case.rawValue ?? 0)
      }
      activations(buffer(b.activationsbackwardlstm, b.n_activationsbackwardlstm), prefix: "backwardActivation")
      let halves = buffer(b.weightparams, b.n_weightparams)
      try lstmWeights(halves.first ?? nil, prefix: "")
      try lstmWeights(halves.count > 1 ? halves[1] : nil, prefix: "backward.")
    default: break
    }
  }
}
