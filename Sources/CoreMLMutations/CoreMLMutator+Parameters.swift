import CProtobufC
import CoreMLSpec
import Foundation

extension CoreMLMutator {
  // MARK: Activations

  static func activation(
    _ a: UnsafeMutablePointer<CoreML__Specification__ActivationParams>, _ collector: inout Collector
  ) {
    let p = a.pointee
    /// A float parameter moved by 0.5.
    func bump(_ name: String, _ field: UnsafeMutablePointer<Float>) {
      let old = field.pointee
      let new = old + 0.5
      collector.add(.activationParameter, "\(name) \(format(old)) -> \(format(new))") { field.pointee = new }
    }
    func bumpAll(_ name: String, _ params: UnsafeMutablePointer<CoreML__Specification__WeightParams>?) {
      guard let blob = WeightBlob(params) else { return }
      collector.add(.activationParameter, "\(name): add 0.5 to every value") {
        blob.values = blob.values.map { $0 + 0.5 }
      }
    }
    switch p.nonlinearity_type_case {
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LINEAR:
      if let l = p.linear { bump("linear alpha", &l.pointee.alpha) }
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_LEAKY_RE_LU:
      if let l = p.leakyrelu { bump("leakyReLU alpha", &l.pointee.alpha) }
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_ELU:
      if let l = p.elu { bump("ELU alpha", &l.pointee.alpha) }
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SIGMOID_HARD:
      if let l = p.sigmoidhard { bump("sigmoidHard alpha", &l.pointee.alpha) }
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_SCALED_TANH:
      if let l = p.scaledtanh { bump("scaledTanh alpha", &l.pointee.alpha) }
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_THRESHOLDED_RE_LU:
      if let l = p.thresholdedrelu {
        // Halved (or 0.5 from 0), so that inputs near the usual thresholds cross it.
        let old = l.pointee.alpha
        let new = old == 0 ? 0.5 : old * 0.5
        collector.add(.activationParameter, "thresholdedReLU alpha \(format(old)) -> \(format(new))") {
          l.pointee.alpha = new
        }
      }
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PRE_LU:
      bumpAll("PReLU slopes", p.prelu?.pointee.alpha)
    case CORE_ML__SPECIFICATION__ACTIVATION_PARAMS__NONLINEARITY_TYPE_PARAMETRIC_SOFTPLUS:
      bumpAll("parametricSoftplus alpha", p.parametricsoftplus?.pointee.alpha)
    default: break
    }
  }

  static func unary(
    _ u: UnsafeMutablePointer<CoreML__Specification__UnaryFunctionLayerParams>, _ collector: inout Collector
  ) {
    let p = u.pointee
    switch p.type {
    case CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__THRESHOLD:
      // A tenth (or 0.5 from 0): the clip bound of a relu6 (-6) becomes -0.6, which inputs of unit size reach.
      let new = p.alpha == 0 ? 0.5 : p.alpha * 0.1
      collector.add(.activationParameter, "threshold alpha \(format(p.alpha)) -> \(format(new))") {
        u.pointee.alpha = new
      }
    case CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__POWER:
      let new = p.alpha + 1
      collector.add(.activationParameter, "power alpha \(format(p.alpha)) -> \(format(new))") { u.pointee.alpha = new }
    case CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__RSQRT,
      CORE_ML__SPECIFICATION__UNARY_FUNCTION_LAYER_PARAMS__OPERATION__INVERSE:
      epsilon(&u.pointee.epsilon, name: "epsilon", &collector)
    default: break
    }
  }

  /// An epsilon made large: times 1000, at least 0.1.
  static func epsilon(_ field: UnsafeMutablePointer<Float>, name: String, _ collector: inout Collector) {
    let old = field.pointee
    let new = max(old * 1000, 0.1)
    collector.add(.epsilon, "\(name) \(format(old)) -> \(format(new))") { field.pointee = new }
  }

  // MARK: Axes

  static func axis(
    _ layer: UnsafeMutablePointer<CoreML__Specification__NeuralNetworkLayer>, _ collector: inout Collector
  ) {
    let l = layer.pointee
    /// The last two entries of an axis order swapped.
    func swapLastTwo<T: BinaryInteger>(_ name: String, _ pointer: UnsafeMutablePointer<T>?, _ count: Int) {
      guard let pointer, count >= 2, pointer[count - 1] != pointer[count - 2] else { return }
      let old = (0..<count).map { Int(clamping: pointer[$0]) }
      var new = old
      new.swapAt(count - 1, count - 2)
      collector.add(.axis, "\(name) \(old) -> \(new)") { exchange(pointer, count - 1, count - 2) }
    }
    func otherAxis(_ name: String, _ field: UnsafeMutablePointer<Int64>) {
      let old = field.pointee
      let new: Int64 = old == -1 ? -2 : -1
      collector.add(.axis, "\(name) \(old) -> \(new)") { field.pointee = new }
    }
    switch l.layer_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT:
      guard let c = l.concat else { return }
      let old = c.pointee.sequenceconcat != 0
      collector.add(.axis, "sequenceConcat \(old) -> \(!old)") { c.pointee.sequenceconcat = old ? 0 : 1 }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_FLATTEN:
      guard let f = l.flatten else { return }
      let old = f.pointee.mode.rawValue
      let names: [UInt32: String] = [0: "CHANNEL_FIRST", 1: "CHANNEL_LAST"]
      collector.add(.axis, "flatten mode \(names[old] ?? "\(old)") -> \(names[old == 0 ? 1 : 0]!)") {
        f.pointee.mode = CoreML__Specification__FlattenLayerParams__FlattenOrder(rawValue: old == 0 ? 1 : 0)
      }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_RESHAPE:
      guard let r = l.reshape else { return }
      let old = r.pointee.mode.rawValue
      let names: [UInt32: String] = [0: "CHANNEL_FIRST", 1: "CHANNEL_LAST"]
      collector.add(.axis, "reshape mode \(names[old] ?? "\(old)") -> \(names[old == 0 ? 1 : 0]!)") {
        r.pointee.mode = CoreML__Specification__ReshapeLayerParams__ReshapeOrder(rawValue: old == 0 ? 1 : 0)
      }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_PERMUTE:
      if let p = l.permute { swapLastTwo("permute axis", p.pointee.axis, p.pointee.n_axis) }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_TRANSPOSE:
      if let t = l.transpose { swapLastTwo("transpose axes", t.pointee.axes, t.pointee.n_axes) }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SOFTMAX_ND:
      if let s = l.softmaxnd { otherAxis("softmaxND axis", &s.pointee.axis) }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_CONCAT_ND:
      if let c = l.concatnd { otherAxis("concatND axis", &c.pointee.axis) }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_REDUCE:
      guard let r = l.reduce else { return }
      let names = ["SUM", "AVG", "PROD", "LOGSUM", "SUMSQUARE", "L1", "L2", "MAX", "MIN", "ARGMAX"]
      let old = Int(r.pointee.mode.rawValue)
      // The output keeps its shape: sums become means, maxima minima, anything else a mean (or a sum).
      let new = [0: 1, 1: 0, 7: 8, 8: 7][old] ?? (old == 9 ? 7 : 1)
      let name = { (i: Int) in names.indices.contains(i) ? names[i] : "\(i)" }
      collector.add(.axis, "reduce mode \(name(old)) -> \(name(new))") {
        r.pointee.mode = CoreML__Specification__ReduceLayerParams__ReduceOperation(rawValue: UInt32(new))
      }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SPLIT:
      // The parts come out in the wrong order.
      guard l.n_output >= 2, let outputs = l.output else { return }
      collector.add(.axis, "split outputs 0 and 1 exchanged") { exchange(outputs, 0, 1) }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_SLICE:
      guard let s = l.slice else { return }
      let names = ["CHANNEL", "HEIGHT", "WIDTH"]
      let old = Int(s.pointee.axis.rawValue)
      let new = old == 1 ? 2 : 1
      collector.add(.axis, "slice axis \(old < 3 ? names[old] : "\(old)") -> \(names[new])") {
        s.pointee.axis = CoreML__Specification__SliceLayerParams__SliceAxis(rawValue: UInt32(new))
      }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_LAYER__LAYER_UPSAMPLE:
      guard let u = l.upsample else { return }
      let old = u.pointee.mode.rawValue
      let names: [UInt32: String] = [0: "NN", 1: "BILINEAR"]
      collector.add(.axis, "upsample mode \(names[old] ?? "\(old)") -> \(names[old == 0 ? 1 : 0]!)") {
        u.pointee.mode = CoreML__Specification__UpsampleLayerParams__InterpolationMode(rawValue: old == 0 ? 1 : 0)
      }
    default: break
    }
  }

  // MARK: Recurrent gates

  static func lstmGates(
    _ w: UnsafeMutablePointer<CoreML__Specification__LSTMWeightParams>, _ collector: inout Collector,
    prefix: String = ""
  ) {
    let p = w.pointee
    guard p.inputgateweightmatrix != nil, p.forgetgateweightmatrix != nil else { return }
    // Pointer swaps inside the unpacked tree: each blob is still freed once.
    collector.add(.swappedGates, prefix + "swap the input and forget gates (W, R, bias, peephole)") {
      Swift.swap(&w.pointee.inputgateweightmatrix, &w.pointee.forgetgateweightmatrix)
      Swift.swap(&w.pointee.inputgaterecursionmatrix, &w.pointee.forgetgaterecursionmatrix)
      Swift.swap(&w.pointee.inputgatebiasvector, &w.pointee.forgetgatebiasvector)
      Swift.swap(&w.pointee.inputgatepeepholevector, &w.pointee.forgetgatepeepholevector)
    }
  }

  static func gruGates(_ g: UnsafeMutablePointer<CoreML__Specification__GRULayerParams>, _ collector: inout Collector) {
    guard g.pointee.updategateweightmatrix != nil, g.pointee.resetgateweightmatrix != nil else { return }
    collector.add(.swappedGates, "swap the update and reset gates (W, R, bias)") {
      Swift.swap(&g.pointee.updategateweightmatrix, &g.pointee.resetgateweightmatrix)
      Swift.swap(&g.pointee.updategaterecursionmatrix, &g.pointee.resetgaterecursionmatrix)
      Swift.swap(&g.pointee.updategatebiasvector, &g.pointee.resetgatebiasvector)
    }
  }

  // MARK: Model level

  static func labels(_ model: UnpackedModel, _ collector: inout Collector) {
    let m = model.model.pointee
    guard m.type_case == CORE_ML__SPECIFICATION__MODEL__TYPE_NEURAL_NETWORK_CLASSIFIER,
      let n = m.neuralnetworkclassifier?.pointee
    else { return }
    switch n.class_labels_case {
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_STRING_CLASS_LABELS:
      guard let vector = n.stringclasslabels, vector.pointee.n_vector >= 2, let items = vector.pointee.vector else {
        return
      }
      let (a, b) = (text(items[0]), text(items[1]))
      guard a != b else { return }
      collector.add(.swappedLabels, "swap class labels '\(a)' and '\(b)'") { exchange(items, 0, 1) }
    case CORE_ML__SPECIFICATION__NEURAL_NETWORK_CLASSIFIER__CLASS_LABELS_INT64_CLASS_LABELS:
      guard let vector = n.int64classlabels, vector.pointee.n_vector >= 2, let items = vector.pointee.vector,
        items[0] != items[1]
      else { return }
      collector.add(.swappedLabels, "swap class labels \(items[0]) and \(items[1])") { exchange(items, 0, 1) }
    default: break
    }
  }

  static func images(_ model: UnpackedModel, _ collector: inout Collector) {
    for (namePointer, image) in model.imageInputs {
      let name = text(namePointer)
      let scaler = model.preprocessing.first { entry in
        let featureName = text(entry.pointee.featurename)
        return (featureName == name || featureName.isEmpty)
          && entry.pointee.preprocessor_case
            == CORE_ML__SPECIFICATION__NEURAL_NETWORK_PREPROCESSING__PREPROCESSOR_SCALER
          && entry.pointee.scaler != nil
      }?.pointee.scaler
      let grayscale = image.pointee.colorspace == CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__GRAYSCALE
      if let scaler {
        let old = scaler.pointee.channelscale
        collector.add(.doubledImageScale, "channelScale of '\(name)' \(format(old)) -> \(format(old * 2))") {
          scaler.pointee.channelscale = old * 2
        }
        let which = grayscale ? "grayBias" : "red, green and blue biases"
        collector.add(.movedImageBias, "add 0.25 to the \(which) of '\(name)'") {
          scaler.pointee.redbias += 0.25
          scaler.pointee.greenbias += 0.25
          scaler.pointee.bluebias += 0.25
          scaler.pointee.graybias += 0.25
        }
      } else {
        collector.add(.doubledImageScale, "add a scaler with channelScale 2 to '\(name)'") {
          model.addScaler(for: namePointer).pointee.channelscale = 2
        }
        collector.add(.movedImageBias, "add a scaler with biases 0.25 to '\(name)'") {
          let added = model.addScaler(for: namePointer)
          added.pointee.redbias = 0.25
          added.pointee.greenbias = 0.25
          added.pointee.bluebias = 0.25
          added.pointee.graybias = 0.25
        }
      }
      switch image.pointee.colorspace {
      case CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__RGB:
        collector.add(.swappedColorOrder, "color space of '\(name)' RGB -> BGR") {
          image.pointee.colorspace = CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__BGR
        }
      case CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__BGR:
        collector.add(.swappedColorOrder, "color space of '\(name)' BGR -> RGB") {
          image.pointee.colorspace = CORE_ML__SPECIFICATION__IMAGE_FEATURE_TYPE__COLOR_SPACE__RGB
        }
      default: break
      }
    }
  }

  /// Exchanges two elements of a C array.
  static func exchange<T>(_ pointer: UnsafeMutablePointer<T>, _ a: Int, _ b: Int) {
    let first = pointer[a]
    pointer[a] = pointer[b]
    pointer[b] = first
  }
}
