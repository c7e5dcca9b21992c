import CoreMLCommon
import CoreMLFormat
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// Weight compression as `ct.optimize.coreml` does it: k-means palettization and per-channel linear
/// quantization, written as iOS 16 constexpr operations. Expected values come from the definitions
/// (k-means: each table entry the mean of the values nearest it; MIL's `constexpr_lut_to_dense` and
/// `constexpr_affine_dequantize`), and written packages are read back by the reader, which decodes
/// coremltools' own compressed files (`Samples/Fixtures/coremltools/rgb_classifier_program_lut4`,
/// `_linear8`) to their reference outputs.
@Suite struct WeightCompressionTests {
  static let digits = Fixtures.digits.appendingPathComponent("digits_cnn.h5")

  // MARK: Algorithms

  @Test func palettizingFourDistinctValuesInTwoBitsKeepsThemExactly() {
    let distinct: [Float] = [-0.75, -0.125, 0.5, 2]
    let values = (0..<4096).map { distinct[($0 * 7 + $0 / 5) % 4] }
    let result = Palettizer.palettize(values, bits: 2, seed: 0)
    #expect(result.table == distinct)
    #expect(zip(result.indices, values).allSatisfy { result.table[Int($0)] == $1 })
  }

  @Test func palettizedTablesAreKMeansFixedPoints() {
    // Deterministic values spread like weights (a sum of uniforms).
    var state: UInt64 = 1
    func uniform() -> Float {
      state = state &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
      return Float(state >> 40) / Float(1 << 24) - 0.5
    }
    let values = (0..<20_000).map { _ in uniform() + uniform() + uniform() }
    for bits in [1, 4, 6] {
      let result = Palettizer.palettize(values, bits: bits, seed: 7)
      #expect(result.table.count == 1 << bits)
      #expect(result == Palettizer.palettize(values, bits: bits, seed: 7), "the same seed gives the same table")
      // Every value's entry is its nearest one...
      for (code, value) in zip(result.indices, values).prefix(2000) {
        let distance = abs(result.table[Int(code)] - value)
        #expect(result.table.allSatisfy { abs($0 - value) >= distance - 1e-6 })
      }
      // ...and each entry is the mean of the values assigned to it, within the histogram's bin width
      // (values are binned into 2^16 bins between the minimum and maximum; a bin is assigned whole).
      var sums = [Double](repeating: 0, count: 1 << bits)
      var counts = [Double](repeating: 0, count: 1 << bits)
      for (code, value) in zip(result.indices, values) {
        sums[Int(code)] += Double(value)
        counts[Int(code)] += 1
      }
      let width = Double(values.max()! - values.min()!) / Double(Palettizer.histogramBins)
      for i in 0..<(1 << bits) where counts[i] > 0 {
        #expect(abs(sums[i] / counts[i] - Double(result.table[i])) <= 2 * width, "entry \(i) of \(bits)-bit table")
      }
    }
  }

  @Test func codesArePackedInEachFormatsBitOrder() {
    // Element i's bit j is bit i * bits + j of the stream: codes 1, 2, 3 in 2 bits are 0b00_11_10_01.
    #expect(Palettizer.pack([1, 2, 3], bits: 2) == [0b0011_1001])
    #expect(Palettizer.pack([5, 3], bits: 4) == [0x35])
    #expect(Palettizer.pack([1, 0, 1, 1, 0, 0, 0, 1, 1], bits: 1) == [0b1000_1101, 0b1])
    // A classic WeightParams.rawValue holds codes most significant bit first (NeuralNetwork.proto's
    // QuantizationParams, coremltools' _convert_array_to_nbit_quantized_bytes): 01 10 11 then padding.
    #expect(Palettizer.pack([1, 2, 3], bits: 2, mostSignificantFirst: true) == [0b0110_1100])
    #expect(Palettizer.pack([5, 3], bits: 4, mostSignificantFirst: true) == [0x53])
    #expect(
      Palettizer.pack([1, 0, 1, 1, 0, 0, 0, 1, 1], bits: 1, mostSignificantFirst: true) == [0b1011_0001, 0b1000_0000])
  }

  @Test func linearQuantizationFollowsTheAffineDequantizeDefinition() {
    // Symmetric: scale = max|w| / 127 per channel, q = round(w / scale), zero point 0.
    let symmetric = LinearQuantizer.quantize([-1, 0.5, 0.25, 0, 0, 0], channels: 2, mode: .symmetric)
    #expect(symmetric.scales == [1 / 127, 1])
    #expect(symmetric.data.map { Int8(bitPattern: $0) } == [-127, 64, 32, 0, 0, 0])
    #expect(symmetric.zeroPoints == [0, 0])
    // Affine over [min(w, 0), max(w, 0)]: scale = (high - low) / 255, zero = round(-low / scale), q = round(w / scale) + zero.
    let affine = LinearQuantizer.quantize([-1, 0, 3], channels: 1, mode: .affine)
    #expect(affine.scales == [4 / 255])
    #expect(affine.zeroPoints == [64])
    #expect(affine.data == [0, 64, 255])
  }

  @Test func magnitudePruningZeroesTheSmallestAndMasksTheRest() {
    // Half of 6: the three smallest magnitudes (0, 0.5, -1) go; bits 0, 3 and 5 stay set.
    let result = MagnitudePruner.prune([3, -1, 0.5, -2, 0, 4], fraction: 0.5)
    #expect(result.kept == [3, -2, 4])
    #expect(result.mask == [0b0010_1001])
    // Ties go in element order.
    let ties = MagnitudePruner.prune([1, -1, 1, 2], fraction: 0.5)
    #expect(ties.kept == [1, 2])
    #expect(ties.mask == [0b0000_1100])
    // Large tensors take the histogram path: exactly the share asked for is zeroed, and no kept element is
    // smaller in magnitude than a zeroed one.
    let values = (0..<100_003).map { Float(($0 * 7919) % 100_003) / 100_003 - 0.5 }
    let pruned = MagnitudePruner.prune(values, fraction: 0.3)
    #expect(pruned.kept.count == values.count - Int(0.3 * Double(values.count)))
    let smallestKept = pruned.kept.map(abs).min()!
    let zeroedLargest = values.indices.filter { (pruned.mask[$0 / 8] >> ($0 % 8)) & 1 == 0 }.map { abs(values[$0]) }
      .max()!
    #expect(zeroedLargest <= smallestKept)
  }

  @Test func prunedPackagesKeepTheLargeWeightsExactly() throws {
    let (_, plainURL) = try Self.convert(nil, precision: .float32)
    let original = try #require(Self.denseKernels(plainURL).first)
    let (model, url) = try Self.convert(WeightCompression(method: .prune(fraction: 0.5)), precision: .float32)
    #expect(model.summary.compression?.compressedCount == 1)
    let decoded = try #require(Self.denseKernels(url).first)
    #expect(decoded.values.filter { $0 == 0 }.count >= original.count / 2)
    for (a, b) in zip(decoded.values, original.values) { #expect(a == 0 || a == b) }
    let report = try ParityVerifier.verify(
      source: Self.digits, converted: url, options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(report.outputs)")
    var classic = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    classic.compression = WeightCompression(method: .prune(fraction: 0.5))
    #expect(throws: CoreMLWriterError.self) { try Converter.convert(modelAt: Self.digits, options: classic) }
  }

  /// A pruned package whose mask no longer matches its values (every bit set: more elements than
  /// values; none set: fewer) is refused by name, never read as some other weight.
  @Test func corruptPruningMasksAreRefusedByName() throws {
    let (_, url) = try Self.convert(WeightCompression(method: .prune(fraction: 0.5)), precision: .float32)
    let weights = url.appendingPathComponent("Data/com.apple.CoreML/weights/weight.bin")
    let original = try [UInt8](Data(contentsOf: weights))
    let reader = try MILBlobStorage.Reader(bytes: original, path: weights.path)
    // Walk the records (64-byte aligned, each followed by its data) to the mask: the one uint8 blob.
    var offset = 64
    var mask: (offset: Int, count: Int)?
    for _ in 0..<reader.count {
      let blob = try reader.blob(at: UInt64(offset))
      if blob.dataType == .uint8 { mask = (offset + 64, blob.bytes.count) }
      offset = (offset + 64 + blob.bytes.count + 63) / 64 * 64
    }
    let (start, count) = try #require(mask, "no uint8 mask blob")
    for fill: UInt8 in [0xFF, 0x00] {
      var corrupt = original
      for i in start..<(start + count) { corrupt[i] = fill }
      try Data(corrupt).write(to: weights)
      #expect {
        _ = try Frontends.frontend(for: url).importSource(at: url, options: SourceOptions())
      } throws: { error in
        let text = "\(error)"
        return text.contains(url.path) && text.contains("mask")
      }
    }
  }

  // MARK: Written packages

  /// Converts the digits sample with `compression` and reads the package back.
  static func convert(_ compression: WeightCompression?, precision: WeightPrecision) throws -> (ConvertedModel, URL) {
    var options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    options.format = .mlProgram
    options.precision = precision
    options.compression = compression
    let model = try Converter.convert(modelAt: digits, options: options)
    let directory = try Fixtures.temporaryDirectory()
    let url = directory.appendingPathComponent("digits.mlpackage")
    try model.write(to: url)
    return (model, url)
  }

  /// `||decoded - original|| / ||original||`.
  static func relativeError(_ decoded: [Float], _ original: [Float]) -> Float {
    var error = 0.0
    var norm = 0.0
    for (a, b) in zip(decoded, original) {
      error += Double(a - b) * Double(a - b)
      norm += Double(b) * Double(b)
    }
    return Float((error / norm).squareRoot())
  }

  static func denseKernels(_ url: URL) throws -> [Constant] {
    let source = try Frontends.frontend(for: url).importSource(at: url, options: SourceOptions())
    return source.graph.nodes.compactMap { node in
      if case .dense(let dense) = node.operation { return dense.kernel }
      return nil
    }
  }

  @Test(arguments: [WeightPrecision.float32, .float16])
  func compressedPackagesDecodeToTheWeightsTheyWereMadeFrom(precision: WeightPrecision) throws {
    let (_, plainURL) = try Self.convert(nil, precision: precision)
    let original = try #require(Self.denseKernels(plainURL).first)
    for method in [
      WeightCompression.Method.palettize(bits: 4), .quantize(bits: 8, mode: .symmetric),
      .quantize(bits: 8, mode: .affine),
    ] {
      let (model, url) = try Self.convert(WeightCompression(method: method), precision: precision)
      let summary = try #require(model.summary.compression)
      // The dense kernel (1 of 9 weight tensors has 2048 elements or more) is compressed; the rest are kept.
      #expect(summary.compressedCount == 1 && summary.skippedCount == 8, "\(summary)")
      #expect(summary.weightBytesAfter < summary.weightBytesBefore)
      #expect(model.encoded.specificationVersion == 7, "constexpr operations are iOS 16")
      #expect(try Self.packageBytes(url) < Self.packageBytes(plainURL))
      // Read back: the decoded kernel is within the method's error of the original, and the reported error is the measured one.
      let decoded = try #require(Self.denseKernels(url).first)
      #expect(decoded.shape == original.shape)
      let measured = Self.relativeError(decoded.values, original.values)
      let reported = try #require(summary.tensors.first { $0.method != nil }?.relativeError)
      #expect(
        abs(measured - reported) <= 1e-3 * max(reported, 1e-6) + 1e-6,
        "\(method): read back \(measured), reported \(reported)")
      if case .quantize = method {
        // Each element within half a step of its output channel's scale: (max - min) / 255 at most.
        let outputs = original.shape[1]
        for o in 0..<outputs {
          let column = stride(from: o, to: original.count, by: outputs).map { original.values[$0] }
          let step = (max(column.max()!, 0) - min(column.min()!, 0)) / 127
          for i in stride(from: o, to: original.count, by: outputs) {
            // Float16 weights: the scale and the decoded value are rounded to float16 as well (2^-11 relative).
            let rounding = precision == .float16 ? abs(original.values[i]) / 2048 + step / 2048 : 0
            #expect(abs(decoded.values[i] - original.values[i]) <= step / 2 + rounding + 1e-7)
          }
        }
      } else {
        #expect(Set(decoded.values).count <= 16, "a 4-bit table has 16 entries")
      }
      // verify holds with the tolerance of the written compression.
      let report = try ParityVerifier.verify(
        source: Self.digits, converted: url, options: VerificationOptions(samples: 4))
      #expect(report.passed, "\(method): \(report.outputs) \(report.firstMismatch.map { "\($0)" } ?? "")")
      #expect(report.toleranceBasis == .quantizedWeights)
    }
  }

  /// A file's size, or the sum of a package's files.
  static func packageBytes(_ url: URL) throws -> Int {
    var folder: ObjCBool = false
    _ = FileManager.default.fileExists(atPath: url.path, isDirectory: &folder)
    if !folder.boolValue { return try url.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0 }
    let files = FileManager.default.enumerator(at: url, includingPropertiesForKeys: [.fileSizeKey])!
    return try files.compactMap { $0 as? URL }.reduce(0) {
      $0 + (try $1.resourceValues(forKeys: [.fileSizeKey]).fileSize ?? 0)
    }
  }

  /// iOS 18's form: uintN indices of the weight's shape and a table per group of output channels (and
  /// 3-bit tables). The digits sample's compressed tensor is its 256 x 32 dense kernel.
  @Test func groupedAndThreeBitPalettesAreIOS18() throws {
    for (bits, group) in [(4, 8), (3, nil), (2, 16)] as [(Int, Int?)] {
      var compression = WeightCompression(method: .palettize(bits: bits))
      compression.groupSize = group
      let (model, url) = try Self.convert(compression, precision: .float32)
      #expect(model.encoded.specificationVersion == 9, "iOS 18 is specification 9")
      #expect(model.summary.compression?.compressedCount == 1)
      let report = try ParityVerifier.verify(
        source: Self.digits, converted: url, options: VerificationOptions(samples: 4))
      #expect(report.passed || bits < 3, "\(bits) bits, groups of \(group ?? 0): \(report.outputs)")
      // Read back: each group of output channels takes at most 2^bits distinct values.
      let kernel = try #require(Self.denseKernels(url).first { $0.count >= 2048 })
      let outputs = kernel.shape[1]  // IR dense kernels are [in, out]
      let size = group ?? outputs
      for g in 0..<(outputs / size) {
        let values = Set(kernel.values.indices.filter { ($0 % outputs) / size == g }.map { kernel.values[$0] })
        #expect(values.count <= 1 << bits, "group \(g): \(values.count) values")
      }
    }
    var options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    options.format = .mlProgram
    options.target = .iOS17
    var grouped = WeightCompression(method: .palettize(bits: 4))
    grouped.groupSize = 8
    options.compression = grouped
    #expect(throws: CoreMLWriterError.self) { try Converter.convert(modelAt: Self.digits, options: options) }
    options.format = .neuralNetwork
    options.target = nil
    #expect(throws: CoreMLWriterError.self) { try Converter.convert(modelAt: Self.digits, options: options) }
  }

  /// 4-bit linear quantization and scales per block of input channels: iOS 18's
  /// `constexpr_blockwise_shift_scale` (int4/uint4 or int8 data). Read back, every element is within half a
  /// step of its block's scale.
  @Test func blockwiseQuantizationIsIOS18() throws {
    let (_, plainURL) = try Self.convert(nil, precision: .float32)
    let original = try #require(Self.denseKernels(plainURL).first { $0.count >= 2048 })
    let (inputs, outputs) = (original.shape[0], original.shape[1])  // IR dense kernels are [in, out]
    for (bits, mode, block) in [(4, .symmetric, nil), (4, .affine, 32), (8, .symmetric, 64)]
      as [(Int, WeightCompression.QuantizationMode, Int?)]
    {
      var compression = WeightCompression(method: .quantize(bits: bits, mode: mode))
      compression.blockSize = block
      let (model, url) = try Self.convert(compression, precision: .float32)
      #expect(model.encoded.specificationVersion == 9)
      let decoded = try #require(Self.denseKernels(url).first { $0.count >= 2048 })
      let size = block ?? inputs
      for o in 0..<outputs {
        for b in 0..<(inputs / size) {
          let rows = (b * size)..<((b + 1) * size)
          let values = rows.map { original.values[$0 * outputs + o] }
          let low = min(values.min()!, 0)
          let high = max(values.max()!, 0)
          let step =
            mode == .symmetric ? max(-low, high) / Float((1 << (bits - 1)) - 1) : (high - low) / Float((1 << bits) - 1)
          for r in rows {
            #expect(abs(decoded.values[r * outputs + o] - original.values[r * outputs + o]) <= step / 2 * 1.0001 + 1e-7)
          }
        }
      }
      let report = try ParityVerifier.verify(
        source: Self.digits, converted: url, options: VerificationOptions(samples: 4))
      #expect(report.passed, "\(bits) bits \(mode), blocks of \(block ?? 0): \(report.outputs)")
    }
  }

  @Test func targetsThatCannotLoadCompressedWeightsAreRefused() throws {
    var options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    options.format = .mlProgram
    options.target = .iOS15
    options.compression = WeightCompression(method: .palettize(bits: 4))
    #expect(throws: CoreMLWriterError.self) { try Converter.convert(modelAt: Self.digits, options: options) }
    // Quantized classic weights are specification 3 (iOS 12).
    options.format = .neuralNetwork
    options.target = DeploymentTarget.parse("iOS11")
    #expect(throws: CoreMLWriterError.self) { try Converter.convert(modelAt: Self.digits, options: options) }
  }

  /// The classic network's quantized weights (`WeightParams.rawValue` with `QuantizationParams`): the
  /// inner product's weights (the one tensor of 2048 elements or more) quantized per output channel or as a
  /// lookup table, read back within the method's error and verified.
  @Test func classicNetworksQuantizeTheirLayerWeights() throws {
    var options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)
    options.format = .neuralNetwork
    let directory = try Fixtures.temporaryDirectory()
    let plainURL = directory.appendingPathComponent("plain.mlmodel")
    try Converter.convert(modelAt: Self.digits, options: options).write(to: plainURL)
    let original = try #require(Self.denseKernels(plainURL).first)
    for method in [
      WeightCompression.Method.palettize(bits: 4), .palettize(bits: 8), .quantize(bits: 8, mode: .symmetric),
      .quantize(bits: 8, mode: .affine),
    ] {
      options.compression = WeightCompression(method: method)
      let model = try Converter.convert(modelAt: Self.digits, options: options)
      #expect(model.encoded.specificationVersion == 3, "quantized weights are specification 3")
      let url = directory.appendingPathComponent("digits-\(model.summary.compression!.method).mlmodel")
      try model.write(to: url)
      #expect(try Self.packageBytes(url) < Self.packageBytes(plainURL))
      let decoded = try #require(Self.denseKernels(url).first)
      #expect(decoded.shape == original.shape)
      let reported = try #require(model.summary.compression?.tensors.first { $0.method != nil }?.relativeError)
      #expect(
        abs(Self.relativeError(decoded.values, original.values) - reported) <= 1e-3 * reported + 1e-6, "\(method)")
      let report = try ParityVerifier.verify(
        source: Self.digits, converted: url, options: VerificationOptions(samples: 4))
      #expect(report.passed, "\(method): \(report.outputs)")
      #expect(report.toleranceBasis == .quantizedWeights)
    }
  }
}
