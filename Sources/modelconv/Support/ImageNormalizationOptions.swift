import ModelConverter

/// `--image-mean` and `--image-std`: PyTorch's `(pixel / 255 - mean) / std` per channel, shared by
/// `convert`, `verify`, `predict` and `evaluate`.
enum ImageNormalizationOptions {
  static func specs(section: String, verb: String) -> [OptionSpec] {
    [
      .option(
        "--image-mean", value: "R,G,B", section: section,
        help: "\(verb) (pixel / 255 - mean) / std per channel, as torchvision's Normalize: the means in R, G, B order (one value for a grayscale input), e.g. 0.485,0.456,0.406. Instead of --image-scale and the biases."),
      .option("--image-std", value: "R,G,B", section: section, help: "The standard deviations for --image-mean (default 1 for each channel), e.g. 0.229,0.224,0.225."),
    ]
  }

  /// The preprocessing `--image-mean`/`--image-std` give, or nil when neither is given.
  static func preprocessing(_ parsed: ParsedArguments) throws -> ImagePreprocessing? {
    try values(parsed).map { ImagePreprocessing(mean: $0.mean, std: $0.std, isBGR: parsed.flag("--bgr")) }
  }

  /// The means and standard deviations given, checked, or nil when neither option is given; the scale
  /// and bias options may not be given with them.
  static func values(_ parsed: ParsedArguments) throws -> (mean: [Float], std: [Float])? {
    guard parsed.value("--image-mean") != nil || parsed.value("--image-std") != nil else { return nil }
    if ["--image-scale", "--red-bias", "--green-bias", "--blue-bias", "--gray-bias"].contains(where: { parsed.value($0) != nil }) {
      throw UsageError(message: "give --image-mean/--image-std or --image-scale and the bias options, not both")
    }
    func numbers(_ name: String) throws -> [Float]? {
      guard let items = try parsed.list(name) else { return nil }
      let values = try items.map { item -> Float in
        guard let number = OptionSpec.parseNumber(item.trimmingCharacters(in: .whitespaces)), number.isFinite else {
          throw UsageError(message: "option '\(name)' needs numbers separated by commas, got '\(item)'")
        }
        return number
      }
      guard values.count == 1 || values.count == 3 else { throw UsageError(message: "option '\(name)' needs 3 values (R,G,B) or 1 (gray), got \(values.count)") }
      return values
    }
    guard let mean = try numbers("--image-mean") else { throw UsageError(message: "--image-std needs --image-mean") }
    let std = try numbers("--image-std") ?? [Float](repeating: 1, count: mean.count)
    guard std.count == mean.count else { throw UsageError(message: "--image-mean has \(mean.count) values and --image-std \(std.count)") }
    guard std.allSatisfy({ $0 > 0 }) else { throw UsageError(message: "--image-std values must be above 0") }
    return (mean, std)
  }
}
