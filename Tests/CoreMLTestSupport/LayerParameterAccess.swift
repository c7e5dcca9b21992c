import CoreMLReader

/// Typed access to one layer family's parameters in tests: nil for a layer of another kind; setting stores the
/// parameters back (a layer's `parameters` is an enum, so tests edit a field as `spec.layers[i].gru?.activations = ...`).
extension CoreMLModelSpec.Layer {
  public var convolution: ConvolutionParameters? {
    get { if case .convolution(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .convolution(newValue) } }
  }
  public var pooling: PoolingParameters? {
    get { if case .pooling(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .pooling(newValue) } }
  }
  public var innerProduct: InnerProductParameters? {
    get { if case .innerProduct(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .innerProduct(newValue) } }
  }
  public var activation: ActivationParameters? {
    get { if case .activation(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .activation(newValue) } }
  }
  public var unary: UnaryParameters? {
    get { if case .unary(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .unary(newValue) } }
  }
  public var flatten: FlattenParameters? {
    get { if case .flatten(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .flatten(newValue) } }
  }
  public var padding: PaddingParameters? {
    get { if case .padding(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .padding(newValue) } }
  }
  public var crop: CropParameters? {
    get { if case .crop(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .crop(newValue) } }
  }
  public var upsample: UpsampleParameters? {
    get { if case .upsample(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .upsample(newValue) } }
  }
  public var permute: PermuteParameters? {
    get { if case .permute(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .permute(newValue) } }
  }
  public var batchnorm: BatchnormParameters? {
    get { if case .batchnorm(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .batchnorm(newValue) } }
  }
  public var custom: CustomParameters? {
    get { if case .custom(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .custom(newValue) } }
  }
  public var gru: GRUParameters? {
    get { if case .gru(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .gru(newValue) } }
  }
  public var uniDirectionalLSTM: UniDirectionalLSTMParameters? {
    get { if case .uniDirectionalLSTM(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .uniDirectionalLSTM(newValue) } }
  }
  public var biDirectionalLSTM: BiDirectionalLSTMParameters? {
    get { if case .biDirectionalLSTM(let p) = parameters { return p } else { return nil } }
    set { if let newValue { parameters = .biDirectionalLSTM(newValue) } }
  }
}
