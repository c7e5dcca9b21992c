import CoreMLFormat

/// Typed access to one layer family's parameters in tests: nil for a layer of another kind; setting stores the
/// parameters back (a layer's `parameters` is an enum, so tests edit a field as `spec.layers[i].gru?.activations = ...`).
extension CoreMLModelSpec.Layer {
  var convolution: ConvolutionParameters? {
    get { if case .convolution(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .convolution(newValue) } }
  }
  var pooling: PoolingParameters? {
    get { if case .pooling(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .pooling(newValue) } }
  }
  var innerProduct: InnerProductParameters? {
    get { if case .innerProduct(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .innerProduct(newValue) } }
  }
  var activation: ActivationParameters? {
    get { if case .activation(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .activation(newValue) } }
  }
  var unary: UnaryParameters? {
    get { if case .unary(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .unary(newValue) } }
  }
  var flatten: FlattenParameters? {
    get { if case .flatten(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .flatten(newValue) } }
  }
  var padding: PaddingParameters? {
    get { if case .padding(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .padding(newValue) } }
  }
  var crop: CropParameters? {
    get { if case .crop(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .crop(newValue) } }
  }
  var upsample: UpsampleParameters? {
    get { if case .upsample(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .upsample(newValue) } }
  }
  var permute: PermuteParameters? {
    get { if case .permute(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .permute(newValue) } }
  }
  var batchnorm: BatchnormParameters? {
    get { if case .batchnorm(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .batchnorm(newValue) } }
  }
  var custom: CustomParameters? {
    get { if case .custom(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .custom(newValue) } }
  }
  var gru: GRUParameters? {
    get { if case .gru(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .gru(newValue) } }
  }
  var uniDirectionalLSTM: UniDirectionalLSTMParameters? {
    get { if case .uniDirectionalLSTM(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .uniDirectionalLSTM(newValue) } }
  }
  var biDirectionalLSTM: BiDirectionalLSTMParameters? {
    get { if case .biDirectionalLSTM(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .biDirectionalLSTM(newValue) } }
  }
}
