import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

@testable import CoreMLProgramWriter

/// The ML Program writer's output, decoded with protobuf-c: program structure, names, constants and their
/// placement in weight.bin, layouts, precision casts, classifiers and image inputs.
@Suite struct MLProgramWriterTests {
  struct Written {
    var graph: Graph
    var options: CoreMLWriterOptions
    var encoded: EncodedModel
    var program: DecodedProgram
    var blobs: MILBlobStorage.Reader
  }

  static let digitsURL = Fixtures.digits.appendingPathComponent("digits_cnn.h5")

  /// Every fixture model (the dialect sets, the layer coverage set but for the models the Keras reader
  /// refuses, and the digits CNN).
  static var models: [String] {
    Fixtures.models
      + LayerCoverageTests.models.filter { LayerCoverageTests.importErrors[LayerCoverageTests.name(of: $0)] == nil }.map
    { "layers/" + $0 }
      + ["digits"]
  }

  private func url(_ model: String) -> URL { model == "digits" ? Self.digitsURL : Fixtures.url(model + ".h5") }

  private func write(
    _ model: String, _ conversion: ConversionOptions = ConversionOptions(), precision: WeightPrecision = .float32,
    target: DeploymentTarget? = nil
  ) throws -> Written {
    let converted = try KerasConverter.convert(modelAt: url(model), options: conversion)
    var options = converted.writerOptions
    options.precision = precision
    options.target = target
    return try write(converted.graph, options)
  }

  private func write(_ graph: Graph, _ options: CoreMLWriterOptions) throws -> Written {
    let encoded = try MLProgramWriter().encode(graph, options: options)
    return Written(
      graph: graph, options: options, encoded: encoded, program: try DecodedProgram(encoded.specification),
      blobs: try MILBlobStorage.Reader(bytes: encoded.weights ?? [], path: "weight.bin"))
  }

  private static func isIdentifier(_ name: String) -> Bool {
    name.range(of: "^[A-Za-z_][A-Za-z0-9_@]*$", options: .regularExpression) != nil
  }

  /// Structural rules every written program must follow.
  private func checkStructure(_ w: Written, _ label: String) throws {
    let p = w.program
    #expect(p.modelType == 502, "\(label)")
    #expect(p.functionNames == ["main"], "\(label)")
    #expect(p.blockKeys == [p.opset], "\(label)")
    var defined = Set(p.functionInputs.map(\.name))
    #expect(p.functionInputs.map(\.name) == w.graph.inputs.map { w.graph[$0].name }, "\(label)")
    for op in p.ops {
      #expect(Self.isIdentifier(op.name), "\(label): op name \(op.name)")
      for (key, names) in op.inputs {
        #expect(Self.isIdentifier(key), "\(label): parameter \(key)")
        for name in names where name != "<value>" {
          #expect(defined.contains(name), "\(label): \(op.type) \(op.name) reads \(name) before it is defined")
        }
      }
      for output in op.outputs {
        #expect(Self.isIdentifier(output.name), "\(label): value \(output.name)")
        #expect(defined.insert(output.name).inserted, "\(label): \(output.name) defined twice")
      }
      if op.type == "const", let value = op.value {
        let count = value.type.shape.reduce(1, *)
        let isFloat = value.type.dataType == DecodedProgram.fp16 || value.type.dataType == DecodedProgram.fp32
        if isFloat && count >= 10 {
          let offset = try #require(value.blobOffset, "\(label): \(op.name) with \(count) elements is inline")
          #expect(value.fileName == "@model_path/weights/weight.bin")
          #expect(offset % 64 == 0 && offset >= 64, "\(label): offset \(offset)")
          let blob = try w.blobs.blob(at: offset)
          #expect(
            blob.dataType == (value.type.dataType == DecodedProgram.fp16 ? .float16 : .float32), "\(label): \(op.name)")
          #expect(
            blob.bytes.count == count * (value.type.dataType == DecodedProgram.fp16 ? 2 : 4),
            "\(label): \(op.name) size")
        } else {
          #expect(value.blobOffset == nil, "\(label): \(op.name) with \(count) elements is in weight.bin")
        }
      }
    }
    for output in p.blockOutputs { #expect(defined.contains(output), "\(label): block output \(output)") }
    // Description outputs are the block's outputs.
    #expect(Set(p.outputs.map(\.name)) == Set(p.blockOutputs), "\(label)")
  }

  @Test(arguments: models)
  func everyFixtureWritesAValidProgramInBothPrecisions(model: String) throws {
    for precision in [WeightPrecision.float32, .float16] {
      let w = try write(model, precision: precision)
      try checkStructure(w, "\(model) \(precision)")
      #expect(w.program.specificationVersion == 6)
      #expect(w.program.opset == "CoreML5")
      // Casts between float types (an embedding's cast of token ids to int32 is not one).
      let casts = w.program.ops.filter { op in
        op.type == "cast" && [DecodedProgram.fp16, DecodedProgram.fp32].contains(op.outputs[0].type?.dataType ?? 0)
      }
      let floatTypes = Set(
        w.program.ops.flatMap { $0.outputs.compactMap { $0.type?.dataType } }.filter {
          $0 == DecodedProgram.fp16 || $0 == DecodedProgram.fp32
        })
      if precision == .float32 {
        #expect(casts.isEmpty, "\(model)")
        #expect(floatTypes == [DecodedProgram.fp32], "\(model)")
      } else {
        // One cast per input into float16 (token ids stay float32 for their embedding) and one per output back.
        #expect(
          casts.count >= w.graph.inputs.count + w.graph.outputs.count
            || casts.count >= w.graph.outputs.count && model.contains("text"), "\(model)")
        #expect(floatTypes.contains(DecodedProgram.fp16), "\(model)")
        for name in w.program.blockOutputs {
          #expect(w.program.producer(of: name)?.type == "cast", "\(model): \(name)")
        }
      }
      // Every node's value exists under the published name.
      let names = try MLProgramWriter.valueNames(w.graph, options: w.options)
      for node in w.graph.nodes where !w.graph.outputs.contains(node.output) {
        #expect(
          names[w.graph[node.output].name].flatMap { w.program.producer(of: $0) } != nil, "\(model): \(node.name)")
      }
      // Outputs are float32 [1] + S.
      for id in w.graph.outputs {
        let producer = try #require(w.program.producer(of: w.graph[id].name))
        #expect(
          producer.outputs[0].type == .init(dataType: DecodedProgram.fp32, shape: [1] + w.graph[id].type.shape),
          "\(model)")
      }
    }
  }

  @Test func convolutionWeightsAreStoredAsOutInKhKw() throws {
    for precision in [WeightPrecision.float32, .float16] {
      let w = try write("tfkeras215/conv_variants", precision: precision)
      var checked = 0
      for node in w.graph.nodes {
        guard case .convolution2D(let conv) = node.operation else { continue }
        let name = MILIdentifier.sanitize(w.graph[node.output].name)
        let op = try #require(w.program.ops.first { $0.type == "conv" && $0.outputs[0].name.hasPrefix(name) })
        let weight = try #require(w.program.constant(op.inputs["weight"]![0]))
        let (kh, kw, cin, cout) = (conv.kernelHeight, conv.kernelWidth, conv.inputChannelsPerGroup, conv.outputChannels)
        #expect(weight.type.shape == [cout, cin, kh, kw])
        var expected: [Float] = []
        for o in 0..<cout {
          for i in 0..<cin {
            for y in 0..<kh {
              for x in 0..<kw { expected.append(conv.kernel.values[((y * kw + x) * cin + i) * cout + o]) }
            }
          }
        }
        let stored: [Float]
        if let offset = weight.blobOffset {
          stored = Self.floats(try w.blobs.blob(at: offset))
        } else if let bytes = weight.bytes {
          stored = Self.float16s(bytes)
        } else {
          stored = weight.floats ?? []
        }
        #expect(stored == (precision == .float16 ? expected.map { Float(Float16($0)) } : expected), "\(node.name)")
        #expect(op.inputs["groups"].flatMap { w.program.constant($0[0])?.ints } == [Int32(conv.groups)])
        // TensorFlow's same padding with a stride above 1 is MIL's `same` (its pads follow the input size).
        let runtimePads = conv.padding == .same && (conv.strideHeight > 1 || conv.strideWidth > 1)
        #expect(w.program.constant(op.inputs["pad_type"]![0])?.strings == [runtimePads ? "same" : "custom"])
        checked += 1
      }
      #expect(checked >= 2)
    }
  }

  /// The float values of a float32 or float16 blob.
  static func floats(_ blob: MILBlobStorage.Blob) -> [Float] {
    let bytes = blob.bytes
    if blob.dataType == .float16 { return float16s(bytes) }
    return stride(from: 0, to: bytes.count, by: 4).map { (i: Int) -> Float in
      var bits: UInt32 = 0
      for k in 0..<4 { bits |= UInt32(bytes[i + k]) << (8 * UInt32(k)) }
      return Float(bitPattern: bits)
    }
  }

  /// Little-endian float16 bytes as floats.
  static func float16s(_ bytes: [UInt8]) -> [Float] {
    stride(from: 0, to: bytes.count, by: 2).map { (i: Int) -> Float in
      let bits = UInt16(bytes[i]) | (UInt16(bytes[i + 1]) << 8)
      return Float(Float16(bitPattern: bits))
    }
  }

  @Test func denseWeightsAreOutByIn() throws {
    let w = try write("tfkeras215/dense_classifier")
    let node = try #require(w.graph.nodes.first { if case .dense = $0.operation { return true } else { return false } })
    guard case .dense(let dense) = node.operation else {
      Issue.record("not a dense node")
      return
    }
    let op = try #require(w.program.producer(of: MILIdentifier.sanitize(w.graph[node.output].name)))
    #expect(op.type == "linear")
    let weight = try #require(w.program.constant(op.inputs["weight"]![0]))
    #expect(weight.type.shape == [dense.outputUnits, dense.inputUnits])
    let stored = Self.floats(try w.blobs.blob(at: try #require(weight.blobOffset)))
    #expect(stored.count == dense.kernel.count)
    // Element [0][1] is the kernel's [1][0].
    #expect(stored[1] == dense.kernel.values[dense.outputUnits])
  }

  @Test func targetsPickSpecificationVersionAndOpset() throws {
    for (target, version, opset) in [
      (DeploymentTarget.iOS15, 6, "CoreML5"), (.iOS16, 7, "CoreML6"), (.iOS17, 8, "CoreML7"), (.iOS18, 9, "CoreML8"),
    ] {
      let w = try write("tfkeras215/sequential_plain", target: target)
      #expect(w.program.specificationVersion == version)
      #expect(w.encoded.specificationVersion == version)
      #expect(w.program.opset == opset)
      #expect(w.program.blockKeys == [opset])
    }
    #expect(throws: CoreMLWriterError.self) { try write("tfkeras215/sequential_plain", target: .iOS14) }
    do {
      _ = try write("tfkeras215/sequential_plain", target: .iOS14)
    } catch let error as CoreMLWriterError {
      guard case .targetTooOld(let target, let needs, _) = error else {
        Issue.record("\(error)")
        return
      }
      #expect(target == "iOS14" && needs == 6)
    }
  }

  @Test func digitsClassifierWithImageInput() throws {
    let labels = try ClassLabels.load(fromFile: Fixtures.digits.appendingPathComponent("labels.txt").path)
    for precision in [WeightPrecision.float32, .float16] {
      let w = try write(
        "digits",
        ConversionOptions(
          inputNames: ["image"], imageInputNames: ["image"], classLabels: labels, imageScale: 1.0 / 255, grayBias: -0.5),
        precision: precision)
      try checkStructure(w, "digits")
      let p = w.program
      #expect(p.inputs.count == 1 && p.inputs[0].kind == "image" && p.inputs[0].imageSize! == (8, 8))
      #expect(p.functionInputs[0].type == .init(dataType: DecodedProgram.fp32, shape: [1, 1, 8, 8]))
      // Scale then bias come first, on the function input, then (float16) the cast.
      #expect(p.ops.first { $0.type != "const" }?.type == "mul")
      let mul = try #require(p.ops.first { $0.type == "mul" })
      #expect(mul.inputs["x"] == ["image"])
      #expect(p.constant(mul.inputs["y"]![0])?.floats == [Float(1.0 / 255)])
      let add = try #require(p.ops.first { $0.type == "add" })
      #expect(add.inputs["x"] == [mul.outputs[0].name])
      #expect(p.constant(add.inputs["y"]![0])?.type.shape == [1, 1, 1, 1])
      if precision == .float16 {
        let cast = try #require(p.ops.first { $0.type == "cast" })
        #expect(cast.inputs["x"] == [add.outputs[0].name])
      }
      let classify = try #require(p.ops.last)
      #expect(classify.type == "classify")
      #expect(classify.listInts == Array(0...9))
      #expect(classify.outputs.map(\.name) == ["classLabel", "output1"])
      #expect(p.producer(of: classify.inputs["probabilities"]![0])?.outputs[0].type?.dataType == DecodedProgram.fp32)
      #expect(p.outputs.map(\.name) == ["output1", "classLabel"])
      #expect(p.outputs.map(\.kind) == ["dictionary", "int64"])
      #expect(p.predictedFeatureName == "classLabel" && p.predictedProbabilitiesName == "output1")
      #expect(Set(p.blockOutputs) == ["output1", "classLabel"])
    }
  }

  @Test func stringLabelsAndBGRBiases() throws {
    let labels = try ClassLabels.load(fromFile: Fixtures.url("tfkeras215/dense_classifier.labels.txt").path)
    let w = try write(
      "tfkeras215/dense_classifier",
      ConversionOptions(inputNames: ["image"], outputNames: ["probs"], classLabels: labels))
    let classify = try #require(w.program.ops.last)
    #expect(classify.type == "classify" && classify.listStrings == ["cat", "dog", "bird", "fish"])
    #expect(w.program.outputs.map(\.kind) == ["dictionary", "string"])

    let color = try write(
      "tfkeras215/depthwise_separable",
      ConversionOptions(imageInputNames: ["input1"], redBias: 1, greenBias: 2, blueBias: 3, isBGR: true))
    #expect(color.program.inputs[0].kind == "image")
    #expect(color.program.inputs[0].colorSpace == 30)  // BGR
    let add = try #require(color.program.ops.first { $0.type == "add" })
    #expect(color.program.constant(add.inputs["y"]![0])?.floats == [3, 2, 1])
  }

  @Test func featureNamesMustBeIdentifiers() throws {
    let converted = try KerasConverter.convert(
      modelAt: Fixtures.url("tfkeras215/sequential_plain.h5"), options: ConversionOptions(inputNames: ["my input"]))
    do {
      _ = try MLProgramWriter().encode(converted.graph, options: converted.writerOptions)
      Issue.record("a feature name with a space was written")
    } catch let error as CoreMLWriterError {
      #expect("\(error)".contains("rename the input"))
      #expect(!"\(error)".contains("--"))
    }
  }

  @Test func float16OverflowIsRefused() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([4]))
    let y = try b.add(
      .dense(Dense(kernel: Constant(shape: [4, 3], values: [Float](repeating: 1e6, count: 12)), bias: nil)),
      name: "dense", inputs: [x])
    let graph = b.build(outputs: [y])
    #expect(throws: CoreMLWriterError.float16Overflow(layer: "dense", value: 1e6)) {
      try MLProgramWriter().encode(graph, options: CoreMLWriterOptions(precision: .float16))
    }
    #expect(throws: Never.self) {
      try MLProgramWriter().encode(graph, options: CoreMLWriterOptions(precision: .float32))
    }
  }

  /// conv → batch norm → relu → conv → pool stays channels-first: one transpose in (none for an image
  /// input) and one out, before the flatten.
  @Test func spatialChainsHaveNoTransposesInBetween() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([6, 6, 3]))
    func conv(_ input: ValueID, _ name: String, _ cin: Int) throws -> ValueID {
      try b.add(
        .convolution2D(
          Convolution2D(
            kernel: .filled(0.1, shape: [3, 3, cin, 4]), bias: .filled(0, shape: [4]), strides: [1, 1],
            dilations: [1, 1], padding: .same, groups: 1)),
        name: name, inputs: [input])
    }
    var v = try conv(x, "conv1", 3)
    v = try b.add(
      .batchNormalization(
        BatchNormalization(
          gamma: .filled(1, shape: [4]), beta: .filled(0, shape: [4]), mean: .filled(0, shape: [4]),
          variance: .filled(1, shape: [4]), epsilon: 1e-3)), name: "bn", inputs: [v])
    v = try b.add(.activation(.relu), name: "relu", inputs: [v])
    let c2 = try conv(v, "conv2", 4)
    v = try b.add(.elementwise(.add), name: "residual", inputs: [c2, v])
    v = try b.add(
      .pooling2D(Pooling2D(kind: .average, pool: [2, 2], strides: [2, 2], padding: .same)), name: "pool", inputs: [v])
    v = try b.add(.flatten, name: "flatten", inputs: [v])
    let graph = b.build(outputs: [v])
    let w = try write(graph, CoreMLWriterOptions())
    let types = w.program.ops.map(\.type).filter { $0 != "const" }
    #expect(types == ["transpose", "conv", "batch_norm", "relu", "conv", "add", "avg_pool", "transpose", "reshape"])
    // Values are named after the IR values.
    for node in graph.nodes {
      #expect(w.program.producer(of: graph[node.output].name) != nil, "\(node.name)")
    }
    let pool = try #require(w.program.ops.first { $0.type == "avg_pool" })
    #expect(w.program.constant(pool.inputs["exclude_padding_from_average"]![0]) != nil)

    let image = try write(graph, CoreMLWriterOptions(imageInputs: ["x": ImagePreprocessing()]))
    #expect(image.program.ops.map(\.type).filter { $0 == "transpose" }.count == 1)
  }

  /// A channels-first result leaves through one transpose named after the output (float32), or a
  /// transpose and a cast (float16); internal values keep derived names.
  @Test func outputsAreNaturalFloat32UnderTheFeatureName() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([4, 4, 1]))
    let y = try b.add(
      .convolution2D(
        Convolution2D(
          kernel: .filled(1, shape: [3, 3, 1, 2]), bias: nil, strides: [1, 1], dilations: [1, 1], padding: .valid,
          groups: 1)),
      name: "conv", inputs: [x])
    let graph = b.build(outputs: [y])
    let name = graph[y].name
    let w32 = try write(graph, CoreMLWriterOptions())
    // One channel: into channels first is a reshape (only a unit axis moves); out of it, a transpose.
    #expect(w32.program.ops.map(\.type).filter { $0 != "const" } == ["reshape", "conv", "transpose"])
    #expect(w32.program.producer(of: name)?.type == "transpose")
    #expect(w32.program.blockOutputs == [name])
    let w16 = try write(graph, CoreMLWriterOptions(precision: .float16))
    #expect(w16.program.ops.map(\.type).filter { $0 != "const" } == ["cast", "reshape", "conv", "transpose", "cast"])
    #expect(w16.program.producer(of: name)?.type == "cast")
    #expect(
      w16.program.producer(of: name)?.outputs[0].type == .init(dataType: DecodedProgram.fp32, shape: [1, 2, 2, 2]))
  }

  /// Recurrent layers MIL's own operations compute exactly are those operations: an LSTM with sigmoid
  /// gates and tanh, returning its sequence, is one `lstm` (no unrolled products).
  @Test func lstmIsMILOperation() throws {
    let w = try write("layers/tfkeras215/lstm_sequences_out")
    let types = w.program.ops.map(\.type)
    #expect(
      types.filter { $0 == "lstm" }.count == 1 && !types.contains("linear") && !types.contains("stack"), "\(types)")
  }

  /// The others are unrolled: one input projection, one recurrent product per step, the states stacked
  /// in time order; no MIL lstm/gru/rnn op (MIL's GRU is reset-after with no recurrent candidate bias,
  /// and a bidirectional layer merged other than by concatenation is two directions).
  @Test(arguments: ["layers/tfkeras215/gru_reset_before", "layers/tfkeras215/bidirectional_modes"])
  func recurrentLayersAreUnrolled(model: String) throws {
    let w = try write(model)
    let node = try #require(
      w.graph.nodes.first { node in
        guard case .recurrent(let r) = node.operation else { return false }
        return FusedRecurrentPlan(r) == nil
      })
    guard case .recurrent(let r) = node.operation else {
      Issue.record("not a recurrent node")
      return
    }
    let steps = w.graph[node.inputs[0]].type.shape[0]
    let types = w.program.ops.map(\.type)
    #expect(!types.contains("gru") && !types.contains("rnn"))
    let directions = r.backward == nil ? 1 : 2
    let resetBefore = r.cell == .gru(resetAfter: false)
    // Per direction: the input projection, then per step the recurrent product (and, for the reset-before
    // GRU, the candidate's own product).
    let linears = w.program.ops.filter {
      $0.type == "linear" && $0.outputs[0].name.hasPrefix(MILIdentifier.sanitize(w.graph[node.output].name))
    }
    #expect(linears.count >= directions * (1 + steps * (resetBefore ? 2 : 1)), "\(model)")
    if r.returnSequences {
      let stacks = w.program.ops.filter { $0.type == "stack" }
      #expect(stacks.count >= directions && stacks.allSatisfy { $0.inputs["values"]?.count == steps }, "\(model)")
    }
    #expect(w.program.producer(of: w.graph[node.output].name) != nil || w.graph.outputs.contains(node.output))
  }

  @Test func identifiersAreSanitizedAndUnique() {
    #expect(
      MILIdentifier.isValid("a_b@2") && MILIdentifier.isValid("_x") && !MILIdentifier.isValid("2x")
        && !MILIdentifier.isValid("a/b"))
    #expect(!MILIdentifier.isValid("") && !MILIdentifier.isValid("é"))
    #expect(MILIdentifier.sanitize("1st layer/conv") == "_1st_layer_conv")
    #expect(MILIdentifier.sanitize("dense") == "dense")
  }

  /// Internal values whose IR names are not identifiers, or sanitize alike, get distinct identifiers
  /// derived from their names; the producer of each IR value is findable by its sanitized name.
  @Test func internalNamesAreSanitizedWithoutClashes() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([3]))
    let a = try b.add(.activation(.relu), name: "block 1/relu", inputs: [x])
    let c = try b.add(.activation(.tanh), name: "block_1_relu", inputs: [a])
    let d = try b.add(.activation(.sigmoid), name: "9lives", inputs: [c])
    let e = try b.add(.activation(.exponential), name: "out", inputs: [d])
    let graph = b.build(outputs: [e])
    let w = try write(graph, CoreMLWriterOptions())
    try checkStructure(w, "names")
    let relu = try #require(w.program.producer(of: MILIdentifier.sanitize(graph[a].name)))
    let tanh = try #require(w.program.ops.first { $0.type == "tanh" })
    #expect(relu.type == "relu")
    #expect(tanh.inputs["x"] == [relu.outputs[0].name])
    #expect(tanh.outputs[0].name != relu.outputs[0].name && tanh.outputs[0].name.hasPrefix("block_1_relu_output"))
    #expect(w.program.producer(of: "_9lives_output")?.type == "sigmoid")
    // The published name map matches the program.
    let names = try MLProgramWriter.valueNames(graph, options: CoreMLWriterOptions())
    for node in graph.nodes {
      let name = try #require(names[graph[node.output].name])
      #expect(w.program.producer(of: name) != nil, "\(node.name) -> \(name)")
    }
    #expect(names[graph[c].name] == tanh.outputs[0].name)
    #expect(w.program.producer(of: graph[e].name)?.type == "exp")

    // A feature name that is not an identifier is refused with advice to rename it.
    var refused = GraphBuilder()
    let input = try refused.addInput(name: "x", type: TensorType([3]))
    let output = try refused.add(.activation(.relu), name: "9lives", inputs: [input])
    #expect(throws: CoreMLWriterError.self) {
      try MLProgramWriter().encode(refused.build(outputs: [output]), options: CoreMLWriterOptions())
    }
  }

  /// A graph with the operations no Keras fixture exercises (comparisons, select, reductions, padding,
  /// slices, constants, casts, dot products, unary functions, the general ReLU, PReLU on a vector, ...).
  static func syntheticGraph() throws -> Graph {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([4, 5, 3]))
    let v = try b.addInput(name: "v", type: TensorType([6]))
    let tokens = try b.addInput(name: "tokens", type: TensorType([4]))
    var outputs: [ValueID] = []
    let k = try b.add(.constant(Constant(shape: [3], values: [0.5, -1, 2])), name: "k", inputs: [])
    let scaled = try b.add(.elementwise(.multiply), name: "scaled", inputs: [x, k])
    let greater = try b.add(.elementwise(.greaterThan), name: "greater", inputs: [scaled, x])
    let chosen = try b.add(.elementwise(.select), name: "chosen", inputs: [greater, scaled, x])
    let quotient = try b.add(
      .elementwise(.divide), name: "quotient",
      inputs: [chosen, try b.add(.constant(.filled(4, shape: [1])), name: "four", inputs: [])])
    let averaged = try b.add(.elementwise(.average), name: "averaged", inputs: [quotient, x, scaled])
    let difference = try b.add(.elementwise(.subtract), name: "difference", inputs: [averaged, x])
    let lowest = try b.add(.elementwise(.minimum), name: "lowest", inputs: [difference, x])
    outputs.append(
      try b.add(.reduce(Reduction(kind: .sum, axes: [0, 2], keepDims: false)), name: "reduced_sum", inputs: [lowest]))
    outputs.append(
      try b.add(.reduce(Reduction(kind: .max, axes: [1], keepDims: true)), name: "reduced_max", inputs: [lowest]))
    let padded = try b.add(
      .constantPad(ConstantPadding(before: [1, 0, 0], after: [0, 2, 1], value: 0.25)), name: "padded", inputs: [x])
    outputs.append(
      try b.add(
        .slice(StridedSlice(begin: [0, 1, 0], end: [5, 7, 4], strides: [2, 3, 1])), name: "sliced", inputs: [padded]))
    let general = try b.add(
      .activation(.clippedReLU(maxValue: 1.5, negativeSlope: 0.1, threshold: 0.2)), name: "general_relu", inputs: [x])
    let thresholded = try b.add(.activation(.thresholdedReLU(theta: 0.3)), name: "thresholded", inputs: [general])
    let prelu = try b.add(
      .activation(.parametricReLU(alpha: Constant(shape: [3], values: [0.1, 0.2, 0.3]))), name: "prelu",
      inputs: [thresholded])
    let selu = try b.add(.activation(.selu), name: "selu", inputs: [prelu])
    let unary = try b.add(
      .activation(.unary(UnaryFunction(kind: .rsqrt, epsilon: 0.5, scale: 2, shift: 3))), name: "rsqrt",
      inputs: [try b.add(.activation(.unary(UnaryFunction(kind: .abs))), name: "abs", inputs: [selu])])
    let half = try b.add(.cast(.float16), name: "to_half", inputs: [unary])
    outputs.append(try b.add(.cast(.float32), name: "to_full", inputs: [half]))
    let vectorPrelu = try b.add(
      .activation(.parametricReLU(alpha: Constant(shape: [6], values: [0.1, 0.2, 0.3, 0.4, 0.5, 0.6]))),
      name: "vector_prelu", inputs: [v])
    outputs.append(try b.add(.dot(cosine: true), name: "cosine", inputs: [vectorPrelu, v]))
    outputs.append(try b.add(.dot(cosine: false), name: "dot", inputs: [v, v]))
    outputs.append(try b.add(.l2Normalize(epsilon: 1e-6), name: "unit", inputs: [v]))
    outputs.append(try b.add(.activation(.unary(UnaryFunction(kind: .power, alpha: 2))), name: "squared", inputs: [v]))
    let table = Constant(shape: [5, 2], values: (0..<10).map { Float($0) / 3 })
    outputs.append(try b.add(.embedding(table: table), name: "embedded", inputs: [tokens]))
    let image = try b.add(.upsampling2D(height: 2, width: 1, mode: .bilinear), name: "bilinear", inputs: [x])
    let pooled = try b.add(.globalPooling2D(kind: .max, keepDims: true), name: "global_max", inputs: [image])
    outputs.append(
      try b.add(
        .elementwise(.power), name: "power",
        inputs: [pooled, try b.add(.constant(.filled(2, shape: [1, 1, 3])), name: "two", inputs: [])]))
    outputs.append(
      try b.add(
        .softmax(axis: 0), name: "softmax0",
        inputs: [try b.add(.permute(order: [2, 0, 1]), name: "permuted", inputs: [x])]))
    return b.build(outputs: outputs)
  }

  @Test func syntheticOperationsAreWritten() throws {
    let graph = try Self.syntheticGraph()
    for precision in [WeightPrecision.float32, .float16] {
      let w = try write(graph, CoreMLWriterOptions(precision: precision))
      try checkStructure(w, "synthetic \(precision)")
      let types = Set(w.program.ops.map(\.type))
      for type in [
        "greater", "select", "real_div", "sub", "minimum", "reduce_sum", "reduce_max", "pad", "slice_by_index",
        "gather", "upsample_bilinear", "prelu", "elu", "rsqrt", "abs", "pow", "softmax", "transpose",
      ] {
        #expect(types.contains(type), "\(precision): \(type)")
      }
      // The embedding's token ids become int32 straight from the float32 input.
      let indices = try #require(
        w.program.ops.first { $0.type == "cast" && $0.outputs[0].type?.dataType == DecodedProgram.int32 })
      #expect(indices.inputs["x"] == ["tokens"])
    }
  }

  /// Writes the synthetic graph's packages and a JSON reference (the reference runtime's outputs for
  /// fixed inputs) for Scripts/eval_mlprogram.py: into `MLPROGRAM_PACKAGES_DIR` when it is set, else into a
  /// temporary folder; either way the files must be there and read back as ML Programs.
  @Test func syntheticPackagesForTheEvaluator() throws {
    let directory =
      try ProcessInfo.processInfo.environment["MLPROGRAM_PACKAGES_DIR"].map { URL(fileURLWithPath: $0) }
      ?? Fixtures.temporaryDirectory()
    let graph = try Self.syntheticGraph()
    var generator = SystemRandomNumberGenerator()
    let inputs = graph.inputs.map { id -> Tensor in
      let shape = graph[id].type.shape
      let count = shape.reduce(1, *)
      let values =
        graph[id].name == "tokens"
        ? [0, 4, 2, 2] : (0..<count).map { _ in Float.random(in: -2...2, using: &generator) }
      return Tensor(shape: shape, values: values)
    }
    let outputs = Interpreter(graph: graph).run(inputs)
    let reference: [String: Any] = [
      "inputs": inputs.map { ["shape": $0.shape, "values": $0.values.map(Double.init)] },
      "outputs": outputs.map { ["shape": $0.shape, "values": $0.values.map(Double.init)] },
    ]
    try JSONSerialization.data(withJSONObject: reference).write(
      to: directory.appendingPathComponent("synthetic.reference.json"))
    for precision in [WeightPrecision.float32, .float16] {
      let package = directory.appendingPathComponent("synthetic_\(precision).mlpackage")
      try MLProgramWriter().encode(graph, options: CoreMLWriterOptions(precision: precision)).write(to: package)
      let spec = try CoreMLSpecReader.read(contentsOf: package)
      #expect(
        spec.modelType == "mlProgram" && spec.inputs.count == graph.inputs.count
          && spec.outputs.count == graph.outputs.count)
    }
    let saved =
      try JSONSerialization.jsonObject(
        with: Data(contentsOf: directory.appendingPathComponent("synthetic.reference.json"))) as? [String: Any]
    #expect((saved?["outputs"] as? [Any])?.count == graph.outputs.count)
  }

  @Test func sameConvolutionPadsLikeTensorFlow() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([7, 8, 1]))
    let y = try b.add(
      .convolution2D(
        Convolution2D(
          kernel: .filled(1, shape: [4, 3, 1, 1]), bias: nil, strides: [2, 2], dilations: [1, 1], padding: .same,
          groups: 1)),
      name: "conv", inputs: [x])
    let w = try write(b.build(outputs: [y]), CoreMLWriterOptions())
    let conv = try #require(w.program.ops.first { $0.type == "conv" })
    // With a stride of 2 TensorFlow's pads follow the size's parity (height: out 4, (4-1)*2+4-7 = 3 → 1 before,
    // 2 after; width: out 4, (4-1)*2+3-8 = 1 → 0 before, 1 after): MIL's `same`, which pads so at run time
    // (extra at the end), not pads computed for this size, so the operation takes any size.
    #expect(w.program.constant(conv.inputs["pad_type"]![0])?.strings == ["same"])
    #expect(conv.inputs["pad"] == nil)
  }

  @Test func sameConvolutionWithStrideOneKeepsExplicitPads() throws {
    var b = GraphBuilder()
    let x = try b.addInput(name: "x", type: TensorType([7, 8, 1]))
    let y = try b.add(
      .convolution2D(
        Convolution2D(
          kernel: .filled(1, shape: [4, 3, 1, 1]), bias: nil, strides: [1, 1], dilations: [1, 1], padding: .same,
          groups: 1)),
      name: "conv", inputs: [x])
    let w = try write(b.build(outputs: [y]), CoreMLWriterOptions())
    let conv = try #require(w.program.ops.first { $0.type == "conv" })
    // Kernel 4 x 3, stride 1: 3 rows of padding (1 before, 2 after) and 2 columns (1, 1), whatever the size.
    #expect(w.program.constant(conv.inputs["pad_type"]![0])?.strings == ["custom"])
    #expect(w.program.constant(try #require(conv.inputs["pad"])[0])?.ints == [1, 2, 1, 1])
  }

  /// Writes every writable fixture as a package (to `MLPROGRAM_PACKAGES_DIR` when set, for
  /// Scripts/check_mlpackage.py) and checks the files a package holds.
  @Test func packagesAreWrittenWithWeights() throws {
    let keep = ProcessInfo.processInfo.environment["MLPROGRAM_PACKAGES_DIR"].map { URL(fileURLWithPath: $0) }
    let directory = try keep ?? Fixtures.temporaryDirectory()
    try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
    defer { if keep == nil { try? FileManager.default.removeItem(at: directory) } }
    let labels = try ClassLabels.load(fromFile: Fixtures.digits.appendingPathComponent("labels.txt").path)
    var written = 0
    for model in Self.models {
      for (precision, target) in [(WeightPrecision.float32, nil), (.float16, nil), (.float16, DeploymentTarget.iOS18)] {
        let options =
          model == "digits"
          ? ConversionOptions(
            inputNames: ["image"], imageInputNames: ["image"], classLabels: labels, imageScale: 1.0 / 255)
          : ConversionOptions()
        let w = try write(model, options, precision: precision, target: target)
        let suffix = target.map { "_\(precision)_\($0.name)" } ?? "_\(precision)"
        let url = directory.appendingPathComponent(
          model.replacingOccurrences(of: "/", with: "_") + suffix + ".mlpackage")
        try w.encoded.write(to: url)
        let contents = try ModelPackage.contents(of: url)
        #expect(
          FileManager.default.contents(atPath: contents.modelURL.path).map { [UInt8]($0) } == w.encoded.specification)
        let weights = try #require(contents.weightsURL).appendingPathComponent("weight.bin")
        #expect(FileManager.default.contents(atPath: weights.path).map { [UInt8]($0) } == w.encoded.weights)
        written += 1
      }
    }
    #expect(written >= 20)
  }
}
