/// How a writer stores weight tensors smaller than float32 or float16, as coremltools' `ct.optimize.coreml`
/// does: a lookup table of 2^n values with n-bit indices (palettization), or 8-bit integers with a scale
/// (and zero point) per output channel (linear quantization).
public struct WeightCompression: Sendable, Equatable {
  public enum Method: Sendable, Equatable {
    /// k-means lookup table of 2^bits entries per tensor (`constexpr_lut_to_dense`).
    case palettize(bits: Int)
    /// Linear quantization per output channel (`constexpr_affine_dequantize`).
    case quantize(bits: Int, mode: QuantizationMode)
    /// Magnitude pruning: this share of each tensor's elements, the smallest in magnitude, become zero,
    /// and the rest are stored with a bit mask (`constexpr_sparse_to_dense`).
    case prune(fraction: Double)
  }

  public enum QuantizationMode: String, Sendable, Equatable, CaseIterable {
    /// int8, zero point 0: `w = scale * q`, scale = max|w| / 127 per channel.
    case symmetric
    /// uint8 with a zero point: `w = scale * (q - zero)`, over each channel's range (0 included).
    case affine
  }

  public var method: Method
  /// Tensors with fewer elements stay as they are (coremltools' `weight_threshold`, 2048 by default).
  public var minimumElements: Int
  /// Seed of the k-means++ initialisation: the same weights and seed give the same table.
  public var seed: UInt64
  /// Palettization with one table per group of this many output channels (iOS 18's grouped form);
  /// nil: one table per tensor.
  public var groupSize: Int?
  /// Linear quantization with a scale per block of this many input channels within each output channel
  /// (iOS 18's `constexpr_blockwise_shift_scale`, coremltools' per_block granularity); nil: per channel.
  public var blockSize: Int?

  /// Lookup-table sizes the iOS 16 `constexpr_lut_to_dense` defines (2, 4, 16, 64 or 256 entries); iOS 18's
  /// form adds 3 bits (8 entries).
  public static let palettizeBits: [Int] = [1, 2, 4, 6, 8]
  public static let palettizeBitsIOS18: [Int] = [1, 2, 3, 4, 6, 8]
  /// Bit widths written: 8 (`constexpr_affine_dequantize`, iOS 16) and 4 (iOS 18's
  /// `constexpr_blockwise_shift_scale` with int4/uint4 data).
  public static let quantizeBits: [Int] = [8, 4]
  public static let defaultMinimumElements = 2048

  public init(method: Method, minimumElements: Int = WeightCompression.defaultMinimumElements, seed: UInt64 = 0) {
    self.method = method
    self.minimumElements = minimumElements
    self.seed = seed
  }

  /// What makes this compression one the writers cannot make (bit widths, fractions, group and block
  /// sizes out of range), or nil. The writers' quantizers trap on such values, so callers check first.
  public var problem: String? {
    switch method {
    case .palettize(let bits) where !Self.palettizeBitsIOS18.contains(bits):
      return "palettization takes \(Self.palettizeBitsIOS18.map(String.init).joined(separator: ", ")) bits, not \(bits)"
    case .quantize(let bits, _) where !Self.quantizeBits.contains(bits):
      return
        "linear quantization takes \(Self.quantizeBits.map(String.init).joined(separator: " or ")) bits, not \(bits)"
    case .prune(let fraction) where !(fraction >= 0 && fraction < 1):
      return "a pruned fraction is at least 0 and below 1, not \(fraction)"
    default: break
    }
    if let groupSize, groupSize < 1 { return "a palette group holds at least one channel, not \(groupSize)" }
    if let blockSize, blockSize < 1 { return "a quantization block holds at least one channel, not \(blockSize)" }
    if minimumElements < 0 { return "the smallest compressed tensor size cannot be negative (\(minimumElements))" }
    return nil
  }

  /// Whether the ML Program form is iOS 18's (`constexpr_lut_to_dense` with uintN indices of the
  /// weight's shape and a table per channel group): grouped palettes or 3-bit indices.
  public var usesIOS18Form: Bool {
    switch method {
    case .palettize(let bits): return groupSize != nil || !Self.palettizeBits.contains(bits)
    case .quantize(let bits, _): return bits != 8 || blockSize != nil
    case .prune: return false
    }
  }

  /// The oldest release that loads the compressed form: iOS 16 (specification 7, opset CoreML6), or
  /// iOS 18 (specification 9, CoreML8) for its form.
  public var oldestTarget: DeploymentTarget { usesIOS18Form ? .iOS18 : .iOS16 }

  /// A short description for summaries: "palettized 4-bit", "linear 8-bit symmetric".
  public var summary: String {
    switch method {
    case .palettize(let bits):
      return "palettized \(bits)-bit" + (groupSize.map { ", a table per \($0) channels" } ?? "")
    case .quantize(let bits, let mode):
      return "linear \(bits)-bit \(mode.rawValue)" + (blockSize.map { ", blocks of \($0)" } ?? "")
    case .prune(let fraction): return "pruned \(Int((fraction * 100).rounded()))%"
    }
  }
}

/// What happened to one weight tensor: its size as float32/float16 and as written, or why it was kept.
public struct CompressedTensorReport: Sendable, Equatable, Codable {
  /// The MIL constant's name.
  public var name: String
  public var shape: [Int]
  /// Bytes the tensor takes uncompressed (at the model's precision) and as written (data, tables,
  /// scales and zero points).
  public var originalBytes: Int
  public var writtenBytes: Int
  /// "palettized 4-bit", "linear 8-bit symmetric", or nil when kept.
  public var method: String?
  /// Why it was kept as it is, when it was.
  public var skipped: String?
  /// Relative RMS error of the decompressed weights (`||w' - w|| / ||w||`).
  public var relativeError: Float?

  public init(
    name: String, shape: [Int], originalBytes: Int, writtenBytes: Int, method: String?, skipped: String?,
    relativeError: Float?
  ) {
    self.name = name
    self.shape = shape
    self.originalBytes = originalBytes
    self.writtenBytes = writtenBytes
    self.method = method
    self.skipped = skipped
    self.relativeError = relativeError
  }
}

/// `||decoded - original|| / ||original||` of a tensor, accumulated element by element (0 for an all-zero
/// tensor), so the decoded values never need a second array.
public struct RelativeError: Sendable {
  private var error = 0.0, norm = 0.0
  public init() {}
  public mutating func add(decoded: Float, original: Float) {
    error += Double(decoded - original) * Double(decoded - original)
    norm += Double(original) * Double(original)
  }
  public var value: Float { norm > 0 ? Float((error / norm).squareRoot()) : 0 }
}
