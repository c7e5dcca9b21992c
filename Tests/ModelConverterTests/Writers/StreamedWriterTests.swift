import CProtobufC
import CoreMLFormat
import CoreMLSpec
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// The neural-network writer packs one layer at a time, splicing the messages around the layers by hand
/// and producing each float32 weight in blocks while protobuf-c packs its layer. The bytes must be the
/// canonical encoding protobuf-c gives the whole message, and the file exactly those bytes.
@Suite struct StreamedWriterTests {
  /// Every fixture model that converts, from all four Keras dialects (dense, convolutions 1 x 1 and
  /// larger, depthwise, transposed, recurrent, embeddings, normalization, nested models...).
  static var models: [String] {
    Fixtures.dialects.flatMap { dialect in
      ((try? FileManager.default.contentsOfDirectory(atPath: Fixtures.url(dialect).path)) ?? [])
        .filter { $0.hasSuffix(".h5") && !$0.hasSuffix(".reference.h5") }
        .map { "\(dialect)/\($0)" }
    }.sorted()
  }

  /// protobuf-c's own encoding of a whole `Model`: unpacked from `bytes` and packed again in one call.
  static func repacked(_ bytes: [UInt8]) throws -> [UInt8] {
    let model = try #require(
      bytes.withUnsafeBufferPointer { core_ml__specification__model__unpack(nil, $0.count, $0.baseAddress) })
    defer { core_ml__specification__model__free_unpacked(model, nil) }
    let size = core_ml__specification__model__get_packed_size(model)
    var packed = [UInt8](repeating: 0, count: size)
    #expect(
      packed.withUnsafeMutableBufferPointer { core_ml__specification__model__pack(model, $0.baseAddress) } == size)
    return packed
  }

  @Test func splicedBytesAreProtobufCsWholeMessageEncoding() throws {
    var checked = 0
    var weightValues = 0
    for name in Self.models {
      guard let model = try? KerasConverter.convert(modelAt: Fixtures.url(name)) else { continue }
      let bytes = model.bytes
      #expect(bytes.count == model.encoded.specificationByteCount, "\(name)")
      #expect(
        try Self.repacked(bytes) == bytes,
        "\(name): the streamed bytes are not protobuf-c's encoding of the same message")
      // And the weights in them are the IR's, in Core ML's layout (read back by the Core ML reader).
      weightValues += try CoreMLSpecReader.read(bytes).layers.reduce(0) {
        $0 + $1.namedWeights.values.reduce(0) { $0 + $1.count }
      }
      checked += 1
    }
    #expect(checked >= 45, "only \(checked) fixtures converted")
    #expect(weightValues > 10_000)
  }

  /// A classifier (labels after the layers, in the same message) and image preprocessing, both precisions.
  @Test(arguments: ["float32", "float16"]) func classifierWithPreprocessingIsCanonical(precision: String) throws {
    let options = ConversionOptions(
      imageInputNames: ["input1"], classLabels: .strings((0..<10).map { "digit \($0)" }), imageScale: 1 / 255,
      precision: precision == "float16" ? .float16 : .float32)
    let model = try KerasConverter.convert(
      modelAt: Fixtures.digits.appendingPathComponent("digits_cnn.h5"), options: options)
    let bytes = model.bytes
    #expect(try Self.repacked(bytes) == bytes)
    let spec = try CoreMLSpecReader.read(bytes)
    #expect(spec.stringClassLabels.count == 10 && spec.preprocessing.count == 1)
  }

  /// Kernels larger than one 1 MiB block (the fixtures' all fit in one) come out in Apple's documented
  /// layouts, computed here index by index: convolution `[outputChannels, kernelChannels, kernelHeight,
  /// kernelWidth]` from Keras' `[kh, kw, in, out]`, inner product `[outputChannels, inputChannels]`
  /// from Keras' `[in, out]`; a 1 x 1 convolution (a plain transpose) too; in a neural network and in
  /// an ML Program's `weight.bin` (both written a block at a time).
  @Test func kernelsSpanningSeveralBlocksKeepApplesLayout() throws {
    func values(_ count: Int, seed: Int) -> [Float] { (0..<count).map { Float(($0 &* 7919 &+ seed) % 100_003) / 1000 } }
    let (kh, kw, ci, co) = (3, 3, 96, 400)  // 345,600 values: two blocks
    let (pci, pco) = (400, 700)  // 1 x 1: 280,000 values
    let (din, dout) = (700, 512)  // 358,400 values
    let conv = Constant(shape: [kh, kw, ci, co], values: values(kh * kw * ci * co, seed: 1))
    let pointwise = Constant(shape: [1, 1, pci, pco], values: values(pci * pco, seed: 2))
    let dense = Constant(shape: [din, dout], values: values(din * dout, seed: 3))
    var builder = GraphBuilder()
    let x = try builder.addInput(name: "x", type: TensorType([5, 5, ci]))
    let a = try builder.add(
      .convolution2D(
        Convolution2D(kernel: conv, bias: nil, strides: [1, 1], dilations: [1, 1], padding: .same, groups: 1)),
      name: "conv", inputs: [x])
    let b = try builder.add(
      .convolution2D(
        Convolution2D(kernel: pointwise, bias: nil, strides: [1, 1], dilations: [1, 1], padding: .valid, groups: 1)),
      name: "pointwise", inputs: [a])
    let c = try builder.add(.globalPooling2D(kind: .average, keepDims: false), name: "pool", inputs: [b])
    let y = try builder.add(.dense(Dense(kernel: dense, bias: nil)), name: "dense", inputs: [c])
    let bytes = try CoreMLWriter.serialize(builder.build(outputs: [y]), options: CoreMLWriterOptions())
    #expect(try Self.repacked(bytes) == bytes)
    let layers = try CoreMLSpecReader.read(bytes).layers
    func stored(_ name: String) throws -> [Float] {
      try #require(layers.first { $0.name == name }?.namedWeights["weights"])
    }

    // The same kernels in an ML Program's weight.bin (MIL's conv weight is [out, in, kh, kw], linear's [out, in]).
    let program = try MLProgramWriter().encode(builder.build(outputs: [y]), options: CoreMLWriterOptions())
    let weightFile = try #require(program.weights)
    #expect(program.byteCount == program.specification.count + weightFile.count)
    let reader = try MILBlobStorage.Reader(bytes: weightFile, path: "weight.bin")
    var blobs: [[Float]] = []
    var offset = 64
    while offset < weightFile.count {
      let blob = try reader.blob(at: UInt64(offset))
      #expect(blob.dataType == .float32)
      blobs.append(blob.bytes.withUnsafeBytes { Array($0.bindMemory(to: Float.self)) })
      offset = (offset + 64 + blob.bytes.count + 63) / 64 * 64
    }
    #expect(blobs.count == 3)

    var expected = [Float](repeating: 0, count: conv.count)
    for o in 0..<co {
      for i in 0..<ci {
        for y in 0..<kh {
          for x in 0..<kw {
            expected[((o * ci + i) * kh + y) * kw + x] = conv.values[((y * kw + x) * ci + i) * co + o]
          }
        }
      }
    }
    #expect(try stored("conv") == expected)
    #expect(blobs.contains(expected))
    expected = [Float](repeating: 0, count: pointwise.count)
    for o in 0..<pco { for i in 0..<pci { expected[o * pci + i] = pointwise.values[i * pco + o] } }
    #expect(try stored("pointwise") == expected)
    #expect(blobs.contains(expected))
    expected = [Float](repeating: 0, count: dense.count)
    for o in 0..<dout { for i in 0..<din { expected[o * din + i] = dense.values[i * dout + o] } }
    #expect(try stored("dense") == expected)
    #expect(blobs.contains(expected))

    // float16: the same values rounded to float16 (Swift's IEEE round-to-nearest-even), stored as bit patterns.
    let halfBytes = try CoreMLWriter.serialize(
      builder.build(outputs: [y]), options: CoreMLWriterOptions(precision: .float16))
    #expect(try Self.repacked(halfBytes) == halfBytes)
    let halfLayers = try CoreMLSpecReader.read(halfBytes).layers
    let halfDense = try #require(halfLayers.first { $0.name == "dense" })
    #expect(halfDense.usesFloat16)
    #expect(halfDense.namedWeights["weights"] == expected.map { Float(Float16($0)) })
  }

  /// The file holds exactly the in-memory bytes; a write that cannot happen leaves nothing behind.
  @Test func fileIsTheSpecificationAndFailuresLeaveNothing() throws {
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let model = try KerasConverter.convert(modelAt: Fixtures.url("keras3/conv_variants.h5"))
    let url = directory.appendingPathComponent("model.mlmodel")
    try model.write(to: url)
    #expect(try [UInt8](Data(contentsOf: url)) == model.bytes)
    #expect(model.summary.byteCount == model.bytes.count)
    #expect(throws: (any Error).self) { try model.write(to: directory.appendingPathComponent("missing/model.mlmodel")) }
    #expect(try FileManager.default.contentsOfDirectory(atPath: directory.path) == ["model.mlmodel"])
  }
}
