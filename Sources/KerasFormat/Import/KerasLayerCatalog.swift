/// The Keras layer classes the importer converts, and those that vanish at inference.
enum KerasLayerCatalog {
  /// Layers that are the identity at inference time and are removed.
  static let inferenceNoOps: Set<String> = [
    "Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianNoise",
    "GaussianDropout", "AlphaDropout", "ActivityRegularization",
  ]

  static let convolutions: Set<String> = ["Conv2D", "Convolution2D", "DepthwiseConv2D", "SeparableConv2D", "SeparableConvolution2D"]
  static let activations: Set<String> = ["Activation", "ReLU", "LeakyReLU", "PReLU", "ELU", "ThresholdedReLU", "Softmax"]
  static let pooling: Set<String> = [
    "MaxPooling2D", "MaxPool2D", "AveragePooling2D", "AvgPool2D",
    "GlobalAveragePooling2D", "GlobalAvgPool2D", "GlobalMaxPooling2D", "GlobalMaxPool2D",
  ]
  static let shaping: Set<String> = ["Flatten", "Reshape", "Permute", "ZeroPadding2D", "Cropping2D", "UpSampling2D"]
  static let merging: Set<String> = ["Add", "Subtract", "Multiply", "Average", "Maximum", "Minimum", "Concatenate"]

  /// Every class name with a conversion (nested model classes are handled separately).
  static let supportedClassNames: Set<String> = Set(["InputLayer", "Dense", "BatchNormalization"])
    .union(inferenceNoOps).union(convolutions).union(activations).union(pooling).union(shaping).union(merging)
}
