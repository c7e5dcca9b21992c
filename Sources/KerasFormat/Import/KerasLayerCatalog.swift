/// The Keras layer classes the importer converts, and those that vanish at inference.
enum KerasLayerCatalog {
  /// Layers that are the identity at inference time and are removed.
  static let inferenceNoOps: Set<String> = [
    "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
    "GaussianDropout", "AlphaDropout", "ActivityRegularization",
    // Masking only changes results for time steps equal to its mask value; inputs are assumed to have none.
    "Masking",
  ]

  static let convolutions: Set<String> = [
    "Conv2D", "Convolution2D", "DepthwiseConv2D", "SeparableConv2D", "SeparableConvolution2D", "Conv2DTranspose",
    "Convolution2DTranspose",
  ]
  static let activations: Set<String> = ["Activation", "ReLU", "LeakyReLU", "PReLU", "ELU", "ThresholdedReLU", "Softmax"]
  static let pooling: Set<String> = [
    "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
    "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPooling2D", "GlobalMaxPool2D",
  ]
  static let shaping: Set<String> = ["Flatten", "Reshape", "Permute", "ZeroPadding2D", "Cropping2D", "UpSampling2D"]
  static let merging: Set<String> = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"]
  static let sequences: Set<String> = [
    "Embedding", "SimpleRNN", "LSTM", "GRU", "Bidirectional", "TimeDistributed", "Conv1D", "Convolution1D",
    "MaxPooling1D", "MaxPool1D", "AveragePooling1D", "AvgPool1D", "GlobalAveragePooling1D", "GlobalAvgPool1D",
    "GlobalMaxPooling1D", "GlobalMaxPool1D", "ZeroPadding1D", "Cropping1D", "UpSampling1D", "RepeatVector", "Rescaling", "Normalization",
    "LayerNormalization", "UnitNormalization", "Dot",
  ]

  /// Every class name with a conversion (nested model classes are handled separately).
  static let supportedClassNames: Set<String> = Set(["InputLayer", "Dense", "BatchNormalization"])
    .union(inferenceNoOps).union(convolutions).union(activations).union(pooling).union(shaping).union(merging)
    .union(sequences)
}
