/// A 2-D convolution over a `[H, W, C]` tensor, grouped when `groups > 1`.
///
/// Depthwise convolutions are grouped convolutions with `groups == C`, their kernel reshaped to
/// `[kh, kw, 1, C * multiplier]` so that output channel `c * multiplier + m` reads input channel `c`.
public struct Convolution2D: Sendable, Equatable {
  /// Keras layout `[kh, kw, inputChannels / groups, outputChannels]`.
  public var kernel: Constant
  /// `[outputChannels]`, or nil without bias.
  public var bias: Constant?
  public var strideHeight: Int
  public var strideWidth: Int
  public var dilationHeight: Int
  public var dilationWidth: Int
  public var padding: Padding
  public var groups: Int

  public init(
    kernel: Constant, bias: Constant?, strides: [Int], dilations: [Int], padding: Padding, groups: Int
  ) {
    self.kernel = kernel
    self.bias = bias
    self.strideHeight = strides[0]
    self.strideWidth = strides[1]
    self.dilationHeight = dilations[0]
    self.dilationWidth = dilations[1]
    self.padding = padding
    self.groups = groups
  }

  public var kernelHeight: Int { kernel.shape[0] }
  public var kernelWidth: Int { kernel.shape[1] }
  public var inputChannelsPerGroup: Int { kernel.shape[2] }
  public var outputChannels: Int { kernel.shape[3] }

  public static func == (a: Convolution2D, b: Convolution2D) -> Bool {
    a.kernel == b.kernel && a.bias == b.bias && a.strideHeight == b.strideHeight
      && a.strideWidth == b.strideWidth && a.dilationHeight == b.dilationHeight
      && a.dilationWidth == b.dilationWidth && a.padding == b.padding && a.groups == b.groups
  }
}
