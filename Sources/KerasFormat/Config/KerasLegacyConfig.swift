import ModelFormats

/// Keras 1 layer configs in Keras 2 terms, as far as coremltools' Keras 1 converter went.
///
/// Keras 1.x architecture JSON names layers and options differently (`Convolution2D(nb_filter,
/// nb_row, nb_col, border_mode, subsample)`, `Dense(output_dim)`, `Merge(mode)`, ...). Rewriting them
/// once here lets the rest of the importer see only Keras 2 names.
enum KerasLegacyConfig {
  /// The Keras 2 class name and config for a layer entry; other entries come back unchanged.
  static func modernized(className: String, config: JSONValue) -> (String, JSONValue) {
    guard var fields = config.object, isLegacy(className: className, fields: fields) else { return (className, config) }
    var name = className
    func rename(_ old: String, _ new: String) {
      if let value = fields.removeValue(forKey: old) { fields[new] = value }
    }
    rename("border_mode", "padding")
    rename("subsample", "strides")
    rename("bias", "use_bias")
    // Embedding keeps `output_dim` in Keras 2 and 3; other Keras 1 layers meant `units`.
    if className != "Embedding" { rename("output_dim", "units") }
    rename("nb_filter", "filters")
    rename("atrous_rate", "dilation_rate")
    rename("inner_activation", "recurrent_activation")
    if let rows = fields.removeValue(forKey: "nb_row"), let columns = fields.removeValue(forKey: "nb_col") {
      fields["kernel_size"] = .array([rows, columns])
    }
    if let ordering = fields.removeValue(forKey: "dim_ordering")?.string {
      fields["data_format"] = .string(ordering == "th" ? "channels_first" : "channels_last")
    }
    switch className {
    case "Convolution2D", "AtrousConvolution2D": name = "Conv2D"
    case "SeparableConvolution2D": name = "SeparableConv2D"
    // Keras 1 gives the output size itself (`output_shape`), which the importer reads instead of output_padding.
    case "Deconvolution2D": name = "Conv2DTranspose"
    case "Convolution1D", "AtrousConvolution1D":
      name = "Conv1D"
      rename("filter_length", "kernel_size")
      rename("subsample_length", "strides")
    case "Merge":
      let kinds = ["sum": "Add", "mul": "Multiply", "ave": "Average", "max": "Maximum", "concat": "Concatenate"]
      let mode = fields["mode"]?.string ?? "sum"
      name = kinds[mode] ?? "Merge(\(mode))"
      rename("concat_axis", "axis")
    default: break
    }
    // Keras 1's Dropout rate is `p`.
    rename("p", "rate")
    return (name, .dictionary(fields))
  }

  /// Keras 1 classes whose entries are always rewritten (to `Conv2D`, `Conv2DTranspose`, `Add`, ...).
  static let legacyClassNames: Set<String> = [
    "Convolution2D", "AtrousConvolution2D", "SeparableConvolution2D", "Convolution1D", "AtrousConvolution1D", "Merge",
    "Deconvolution2D",
  ]

  /// Whether a config uses Keras 1 names.
  static func isLegacy(className: String, fields: [String: JSONValue]) -> Bool {
    legacyClassNames.contains(className)
      || ["border_mode", "nb_filter", "dim_ordering", "subsample", "inner_activation", "consume_less"].contains {
        fields[$0] != nil
      }
      || (["Dense", "LSTM", "GRU", "SimpleRNN"].contains(className) && fields["output_dim"] != nil)
  }

  /// Keras 1 weight names are `<layer>_W`, `<layer>_b`, ...: their Keras 2 kinds.
  static let weightKinds: [String: String] = [
    "W": "kernel", "b": "bias", "gamma": "gamma", "beta": "beta", "running_mean": "moving_mean",
    // Keras 1.2 stores the variance under this name.
    "running_std": "moving_variance", "depthwise_kernel": "depthwise_kernel", "pointwise_kernel": "pointwise_kernel",
    "U": "recurrent_kernel",
  ]
}
