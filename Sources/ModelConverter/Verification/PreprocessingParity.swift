import Foundation
import ModelIR

/// An image input's preprocessing in the converted model, and whether it matches what was expected.
public struct PreprocessingParity: Sendable, Equatable, Codable {
  /// `network input = scale * pixel + bias[channel]`, biases in the network's channel order.
  public struct Scaler: Sendable, Equatable, Codable {
    public var colorSpace: String
    public var scale: Float
    public var biases: [Float]
  }

  public var input: String
  /// `GRAYSCALE`, `RGB` or `BGR`: the channel order the network receives.
  public var colorSpace: String
  public var scale: Float
  /// In the network's channel order.
  public var biases: [Float]
  /// Whether an expected preprocessing was given to compare with.
  public var checked: Bool
  /// The scaler the expected preprocessing gives (after any Rescaling the converter folds into it).
  public var expected: Scaler?
  /// False when checked and different.
  public var passed: Bool
  /// What looks wrong for the model (from its first layers' statistics), checked or not.
  public var warnings: [String] = []

  /// "network input = 0.003922 x pixel + 0, RGB"
  public var summary: String { Self.describe(colorSpace: colorSpace, scale: scale, biases: biases) }

  /// The expected scaler in the same words, when one was given.
  public var expectedSummary: String? {
    expected.map { Self.describe(colorSpace: $0.colorSpace, scale: $0.scale, biases: $0.biases) }
  }

  static func describe(colorSpace: String, scale: Float, biases: [Float]) -> String {
    let unique = Set(biases).count == 1 ? [biases[0]] : biases
    let bias = unique.count == 1 ? format(unique[0]) : "(" + unique.map(format).joined(separator: ", ") + ")"
    return "network input = \(format(scale)) x pixel + \(bias), \(colorSpace)"
  }

  static func format(_ value: Float) -> String { String(format: "%.6g", value) }

  init(
    input: String, converted image: ImagePreprocessing, colorSpace space: ImageColorSpace,
    expected: ImagePreprocessing?, fold: InputPreprocessingFold?
  ) {
    self.input = input
    let channels = space.channels
    colorSpace = space.rawValue
    scale = image.scale
    biases = image.networkBiases(channels: channels)
    guard var expected else {
      checked = false
      passed = true
      return
    }
    checked = true
    let expectedSpace = expected.colorSpace(channels: channels).rawValue
    if let fold { expected = fold.combined(with: expected, channels: channels) }
    let expectedBiases = expected.networkBiases(channels: channels)
    self.expected = Scaler(colorSpace: expectedSpace, scale: expected.scale, biases: expectedBiases)
    // Float32 storage of the same numbers: a few units in the last place apart at most.
    func close(_ a: Float, _ b: Float) -> Bool { abs(a - b) <= 1e-5 * max(1, abs(b)) }
    passed =
      expectedSpace == colorSpace && close(scale, expected.scale) && zip(biases, expectedBiases).allSatisfy(close)
  }
}
