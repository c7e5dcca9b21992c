import Foundation
import KerasTestSupport
import ModelConverter
import TestSupport
import Testing

/// verify keeps every value of both models for one sample (the layer-by-layer comparison): it plans that
/// memory from the declared shapes before running, runs as many samples at once as fit in its limit, and
/// refuses a model one sample of which does not fit (a hostile campaign's 30 KB file declaring an input
/// of 1 000 000 x 10 x 3 used 3.5 GB).
@Suite struct VerificationMemoryTests {
  /// depthwise_separable (input 10 x 10 x 3) converted, with its input's height changed to `height`.
  static func converted(height: Int) throws -> (source: URL, converted: URL) {
    let source = try KerasFileEditing.edited(
      "tfkeras215/depthwise_separable.h5",
      [("\"batch_input_shape\": [null, 10, 10, 3]", "\"batch_input_shape\": [null, \(height), 10, 3]")])
    let output = source.deletingPathExtension().appendingPathExtension("mlmodel")
    try Converter.convert(modelAt: source, options: ConversionOptions()).write(to: output)
    return (source, output)
  }

  @Test func theSamplesRunAtOnceFitTheLimitAndTheReportDoesNotDependOnThem() throws {
    let (source, converted) = try Self.converted(height: 10)
    var options = VerificationOptions(samples: 4)
    options.threads = 4
    let wide = try ParityVerifier.verify(source: source, converted: converted, options: options)
    #expect(wide.memory.samplesAtOnce == 4)
    // Both graphs hold the input (10 x 10 x 3 float32) at least.
    #expect(wide.memory.bytesPerSample >= 2 * 4 * 300)
    // A limit of two samples' tensors: two at a time; of one sample's: one at a time, the same statistics
    // (RuntimeThreadsTests: the report does not depend on the samples run at once).
    options.memoryLimit = 2 * wide.memory.bytesPerSample + 1
    #expect(try ParityVerifier.verify(source: source, converted: converted, options: options).memory.samplesAtOnce == 2)
    options.memoryLimit = wide.memory.bytesPerSample
    let narrow = try ParityVerifier.verify(source: source, converted: converted, options: options)
    #expect(narrow.memory.samplesAtOnce == 1)
    #expect(narrow.outputs == wide.outputs)
    #expect(narrow.passed && wide.passed)
    // One byte less: refused before anything runs, with what it needs and what it may use.
    options.memoryLimit = wide.memory.bytesPerSample - 1
    #expect(
      throws: VerificationError.exceedsMemory(
        path: converted.path, bytesPerSample: wide.memory.bytesPerSample, limit: wide.memory.bytesPerSample - 1)
    ) {
      try ParityVerifier.verify(source: source, converted: converted, options: options)
    }
  }

  @Test func aLargeDeclaredInputIsPlannedFromItsShapeAndRefusedBeyondTheLimit() throws {
    let (small, smallConverted) = try Self.converted(height: 10)
    let (large, largeConverted) = try Self.converted(height: 100_000)
    var options = VerificationOptions(samples: 1)
    let plain = try ParityVerifier.verify(source: small, converted: smallConverted, options: options)
    options.memoryLimit = 64 << 20
    do {
      _ = try ParityVerifier.verify(source: large, converted: largeConverted, options: options)
      Issue.record("a model needing more than 64 MiB per sample was verified within 64 MiB")
    } catch VerificationError.exceedsMemory(let path, let bytes, let limit) {
      #expect(path == largeConverted.path)
      #expect(limit == 64 << 20)
      // Both graphs hold the 100 000 x 10 x 3 input and the first layer's 100 000 x 10 x 6 (depthwise,
      // same padding, depth multiplier 2), in float32.
      #expect(bytes >= 2 * 4 * (3_000_000 + 6_000_000), "\(bytes)")
      #expect(bytes > plain.memory.bytesPerSample)
      #expect(
        "\(VerificationError.exceedsMemory(path: path, bytesPerSample: bytes, limit: limit))".contains(
          "64.0 MiB verify may use"))
    }
  }
}

/// predict and evaluate plan the same way: a model whose declared input makes one classification's
/// tensors more than half of the memory the process may have is refused when it is loaded.
@Suite struct PredictionMemoryTests {
  @Test func aPhotoClassifierDeclaringAHugeInputIsRefusedWhenLoaded() throws {
    // depthwise_separable with an input of 16 000 000 x 20 x 3 (near the largest axis a file may declare): each of
    // its activations is 3.6 GiB or more, its tensors together several times this machine's memory.
    let source = try KerasFileEditing.edited(
      "tfkeras215/depthwise_separable.h5",
      [("\"batch_input_shape\": [null, 10, 10, 3]", "\"batch_input_shape\": [null, 16000000, 20, 3]")])
    do {
      _ = try ImageModel.load(contentsOf: source)
      Issue.record("a model of 3.6 GiB activations loaded within \(RuntimeMemory.describe(RuntimeMemory.defaultLimit))")
    } catch PredictionError.exceedsMemory(let path, let bytes, let limit) {
      #expect(path == source.path)
      #expect(limit == RuntimeMemory.defaultLimit && bytes > limit)
      #expect(bytes >= 2 * 4 * 16_000_000 * 60)  // the input and the first activation at least
    }
    // One that fits but has millions of outputs is not a photo classifier (each score would get a label):
    // 2000 x 2000 x 3 through its layers (depthwise same x2, depthwise 3 x 3 stride 2 valid: (2000 - 3) / 2 + 1
    // = 999, separable same to 5 filters, separable 3 x 3 valid to 4) is 997 x 997 x 4 = 3 976 036 values.
    let wide = try KerasFileEditing.edited(
      "tfkeras215/depthwise_separable.h5",
      [("\"batch_input_shape\": [null, 10, 10, 3]", "\"batch_input_shape\": [null, 2000, 2000, 3]")])
    #expect(
      throws: PredictionError.notAnImageModel(
        path: wide.path, detail: "its output has 3976036 values; a classifier's scores have at most 1048576")
    ) {
      try ImageModel.load(contentsOf: wide)
    }
    // The same model as declared (10 x 10 x 3) loads, a few KB of tensors per image.
    let plain = try ImageModel.load(contentsOf: Fixtures.url("tfkeras215/depthwise_separable.h5"))
    #expect(plain.bytesPerImage > 4 * 300 && plain.bytesPerImage < 1 << 20)
  }
}
