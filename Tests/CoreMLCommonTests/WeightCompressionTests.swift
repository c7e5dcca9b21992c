import CoreMLCommon
import Testing

/// What the writers share, alone: weight quantization as `constexpr_affine_dequantize` decodes it
/// (`w = scale * (q - zero)`), and sub-byte code packing in the two bit orders Core ML reads.
@Suite struct WeightCompressionTests {
  /// Symmetric 8-bit: scale = max |w| / 127, q = round(w / scale) (halves away from zero, as numpy's
  /// round-half-to-even gives here too: -63.5 and 63.5 round to the even -64 and 64).
  @Test func symmetricQuantization() {
    let values: [Float] = [-1, -0.5, 0, 0.25, 0.5, 1]
    let result = LinearQuantizer.quantize(values, channels: 1, mode: .symmetric)
    #expect(result.scales == [1 / 127])
    #expect((0..<6).map { result.code(at: $0) } == [-127, -64, 0, 32, 64, 127])
    for (i, value) in values.enumerated() { #expect(abs(result.value(at: i) - value) <= result.scales[0] / 2) }
  }

  /// Affine 8-bit over [0, 3]: scale = 3 / 255, zero point 0, codes 0, 85, 170, 255.
  @Test func affineQuantization() {
    let result = LinearQuantizer.quantize([0, 1, 2, 3], channels: 1, mode: .affine)
    #expect(abs(result.scales[0] - 3 / 255) < 1e-9 && result.zeroPoints == [0])
    #expect((0..<4).map { result.code(at: $0) } == [0, 85, 170, 255])
  }

  /// Per channel: each run of values gets its own scale.
  @Test func perChannelScales() {
    let result = LinearQuantizer.quantize([1, -1, 4, -2], channels: 2, mode: .symmetric)
    #expect(result.scales == [1 / 127, 4 / 127])
  }

  /// 4-bit codes 1, 2, 3: least significant first (MIL's sub-byte blobs) is 0x21 0x03; most
  /// significant first (a classic `WeightParams.rawValue`) is 0x12 0x30.
  @Test func subBytePacking() {
    #expect(Palettizer.pack([1, 2, 3], bits: 4) == [0x21, 0x03])
    #expect(Palettizer.pack([1, 2, 3], bits: 4, mostSignificantFirst: true) == [0x12, 0x30])
    #expect(Palettizer.pack([1, 0, 1, 1, 0, 0, 0, 1, 1], bits: 1) == [0b1000_1101, 0b1])
  }
}
