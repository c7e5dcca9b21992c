import ModelConverter

/// Reads `Options.imagePreprocessing`, which `convert`, `verify`, `predict` and `evaluate` declare:
/// `--image-scale` and the biases (`scale * pixel + bias`), or `--image-mean` and `--image-std`
/// (PyTorch's `(pixel / 255 - mean) / std` per channel), and `--bgr`.
enum ImagePreprocessingOptions {
  /// The preprocessing `--image-mean`/`--image-std` give, or nil when neither is given.
  static func normalization(_ parsed: ParsedArguments) throws -> ImagePreprocessing? {
    try values(parsed).map { ImagePreprocessing(mean: $0.mean, std: $0.std, isBGR: parsed.flag(Options.bgr)) }
  }

  /// The preprocessing given, either way, or nil when no option of the group is given.
  static func preprocessing(_ parsed: ParsedArguments) throws -> ImagePreprocessing? {
    if let normalization = try normalization(parsed) { return normalization }
    guard Options.imagePreprocessing.contains(where: parsed.isGiven) else { return nil }
    return ImagePreprocessing(
      scale: try parsed.float(Options.imageScale) ?? 1, redBias: try parsed.float(Options.redBias) ?? 0,
      greenBias: try parsed.float(Options.greenBias) ?? 0, blueBias: try parsed.float(Options.blueBias) ?? 0,
      grayBias: try parsed.float(Options.grayBias) ?? 0, isBGR: parsed.flag(Options.bgr))
  }

  /// The means and standard deviations given, checked, or nil when neither option is given; the scale
  /// and bias options may not be given with them.
  static func values(_ parsed: ParsedArguments) throws -> (mean: [Float], std: [Float])? {
    guard Options.normalization.contains(where: parsed.isGiven) else { return nil }
    if Options.scaleAndBiases.contains(where: parsed.isGiven) {
      throw UsageError(message: "give --image-mean/--image-std or --image-scale and the bias options, not both")
    }
    func numbers(_ spec: OptionSpec) throws -> [Float]? {
      guard let items = try parsed.list(spec) else { return nil }
      let values = try items.map { item -> Float in
        guard let number = OptionSpec.parseNumber(item.trimmingCharacters(in: .whitespaces)), number.isFinite else {
          throw UsageError(message: "option '\(spec.key)' needs numbers separated by commas, got '\(item)'")
        }
        return number
      }
      guard values.count == 1 || values.count == 3 else {
        throw UsageError(message: "option '\(spec.key)' needs 3 values (R,G,B) or 1 (gray), got \(values.count)")
      }
      return values
    }
    guard let mean = try numbers(Options.imageMean) else { throw UsageError(message: "--image-std needs --image-mean") }
    let std = try numbers(Options.imageStd) ?? [Float](repeating: 1, count: mean.count)
    guard std.count == mean.count else {
      throw UsageError(message: "--image-mean has \(mean.count) values and --image-std \(std.count)")
    }
    guard std.allSatisfy({ $0 > 0 }) else { throw UsageError(message: "--image-std values must be above 0") }
    return (mean, std)
  }
}
