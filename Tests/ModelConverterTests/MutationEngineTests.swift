import CoreMLFormat
import CoreMLMutations
import CoreMLTestSupport
import Foundation
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// The mutation engine breaks written Core ML files where it says it does, files stay readable, and
/// the effect measure tells equivalent mutations from real ones.
@Suite struct MutationEngineTests {
  static let digitsOptions = ConversionOptions(
    imageInputNames: ["input1"], classLabels: .integers(Array(0...9)), imageScale: 1 / 255)

  static func digits(_ precision: WeightPrecision = .float32) throws -> [UInt8] {
    var options = digitsOptions
    options.precision = precision
    return try KerasConverter.convert(
      modelAt: Fixtures.digits.appendingPathComponent("digits_cnn.h5"), options: options
    ).bytes
  }

  static func fixture(_ name: String, _ options: ConversionOptions = ConversionOptions()) throws -> [UInt8] {
    try KerasConverter.convert(modelAt: Fixtures.url(name + ".h5"), options: options).bytes
  }

  static func mutation(_ kind: CoreMLMutation.Kind, layer: String? = nil, in bytes: [UInt8]) throws -> CoreMLMutation {
    let found = try CoreMLMutator.mutations(of: bytes).first { $0.kind == kind && (layer == nil || $0.layer == layer) }
    return try #require(found, "no \(kind) mutation\(layer.map { " in \($0)" } ?? "")")
  }

  /// The original and the mutated file, read back.
  static func applied(_ mutation: CoreMLMutation, to bytes: [UInt8]) throws -> (
    before: CoreMLModelSpec, after: CoreMLModelSpec
  ) {
    let mutated = try CoreMLMutator.apply(mutation, to: bytes)
    return (try CoreMLSpecReader.read(bytes), try CoreMLSpecReader.read(mutated))
  }

  /// Layers other than `name` are unchanged.
  static func othersUnchanged(_ before: CoreMLModelSpec, _ after: CoreMLModelSpec, except name: String) {
    #expect(before.layers.count == after.layers.count)
    for (a, b) in zip(before.layers, after.layers) where a.name != name { #expect(a == b, "layer \(a.name) changed") }
  }

  // MARK: Which mutations a file offers

  @Test func digitsOffersEveryKindItsLayersAllow() throws {
    let bytes = try Self.digits()
    let mutations = try CoreMLMutator.mutations(of: bytes)
    let kinds = Set(mutations.map(\.kind))
    let expected: Set<CoreMLMutation.Kind> = [
      .transposedKernel, .flippedKernel, .swappedOutputChannels, .swappedInputChannels, .changedBias, .paddingMode,
      .poolingMode,
      .axis, .swappedLabels, .doubledImageScale, .movedImageBias,
    ]
    #expect(expected.isSubset(of: kinds), "missing \(expected.subtracting(kinds))")
    // A grayscale image has no color order to swap; the model has no activation parameters, epsilons or gates.
    #expect(kinds.isDisjoint(with: [.swappedColorOrder, .activationParameter, .epsilon, .swappedGates]))
    // Deterministic, and one mutation per layer and kind (pooling may also toggle padding exclusion).
    #expect(try CoreMLMutator.mutations(of: bytes) == mutations)
    let keys = mutations.filter { $0.kind != .poolingMode }.map { "\($0.kind)|\($0.layer ?? "-")" }
    #expect(Set(keys).count == keys.count)
    // Both convolutions and both dense layers get the weight mutations.
    let spec = try CoreMLSpecReader.read(bytes)
    let weighted = spec.layers.filter { $0.kind == "convolution" || $0.kind == "innerProduct" }.map(\.name)
    #expect(weighted.count == 4)
    for name in weighted {
      #expect(mutations.contains { $0.kind == .swappedOutputChannels && $0.layer == name })
      #expect(mutations.contains { $0.kind == .changedBias && $0.layer == name })
    }
    // The blob is the layer's first output; model-level mutations have neither.
    for mutation in mutations {
      if let layer = mutation.layer {
        #expect(mutation.blob == spec.layer(named: layer)?.outputs.first)
      } else {
        #expect(mutation.blob == nil)
      }
    }
  }

  @Test(arguments: [
    ("tfkeras215/activations", CoreMLMutation.Kind.activationParameter),
    ("tfkeras215/batchnorm", .epsilon),
    ("tfkeras215/pooling", .poolingMode),
    ("layers/keras3/lstm_variants", .swappedGates),
    ("layers/keras3/gru_reset_before", .swappedGates),
    ("layers/keras3/text_bilstm", .swappedGates),
  ])
  func fixturesOfferTheirKinds(fixture: String, kind: CoreMLMutation.Kind) throws {
    let bytes = try Self.fixture(fixture)
    let mutations = try CoreMLMutator.mutations(of: bytes)
    #expect(mutations.contains { $0.kind == kind })
    // Every mutation applies and leaves a readable file that differs from the original.
    for mutation in mutations {
      let mutated = try CoreMLMutator.apply(mutation, to: bytes)
      #expect(mutated != bytes, "\(mutation) changed nothing")
      _ = try CoreMLSpecReader.read(mutated)
    }
  }

  @Test func everyDigitsMutationYieldsAReadableDifferentFile() throws {
    for precision in [WeightPrecision.float32, .float16] {
      let bytes = try Self.digits(precision)
      for mutation in try CoreMLMutator.mutations(of: bytes) {
        let mutated = try CoreMLMutator.apply(mutation, to: bytes)
        #expect(mutated != bytes, "\(mutation) changed nothing")
        let spec = try CoreMLSpecReader.read(mutated)
        #expect(spec.layers.allSatisfy { $0.usesFloat16 == (precision == .float16) || $0.namedWeights.isEmpty })
      }
    }
  }

  // MARK: Where the files differ

  @Test func transposedKernelIsTheTransposition() throws {
    for precision in [WeightPrecision.float32, .float16] {
      let bytes = try Self.digits(precision)
      let (before, after) = try Self.applied(try Self.mutation(.transposedKernel, layer: "conv2", in: bytes), to: bytes)
      let (a, b) = (try #require(before.layer(named: "conv2")), try #require(after.layer(named: "conv2")))
      let k = try #require(a.convolution?.kernelSize.first)
      let slabs = try #require(a.namedWeights["weights"]).count / (k * k)
      let original = try #require(a.namedWeights["weights"])
      let mutated = try #require(b.namedWeights["weights"])
      #expect(original != mutated)
      for s in 0..<slabs {
        for y in 0..<k { for x in 0..<k { #expect(mutated[s * k * k + y * k + x] == original[s * k * k + x * k + y]) } }
      }
      #expect(a.namedWeights["bias"] == b.namedWeights["bias"])
      #expect(b.usesFloat16 == (precision == .float16))
      Self.othersUnchanged(before, after, except: "conv2")
    }
  }

  @Test func flippedKernelIsReversed() throws {
    let bytes = try Self.digits()
    let (before, after) = try Self.applied(try Self.mutation(.flippedKernel, layer: "conv1", in: bytes), to: bytes)
    let original = try #require(before.layer(named: "conv1")?.namedWeights["weights"])
    let mutated = try #require(after.layer(named: "conv1")?.namedWeights["weights"])
    for s in 0..<(original.count / 9) {
      #expect(Array(mutated[(s * 9)..<(s * 9 + 9)]) == original[(s * 9)..<(s * 9 + 9)].reversed())
    }
    Self.othersUnchanged(before, after, except: "conv1")
  }

  @Test func swappedChannelsMoveWeightsAndBias() throws {
    let bytes = try Self.digits()
    // Dense [out, in]: rows 0 and out-1 trade places with their biases.
    let (before, after) = try Self.applied(
      try Self.mutation(.swappedOutputChannels, layer: "dense", in: bytes), to: bytes)
    let a = try #require(before.layer(named: "dense"))
    let b = try #require(after.layer(named: "dense"))
    let (inputs, outputs) = (try #require(a.innerProduct?.inputChannels), try #require(a.innerProduct?.outputChannels))
    let (w, v) = (try #require(a.namedWeights["weights"]), try #require(b.namedWeights["weights"]))
    #expect(Array(v[0..<inputs]) == Array(w[((outputs - 1) * inputs)...]))
    #expect(Array(v[((outputs - 1) * inputs)...]) == Array(w[0..<inputs]))
    #expect(v[inputs..<((outputs - 1) * inputs)] == w[inputs..<((outputs - 1) * inputs)])
    let (bias, swapped) = (try #require(a.namedWeights["bias"]), try #require(b.namedWeights["bias"]))
    #expect(
      swapped.first == bias.last && swapped.last == bias.first
        && swapped.dropFirst().dropLast() == bias.dropFirst().dropLast())

    // Convolution [out, in, kh, kw]: input channel slices 0 and in-1 trade places in every output channel.
    let (before2, after2) = try Self.applied(
      try Self.mutation(.swappedInputChannels, layer: "conv2", in: bytes), to: bytes)
    let c = try #require(before2.layer(named: "conv2"))
    let d = try #require(after2.layer(named: "conv2"))
    let kc = try #require(c.convolution?.kernelChannels)
    let area = 9
    let (x, y) = (try #require(c.namedWeights["weights"]), try #require(d.namedWeights["weights"]))
    for o in 0..<(x.count / (kc * area)) {
      let first = (o * kc) * area
      let last = (o * kc + kc - 1) * area
      #expect(Array(y[first..<(first + area)]) == Array(x[last..<(last + area)]))
      #expect(Array(y[last..<(last + area)]) == Array(x[first..<(first + area)]))
    }
    #expect(c.namedWeights["bias"] == d.namedWeights["bias"])
  }

  @Test func changedBiasMovesOneElementVisibly() throws {
    let bytes = try Self.digits()
    let (before, after) = try Self.applied(try Self.mutation(.changedBias, layer: "conv1", in: bytes), to: bytes)
    let original = try #require(before.layer(named: "conv1")?.namedWeights["bias"])
    let mutated = try #require(after.layer(named: "conv1")?.namedWeights["bias"])
    let changed = zip(original, mutated).enumerated().filter { $0.element.0 != $0.element.1 }
    #expect(changed.count == 1)
    let weights = try #require(before.layer(named: "conv1")?.namedWeights["weights"])
    let expected = 0.5 * (original.map(abs).max()! + weights.map(abs).max()!)
    #expect(abs(mutated[0] - original[0] - expected) < 1e-5)
    #expect(
      before.layer(named: "conv1")?.namedWeights["weights"] == after.layer(named: "conv1")?.namedWeights["weights"])
  }

  @Test func paddingPoolingAndAxisSettingsChange() throws {
    let bytes = try Self.digits()
    let (before, after) = try Self.applied(try Self.mutation(.paddingMode, layer: "conv1", in: bytes), to: bytes)
    #expect(before.layer(named: "conv1")?.convolution?.padding == .same(asymmetryMode: .known(.bottomRightHeavy)))
    #expect(after.layer(named: "conv1")?.convolution?.padding == .valid(paddingAmounts: [2, 0, 2, 0]))

    let pool = try Self.mutation(.poolingMode, layer: "pool1", in: bytes)
    let (p0, p1) = try Self.applied(pool, to: bytes)
    #expect(p0.layer(named: "pool1")?.pooling?.type == .known(.max))
    #expect(p1.layer(named: "pool1")?.pooling?.type == .known(.average))
    Self.othersUnchanged(p0, p1, except: "pool1")

    let (f0, f1) = try Self.applied(try Self.mutation(.axis, layer: "flatten", in: bytes), to: bytes)
    let mode = try #require(f0.layer(named: "flatten")?.flatten?.mode.rawValue)
    #expect(f1.layer(named: "flatten")?.flatten?.mode.rawValue == 1 - mode)
  }

  @Test func modelLevelMutations() throws {
    let bytes = try Self.digits()
    let (l0, l1) = try Self.applied(try Self.mutation(.swappedLabels, in: bytes), to: bytes)
    #expect(l0.int64ClassLabels == Array(0...9))
    #expect(l1.int64ClassLabels == [1, 0] + Array(2...9))
    #expect(l0.layers == l1.layers)

    let (s0, s1) = try Self.applied(try Self.mutation(.doubledImageScale, in: bytes), to: bytes)
    #expect(s1.preprocessing.first?.channelScale == 2 * s0.preprocessing.first!.channelScale)
    let (b0, b1) = try Self.applied(try Self.mutation(.movedImageBias, in: bytes), to: bytes)
    #expect(b1.preprocessing.first?.grayBias == b0.preprocessing.first!.grayBias + 0.25)

    // An RGB image input: string labels and the color order.
    let rgb = try Self.fixture(
      "tfkeras215/nested",
      ConversionOptions(imageInputNames: ["input1"], classLabels: .strings(["cat", "dog"]), isBGR: false))
    let (c0, c1) = try Self.applied(try Self.mutation(.swappedColorOrder, in: rgb), to: rgb)
    #expect(c0.inputs.first?.kind == .image(width: 8, height: 8, colorSpace: "RGB"))
    #expect(c1.inputs.first?.kind == .image(width: 8, height: 8, colorSpace: "BGR"))
    let (t0, t1) = try Self.applied(try Self.mutation(.swappedLabels, in: rgb), to: rgb)
    #expect(t0.stringClassLabels == ["cat", "dog"])
    #expect(t1.stringClassLabels == ["dog", "cat"])
  }

  @Test func swappedGatesExchangeGateBlobs() throws {
    let bytes = try Self.fixture("layers/keras3/lstm_variants")
    let mutation = try Self.mutation(.swappedGates, in: bytes)
    let name = try #require(mutation.layer)
    let (before, after) = try Self.applied(mutation, to: bytes)
    let a = try #require(before.layer(named: name))
    let b = try #require(after.layer(named: name))
    for prefix in ["W_", "R_", "b_"] {
      #expect(b.namedWeights[prefix + "i"] == a.namedWeights[prefix + "f"])
      #expect(b.namedWeights[prefix + "f"] == a.namedWeights[prefix + "i"])
      #expect(b.namedWeights[prefix + "z"] == a.namedWeights[prefix + "z"])
      #expect(b.namedWeights[prefix + "o"] == a.namedWeights[prefix + "o"])
    }
    #expect(a.namedWeights["W_i"] != a.namedWeights["W_f"])

    let gru = try Self.fixture("layers/keras3/gru_reset_before")
    let gates = try Self.mutation(.swappedGates, in: gru)
    let (g0, g1) = try Self.applied(gates, to: gru)
    let x = try #require(g0.layer(named: gates.layer!))
    let y = try #require(g1.layer(named: gates.layer!))
    #expect(
      y.namedWeights["W_z"] == x.namedWeights["W_r"] && y.namedWeights["W_r"] == x.namedWeights["W_z"]
        && y.namedWeights["W_o"] == x.namedWeights["W_o"])
  }

  // MARK: Effect

  /// A 3x3 kernel symmetric in its height and width axes, written by our writer.
  static func symmetricConvolution() throws -> [UInt8] {
    var builder = GraphBuilder()
    let input = try builder.addInput(name: "x", type: TensorType([6, 6, 2]))
    var kernel: [Float] = []
    for y in 0..<3 {
      for x in 0..<3 {
        for i in 0..<2 { for o in 0..<3 { kernel.append(Float(y * x + y + x) * 0.1 + Float(i) - Float(o) * 0.3) } }
      }
    }
    let conv = Convolution2D(
      kernel: Constant(shape: [3, 3, 2, 3], values: kernel), bias: Constant(shape: [3], values: [0.1, -0.2, 0.3]),
      strides: [1, 1],
      dilations: [1, 1], padding: .same, groups: 1)
    let output = try builder.add(.convolution2D(conv), name: "conv", inputs: [input])
    var graph = builder.build(outputs: [output])
    // Output features are named like the converter's (the importer names its own values after layers).
    try graph.rename(output, to: "y")
    return try CoreMLWriter.serialize(graph, options: CoreMLWriterOptions())
  }

  @Test func transposingASymmetricKernelHasNoEffect() throws {
    let bytes = try Self.symmetricConvolution()
    let transposed = try Self.mutation(.transposedKernel, layer: "conv", in: bytes)
    let mutated = try CoreMLMutator.apply(transposed, to: bytes)
    #expect(try MutationEffect.measure(original: bytes, mutated: mutated, mutation: transposed) == 0)
    // Flipping it is not equivalent.
    let flipped = try Self.mutation(.flippedKernel, layer: "conv", in: bytes)
    #expect(
      try MutationEffect.measure(original: bytes, mutated: CoreMLMutator.apply(flipped, to: bytes), mutation: flipped)
        > 0)
  }

  @Test func realDigitsMutationsHaveAnEffect() throws {
    let bytes = try Self.digits()
    let real: [(CoreMLMutation.Kind, String?)] = [
      (.transposedKernel, "conv1"), (.flippedKernel, "conv2"), (.swappedOutputChannels, "conv1"),
      (.swappedInputChannels, "conv2"),
      (.changedBias, "dense"), (.paddingMode, "conv1"), (.poolingMode, "pool1"), (.axis, "flatten"),
      (.swappedLabels, nil),
      (.doubledImageScale, nil), (.movedImageBias, nil),
    ]
    for (kind, layer) in real {
      let mutation = try Self.mutation(kind, layer: layer, in: bytes)
      let effect = try MutationEffect.measure(
        original: bytes, mutated: CoreMLMutator.apply(mutation, to: bytes), mutation: mutation)
      #expect(effect > 0, "\(mutation)")
    }
    // The unchanged file has no effect at all.
    let any = try Self.mutation(.changedBias, layer: "dense", in: bytes)
    #expect(try MutationEffect.measure(original: bytes, mutated: bytes, mutation: any) == 0)
  }

  @Test func colorOrderEffectIsMeasuredOnTheSamePixels() throws {
    let rgb = try Self.fixture("tfkeras215/nested", ConversionOptions(imageInputNames: ["input1"]))
    let mutation = try Self.mutation(.swappedColorOrder, in: rgb)
    #expect(
      try MutationEffect.measure(original: rgb, mutated: CoreMLMutator.apply(mutation, to: rgb), mutation: mutation) > 0
    )
  }

  // MARK: Odd input

  @Test func oddInputThrows() throws {
    #expect(throws: CoreMLMutationError.malformed) { try CoreMLMutator.mutations(of: []) }
    #expect(throws: CoreMLMutationError.malformed) { try CoreMLMutator.mutations(of: [0xFF, 0xFF, 0xFF, 0x01]) }
    let bytes = try Self.digits()
    let foreign = CoreMLMutation(kind: .transposedKernel, layer: "nope", blob: "nope", detail: "swap")
    #expect(throws: CoreMLMutationError.notApplicable(foreign)) { try CoreMLMutator.apply(foreign, to: bytes) }
    // A truncated file either fails to unpack or is just a smaller model; it never crashes.
    for length in stride(from: 0, to: bytes.count, by: max(1, bytes.count / 50)) {
      let prefix = Array(bytes[0..<length])
      if let mutations = try? CoreMLMutator.mutations(of: prefix) {
        for mutation in mutations { _ = try? CoreMLMutator.apply(mutation, to: prefix) }
      }
    }
    // A mutated file that no longer reads counts as an infinite change.
    let mutation = try Self.mutation(.changedBias, layer: "dense", in: bytes)
    #expect(try MutationEffect.measure(original: bytes, mutated: [1, 2, 3], mutation: mutation) == .infinity)
  }
}
