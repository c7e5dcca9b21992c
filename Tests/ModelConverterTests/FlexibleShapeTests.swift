import CoreMLReader
import Foundation
import ImageFormat
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

@testable import ModelConverter

/// Flexible input shapes (coremltools' `RangeDim` and `EnumeratedShapes`): the options, Core ML's rules,
/// conversions of models whose sizes the source leaves open (Samples/make_flexible_fixtures.py: tf_keras
/// and torchvision/onnxruntime, outputs saved at several sizes) into both formats, and verify at each size.
@Suite struct FlexibleShapeTests {
  static let folder = Fixtures.url("flexible")

  // MARK: Options and rules

  @Test func rangesAreReadAsRangeDimsWithTheirDefaults() throws {
    let shape = try #require(FlexibleInputShape.parse("1,3,8:64,8:*:16"))
    #expect(
      shape.kind
        == .ranges([
          .init(lower: 1, upper: 1), .init(lower: 3, upper: 3), .init(lower: 8, upper: 64), .init(lower: 8, upper: nil),
        ]))
    // The default takes each lower bound unless a third part gives it.
    #expect(shape.defaultShape == [1, 3, 8, 16])
    #expect(shape.isFlexible)
    #expect(shape.flexibleDimensions == [2, 3])
    #expect(shape.description == "1,3,8:64,8:*:16")
    #expect(FlexibleInputShape.parse("1,3,224,224")?.isFlexible == false)
    for bad in ["1,a", "1,2:3:4:5", "1,,2", "", "1,2:x", "1,2:3:y"] {
      #expect(FlexibleInputShape.parse(bad) == nil, "\(bad)")
    }
  }

  /// Core ML's interface validator: sizes from 1, a lower bound not above the upper, the default inside;
  /// enumerated shapes of one rank, none twice (coremltools refuses duplicates before iOS 18 too).
  @Test func whatCoreMLCannotLoadIsNamed() throws {
    #expect(try #require(FlexibleInputShape.parse("1,64:8")).problem?.contains("ends below its start") == true)
    #expect(try #require(FlexibleInputShape.parse("1,8:16:20")).problem?.contains("outside") == true)
    #expect(try #require(FlexibleInputShape.parse("1,0:16")).problem?.contains("start at 1") == true)
    #expect(try #require(FlexibleInputShape.parse("1,8:16")).problem == nil)
    #expect(FlexibleInputShape(enumerated: [[1, 8], [1, 8, 2]]).problem?.contains("different ranks") == true)
    #expect(FlexibleInputShape(enumerated: [[1, 8], [1, 8]]).problem?.contains("twice") == true)
    // Repeating a range is not an enumeration.
    let range = try #require(FlexibleInputShape.parse("1,8:16"))
    #expect(FlexibleInputShape.combining([range, range]) == nil)
    let fixed = [try #require(FlexibleInputShape.parse("1,8")), try #require(FlexibleInputShape.parse("1,16"))]
    #expect(FlexibleInputShape.combining(fixed) == FlexibleInputShape(enumerated: [[1, 8], [1, 16]]))
  }

  /// The default, the lower bounds, the upper bounds (an unbounded one at twice its default) and an odd
  /// size between; every enumerated shape; several inputs side by side.
  @Test func checkedSizesCoverBoundsAndAnOddSizeBetween() throws {
    #expect(
      try #require(FlexibleInputShape.parse("1,16:64:32")).checkedShapes == [[1, 32], [1, 16], [1, 64], [1, 41]])
    #expect(
      try #require(FlexibleInputShape.parse("1,8:*:16")).checkedShapes == [[1, 16], [1, 8], [1, 32], [1, 21]])
    #expect(try #require(FlexibleInputShape.parse("1,4:5")).checkedShapes == [[1, 4], [1, 5]])
    #expect(FlexibleInputShape(enumerated: [[1, 8], [1, 16]]).checkedShapes == [[1, 8], [1, 16]])
    let checks = FlexibleInputShape.combinedChecks([
      "a": try #require(FlexibleInputShape.parse("1,16:64:32")), "b": FlexibleInputShape(enumerated: [[2], [3]]),
    ])
    #expect(checks.map { $0["a"]! } == [[1, 32], [1, 16], [1, 64], [1, 41]])
    #expect(checks.map { $0["b"]! } == [[2], [3], [2], [3]])
  }

  @Test func aClassicNetworkNeedsSpecificationThree() throws {
    var options = ConversionOptions(format: .neuralNetwork, target: DeploymentTarget.parse("iOS11"))
    options.flexibleInputShapes = ["image": try #require(FlexibleInputShape.parse("1,16:64,16:64,3"))]
    #expect(throws: ConversionError.self) {
      try Converter.convert(modelAt: Self.folder.appendingPathComponent("fully_conv.h5"), options: options)
    }
  }

  /// coremltools' rule: one input with enumerated shapes in an ML Program before iOS 18; from iOS 18
  /// several, with as many shapes each (the target is raised to iOS 18 when none is given).
  @Test func severalEnumeratedInputsInAProgramNeedIOS18() throws {
    let two: [String: FlexibleInputShape] = [
      "a": FlexibleInputShape(enumerated: [[1, 8], [1, 16]]), "b": FlexibleInputShape(enumerated: [[1, 4], [1, 6]]),
    ]
    var options = ConversionOptions(format: .mlProgram, target: .iOS17)
    #expect(throws: ConversionError.self) { try FlexibleConversion.checkRules(two, options: &options) }
    options.target = nil
    try FlexibleConversion.checkRules(two, options: &options)
    #expect(options.target == .iOS18)
    var uneven = two
    uneven["b"] = FlexibleInputShape(enumerated: [[1, 4], [1, 6], [1, 7]])
    options.target = nil
    #expect(throws: ConversionError.self) { try FlexibleConversion.checkRules(uneven, options: &options) }
    var classic = ConversionOptions(format: .neuralNetwork)
    try FlexibleConversion.checkRules(two, options: &classic)
  }

  // MARK: Conversions verified at every size

  struct Case: Sendable, CustomStringConvertible {
    var file: String
    var input: String
    var range: String
    var enumerated: [String]
    /// The sizes the fixture script saved the framework's outputs at (file name part), the default first.
    var references: [String]
    var description: String { "\(file) \(range)" }
  }

  static let cases = [
    Case(
      file: "fully_conv", input: "image", range: "1,16:64:32,16:64:32,3", enumerated: ["1,32,32,3", "1,48,40,3"],
      references: ["32x32", "16x16", "64x64", "41x41", "48x40"]),
    Case(
      file: "text_lstm", input: "tokens", range: "1,4:40:10", enumerated: ["1,10", "1,20"],
      references: ["10", "4", "40", "23", "20"]),
    Case(
      file: "conv1d", input: "signal", range: "1,8:64:16,6", enumerated: ["1,16,6", "1,24,6"],
      references: ["16", "8", "64", "37", "24"]),
    Case(
      file: "mobilenet_v3_dynamic", input: "input", range: "1,3,48:128:64,48:128:64",
      enumerated: ["1,3,64,64", "1,3,96,80"], references: ["64x64", "48x48", "128x128", "89x89", "96x80"]),
  ]

  static func source(_ c: Case) -> URL {
    folder.appendingPathComponent(c.file + (c.file.hasPrefix("mobilenet") ? ".onnx" : ".h5"))
  }

  static func reference(_ c: Case, _ size: String) -> URL {
    folder.appendingPathComponent("\(c.file).\(size).reference.h5")
  }

  /// Converts with a range (or the enumeration), checks what the written input declares, and verifies
  /// the model against the source framework's saved outputs at every size the references hold, plus
  /// random samples at every checked size.
  @Test(arguments: cases, [ModelFormat.neuralNetwork, .mlProgram])
  func rangesConvertAndMatchTheSourceAtEverySize(_ c: Case, _ format: ModelFormat) throws {
    let flexible = try #require(FlexibleInputShape.parse(c.range))
    let written = try convertAndVerify(c, flexible: flexible, format: format, references: c.references)
    guard case .ranges(let ranges) = flexible.kind else { return }
    let asked = flexible.flexibleDimensions.map { ranges[$0] }
    // The declared range's flexible dimensions are the ones asked, in order; the others are fixed.
    if format == .neuralNetwork && c.file != "fully_conv" && c.file != "mobilenet_v3_dynamic" {
      // A classic network's sequence axis is outside the declared shape: nothing to declare.
      #expect(written == nil)
      return
    }
    let declared = try #require(written)
    let declaredRanges = try #require(declared.ranges)
    #expect(
      declaredRanges.filter { $0.lower != $0.upper }.map { [$0.lower, $0.upper ?? -1] }
        == asked.map { [$0.lower, $0.upper ?? -1] })
    #expect(declared.allows(declared.defaultSize))
  }

  @Test(arguments: cases, [ModelFormat.neuralNetwork, .mlProgram])
  func enumerationsConvertAndMatchTheSourceAtEachShape(_ c: Case, _ format: ModelFormat) throws {
    let shapes = try c.enumerated.map { try #require(FlexibleInputShape.parse($0)).defaultShape }
    let flexible = FlexibleInputShape(enumerated: shapes)
    let written = try convertAndVerify(
      c, flexible: flexible, format: format, references: [c.references[0], c.references[4]])
    if format == .neuralNetwork && c.file != "fully_conv" && c.file != "mobilenet_v3_dynamic" {
      #expect(written == nil)
      return
    }
    let enumerated = try #require(written?.enumerated)
    #expect(enumerated.count == 2)
    // The flexible dimensions of each declared shape are those of each shape asked, in order.
    let dims = flexible.flexibleDimensions
    let declaredDims = FlexibleInputShape(enumerated: enumerated).flexibleDimensions
    #expect(
      enumerated.map { shape in declaredDims.map { shape[$0] } } == shapes.map { shape in dims.map { shape[$0] } })
  }

  /// Converts, writes, reads the declared sizes back and verifies at every size; returns the written input's
  /// allowed sizes (nil when none are declared).
  func convertAndVerify(_ c: Case, flexible: FlexibleInputShape, format: ModelFormat, references: [String]) throws
    -> CoreMLModelSpec.Feature.AllowedSizes?
  {
    var options = ConversionOptions(format: format)
    options.flexibleInputShapes = [c.input: flexible]
    let model = try Converter.convert(modelAt: Self.source(c), options: options)
    // The written layers were compared at each checked size.
    #expect(model.checkedShapes.count == flexible.checkedShapes.count)
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try model.write(to: url)
    let spec = try CoreMLSpecReader.read(contentsOf: url)
    let allowed = try #require(spec.inputs.first).allowedSizes

    var verification = VerificationOptions(samples: 2, reference: Self.reference(c, references[0]))
    verification.flexibleInputShapes = [c.input: flexible]
    verification.moreReferences = references.dropFirst().map { Self.reference(c, $0) }
    let report = try ParityVerifier.verify(source: Self.source(c), converted: url, options: verification)
    #expect(report.passed, "\(report.interface?.differences ?? []) \(report.shapes?.filter { !$0.passed } ?? [])")
    let shapes = try #require(report.shapes)
    // Every checked size but the default, and every reference's size, each reported.
    #expect(shapes.allSatisfy { $0.passed })
    #expect(shapes.count + 1 >= flexible.checkedShapes.count)
    #expect(
      Set(shapes.compactMap(\.reference)) == Set(references.dropFirst().map { Self.reference(c, $0).path }))
    for shape in shapes where shape.reference != nil {
      #expect(shape.outputs.contains { $0.comparedWith == .referenceOutputs })
    }
    return allowed
  }

  // MARK: predict at the nearest allowed size

  @Test func photosGoToTheAllowedSizeNearestTheirOwn() throws {
    let range = try #require(FlexibleInputShape.parse("16:64:32,16:64:32"))
    #expect(ImageModel.nearestSize(range, height: 20, width: 50) == [20, 50])
    #expect(ImageModel.nearestSize(range, height: 8, width: 500) == [16, 64])
    let sizes = FlexibleInputShape(enumerated: [[32, 32], [48, 40]])
    #expect(ImageModel.nearestSize(sizes, height: 50, width: 41) == [48, 40])
    #expect(ImageModel.nearestSize(sizes, height: 30, width: 30) == [32, 32])
  }

  /// A flexible image model classifies a 50 x 20 photo at 20 x 50 (not at its 32 x 32 default), as the Keras
  /// source does at that size on the same pixels.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func aFlexibleImageModelClassifiesAtTheNearestSize(_ format: ModelFormat) throws {
    let source = Self.folder.appendingPathComponent("fully_conv.h5")
    var options = ConversionOptions(imageInputNames: ["input1"], imageScale: 1 / 255, format: format)
    options.flexibleInputShapes = ["image": try #require(FlexibleInputShape.parse("1,16:64:32,16:64:32,3"))]
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try Converter.convert(modelAt: source, options: options).write(to: url)
    var generator = SplitMix64(seed: 7)
    let photo = RGBImage(
      width: 50, height: 20, pixels: (0..<(50 * 20 * 3)).map { _ in UInt8(truncatingIfNeeded: generator.next()) })
    let model = try ImageModel.load(contentsOf: url)
    #expect(model.allowedSizes != nil)
    let converted = try model.classifyAtNearestSize(photo, cropAndScale: .scaleFill)
    let keras = try ImageModel.load(
      contentsOf: source,
      options: ImageModelOptions(
        preprocessing: ImagePreprocessing(scale: 1 / 255), inputShapes: ["image": [1, 20, 50, 3]]))
    let expected = keras.classify(photo, cropAndScale: .scaleFill)
    #expect(converted.ranked.map(\.label) == expected.ranked.map(\.label))
    for (a, b) in zip(converted.ranked, expected.ranked) {
      #expect(abs(a.probability - b.probability) <= (format == .mlProgram ? 2e-3 : 1e-5))
    }
    // At the default size the scores differ (the model pools other pixels).
    let atDefault = model.classify(photo, cropAndScale: .scaleFill)
    #expect(atDefault.ranked.map(\.probability) != converted.ranked.map(\.probability))
  }

  // MARK: Refusals

  /// A transformer block whose reshapes take the token count as a constant the importer folded: written
  /// for one size, refused by layer name, nothing written.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func aLayerThatBakesASizeIsRefusedByName(_ format: ModelFormat) throws {
    var options = ConversionOptions(format: format)
    options.flexibleInputShapes = ["x": try #require(FlexibleInputShape.parse("1,2:64:8,16"))]
    let url = Fixtures.url("onnx/exporters/dynamo/tiny_block_opset18_dynamic.onnx")
    do {
      _ = try Converter.convert(modelAt: url, options: options)
      Issue.record("converted")
    } catch CoreMLWriterError.fixedSizeLayer(let layer, _) {
      #expect(!layer.isEmpty)
    }
  }

  /// At 32 x 32 the last blocks' feature maps are 1 x 1 and the program leaves out a broadcast it writes at
  /// other sizes: the range is refused there, naming the operation.
  @Test func aRangeWhoseBoundChangesTheProgramIsRefused() throws {
    var options = ConversionOptions(format: .mlProgram)
    options.flexibleInputShapes = ["input": try #require(FlexibleInputShape.parse("1,3,32:128:64,32:128:64"))]
    #expect(throws: CoreMLWriterError.self) {
      try Converter.convert(modelAt: Self.folder.appendingPathComponent("mobilenet_v3_dynamic.onnx"), options: options)
    }
  }

  /// A flexible Core ML source keeps its sizes where every written layer allows them; where one does not
  /// (the transposes and unit axes back to Core ML's layout at its outputs, today), its default size is
  /// converted and a note names the layer; verify then reports the lost sizes.
  @Test(arguments: [ModelFormat.neuralNetwork, .mlProgram])
  func aFlexibleCoreMLSourceKeepsItsSizesOrSaysWhy(_ format: ModelFormat) throws {
    let source = Fixtures.url("flexible_coreml/range.mlpackage")
    let model = try Converter.convert(modelAt: source, options: ConversionOptions(format: format))
    let note = try #require(model.sourceNotes.first { $0.contains("accepts") })
    #expect(note.contains("takes its default size only: layer '"))
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model." + format.fileExtension)
    try model.write(to: url)
    #expect(try CoreMLSpecReader.read(contentsOf: url).inputs.first?.allowedSizes == nil)
    let report = try ParityVerifier.verify(source: source, converted: url, options: VerificationOptions(samples: 1))
    #expect(!report.passed)
    #expect(report.interface?.differences.contains { $0.contains("one size in the model") } == true)
  }

  // MARK: verify's interface check

  /// A flexible model verified with one size, or with other sizes than it declares, fails its interface.
  @Test func sizesOtherThanDeclaredFailTheInterface() throws {
    let c = Self.cases[0]
    var options = ConversionOptions(format: .neuralNetwork)
    options.flexibleInputShapes = [c.input: try #require(FlexibleInputShape.parse(c.range))]
    let model = try Converter.convert(modelAt: Self.source(c), options: options)
    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let url = directory.appendingPathComponent("model.mlmodel")
    try model.write(to: url)

    var fixed = VerificationOptions(samples: 1, inputShapes: [c.input: [1, 32, 32, 3]])
    var report = try ParityVerifier.verify(source: Self.source(c), converted: url, options: fixed)
    #expect(!report.passed)
    #expect(report.interface?.differences.contains { $0.contains("one size in the source") } == true)

    fixed.flexibleInputShapes = [c.input: try #require(FlexibleInputShape.parse("1,16:48:32,16:64:32,3"))]
    report = try ParityVerifier.verify(source: Self.source(c), converted: url, options: fixed)
    #expect(!report.passed)
    #expect(report.interface?.differences.contains { $0.contains("convert was given") } == true)
  }
}

/// coremltools-written flexible models (Samples/make_flexible_coreml.py: a 3x3 convolution, same padding,
/// then ReLU) read and run at each size they allow. A same-padded convolution's output away from the border
/// depends only on the pixels around it, so the model at a small size computes what it computes at a larger
/// one on the same pixels (Apple's convolution semantics, not our expectation of numbers).
@Suite struct FlexibleCoreMLFileTests {
  static let folder = Fixtures.url("flexible_coreml")

  @Test(arguments: [
    ("range.mlpackage", [[1, 3, 8, 8], [1, 3, 64, 64], [1, 3, 33, 17]]),
    ("enumerated.mlmodel", [[1, 3, 16, 16], [1, 3, 32, 24]]),
  ])
  func readsAndRunsAtEachSize(_ name: String, _ sizes: [[Int]]) throws {
    let url = Self.folder.appendingPathComponent(name)
    let spec = try CoreMLSpecReader.read(contentsOf: url)
    let feature = try #require(spec.inputs.first)
    let allowed = try #require(feature.allowedSizes)
    var outputs: [[Int]: Tensor] = [:]
    let largest = sizes.max { $0.reduce(1, *) < $1.reduce(1, *) }!
    var generator = SplitMix64(seed: 38)
    let big = (0..<largest.reduce(1, *)).map { _ in Float(generator.next() % 1000) / 500 - 1 }
    for size in sizes {
      #expect(allowed.allows(size))
      let model = try CoreMLGraphImporter.importModel(
        try spec.atSizes([feature.name: size], path: url.path), path: url.path)
      // The largest input's top-left corner at this size.
      var values: [Float] = []
      for c in 0..<size[1] {
        for y in 0..<size[2] {
          for x in 0..<size[3] { values.append(big[(c * largest[2] + y) * largest[3] + x]) }
        }
      }
      let results = Interpreter(graph: model.graph).run([Tensor(shape: model.inputs[0].shape, values: values)])
      outputs[size] = results[0]
    }
    let full = try #require(outputs[largest])
    for (size, output) in outputs where size != largest {
      // [1, 4, H, W] rows and columns inside the border (the last row and column see padding).
      let channels = output.shape[output.shape.count - 3]
      var worst: Float = 0
      for c in 0..<channels {
        for y in 0..<(size[2] - 1) {
          for x in 0..<(size[3] - 1) {
            let small = output.values[(c * size[2] + y) * size[3] + x]
            let large = full.values[(c * largest[2] + y) * largest[3] + x]
            worst = max(worst, abs(small - large))
          }
        }
      }
      #expect(worst == 0, "\(name) at \(size)")
    }
    // A size the model does not allow is refused.
    #expect(throws: CoreMLReaderError.self) { try spec.atSizes([feature.name: [1, 3, 5, 200]], path: url.path) }
  }
}
