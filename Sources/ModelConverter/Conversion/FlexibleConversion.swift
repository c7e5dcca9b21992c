import CoreMLFormat
import Foundation
import ModelIR

/// A conversion whose inputs accept more than one size (`ConversionOptions.flexibleInputShapes`).
///
/// The IR holds one size per value, so the model is converted at each input's default shape and then
/// again at the other sizes that matter (a range's bounds and an odd size between, every enumerated
/// shape: `FlexibleInputShape.checkedShapes`). The written layers must be the same messages at every
/// size (`WrittenModelComparison`): a layer that bakes a size (a reshape to fixed sizes, a slice
/// ending at the default's edge, padding computed for the default's parity) is refused by name. The
/// sizes an ML Program's values take at the checked sizes become unknown dimensions, and the inputs'
/// flexibility is declared on the description dimensions that follow the source's flexible ones.
enum FlexibleConversion {
  static func convert(_ source: ImportedSource, options given: ConversionOptions) throws -> ConvertedModel {
    var options = given
    let graphNames = source.graph.inputs.map { source.graph[$0].name }
    // Each flexible input by its name in the written model (the graph's, before any renaming for the format).
    var flexible: [String: FlexibleInputShape] = [:]
    var sourceKeys: [String: String] = [:]
    for (key, shape) in given.flexibleInputShapes.sorted(by: { $0.key < $1.key }) {
      let name: String
      if graphNames.contains(key) {
        name = key
      } else if let index = source.inputSourceNames.firstIndex(of: key), index < graphNames.count {
        name = graphNames[index]
      } else {
        throw ConversionError.unknownInput(
          name: key, known: source.inputSourceNames.isEmpty ? graphNames : source.inputSourceNames)
      }
      if let problem = shape.problem { throw ConversionError.invalidInputShape(input: key, detail: problem) }
      guard flexible[name] == nil else {
        throw ConversionError.invalidInputShape(input: key, detail: "shapes are given under two names of one input")
      }
      if shape.isFlexible { flexible[name] = shape }
      sourceKeys[name] = key
    }
    try checkRules(
      Dictionary(uniqueKeysWithValues: flexible.map { (sourceKeys[$0.key] ?? $0.key, $0.value) }), options: &options)

    // The default size, then every other checked size with the same precision.
    var model = try Converter.convertAtOneSize(source, options: options)
    var pinned = options
    pinned.precision = model.writerOptions.precision
    pinned.flexibleInputShapes = [:]
    let names = flexible.keys.sorted()
    let checks = FlexibleInputShape.combinedChecks(flexible)
    let url = URL(fileURLWithPath: source.path)
    let frontend = try Frontends.frontend(for: url)
    var features = [try WrittenModelComparison.features(of: model.encoded)]
    var variation = WrittenModelComparison.Variation()
    for check in checks.dropFirst() {
      var sourceOptions = pinned.sourceOptions
      for (name, shape) in check { sourceOptions.inputShapes[sourceKeys[name] ?? name] = shape }
      let other = try frontend.importSource(at: url, options: sourceOptions)
      let written = try Converter.convertAtOneSize(other, options: pinned)
      variation.merge(try WrittenModelComparison.varyingDimensions(model.encoded, written.encoded))
      features.append(try WrittenModelComparison.features(of: written.encoded))
    }

    // The written names (the format may have renamed an input).
    let renamed = Dictionary(model.renames.filter { $0.kind == "input" }.map { ($0.from, $0.to) }) { first, _ in first }
    var declared: [String: FeatureFlexibility] = [:]
    var sequenceNotes: [String] = []
    for name in names {
      let written = renamed[name] ?? name
      let sourceShapes = checks.map { $0[name]! }
      let writtenShapes = try features.map { feature -> [Int] in
        guard let shape = feature.inputs[written] else {
          throw ConversionError.invalidInputShape(input: name, detail: "the written model has no input '\(written)'")
        }
        return shape
      }
      // A classic network's sequence axis is outside its inputs' declared shapes: Core ML takes any
      // length there at run time, so the range cannot be declared and needs no declaration.
      if options.format == .neuralNetwork, sourceShapes.count > 1, Set(writtenShapes).count == 1,
        flexible[name]!.flexibleDimensions.count == 1
      {
        sequenceNotes.append(
          "input '\(written)' takes any length on the classic network's sequence axis at run time; its description (rank-5 inputs) cannot declare \(flexible[name]!): give an ML Program to declare it"
        )
        continue
      }
      declared[written] = try declaration(
        flexible[name]!, sourceShapes: sourceShapes, writtenShapes: writtenShapes,
        isImage: model.writerOptions.imageInputs[written] != nil, input: sourceKeys[name] ?? name)
    }
    let outputs = Set(features.flatMap { Array($0.outputs.keys) }).filter { name in
      Set(features.map { $0.outputs[name] ?? [] }).count > 1
    }
    var writerOptions = model.writerOptions
    writerOptions.flexibility = WrittenFlexibility(
      inputs: declared, unknownDimensions: variation.dimensions, variableOutputs: outputs,
      inferredSizes: try variation.inferredSizes())
    model.encoded = try CoreMLWriters.writer(for: options.format).encode(model.graph, options: writerOptions)
    model.writerOptions = writerOptions
    model.flexibleInputShapes = Dictionary(uniqueKeysWithValues: flexible.map { (renamed[$0.key] ?? $0.key, $0.value) })
    model.checkedShapes = checks.map { check in
      Dictionary(uniqueKeysWithValues: check.map { (renamed[$0.key] ?? $0.key, $0.value) })
    }
    model.sourceNotes += sequenceNotes
    for name in names {
      model.sourceNotes.append(
        "input '\(renamed[name] ?? name)' accepts \(flexible[name]!) (default \(flexible[name]!.defaultShape)); its layers were written alike at \(Set(checks.map { $0[name]! }).count) sizes"
      )
    }
    return model
  }

  /// Core ML's rules for flexible inputs, checked before anything is converted; the oldest target that
  /// allows them chosen when none was given.
  static func checkRules(_ flexible: [String: FlexibleInputShape], options: inout ConversionOptions) throws {
    guard let first = flexible.keys.sorted().first else { return }
    if options.detector != nil {
      throw ConversionError.invalidInputShape(
        input: first,
        detail:
          "a detector's decoding is built for one input size (its anchors follow the size); convert the detector at each size"
      )
    }
    switch options.format {
    case .neuralNetwork:
      if let target = options.target, target.specificationVersion < 3 {
        throw ConversionError.invalidInputShape(
          input: first,
          detail:
            "flexible sizes need specification 3 (iOS 12 / macOS 10.14); the target \(target.name) loads only older ones"
        )
      }
    case .mlProgram:
      // coremltools and Core ML: one enumerated input in an ML Program before iOS 18; from iOS 18 several,
      // each with the same number of shapes.
      let enumerated = flexible.filter {
        if case .enumerated = $0.value.kind { return true } else { return false }
      }.sorted { $0.key < $1.key }
      guard enumerated.count > 1 else { return }
      if let target = options.target, target.specificationVersion < DeploymentTarget.iOS18.specificationVersion {
        throw ConversionError.invalidInputShape(
          input: enumerated[1].key,
          detail:
            "an ML Program takes enumerated shapes on one input before iOS 18 (specification 9); \(enumerated.count) inputs have them and the target is \(target.name)"
        )
      }
      let counts = Set(
        enumerated.map { input -> Int in
          if case .enumerated(let shapes) = input.value.kind { return shapes.count }
          return 0
        })
      guard counts.count == 1 else {
        throw ConversionError.invalidInputShape(
          input: enumerated[1].key,
          detail: "inputs with enumerated shapes in one ML Program each list the same number of shapes (iOS 18's rule)")
      }
      if options.target == nil { options.target = .iOS18 }
    }
  }

  /// The written input's flexibility: its dimensions that change across the checked sizes follow the
  /// source's flexible dimensions in order, with the same sizes; anything else is refused.
  static func declaration(
    _ flexible: FlexibleInputShape, sourceShapes: [[Int]], writtenShapes: [[Int]], isImage: Bool, input: String
  ) throws -> FeatureFlexibility {
    func varying(_ shapes: [[Int]]) -> [Int] {
      guard let first = shapes.first else { return [] }
      return first.indices.filter { index in shapes.contains { $0.count != first.count || $0[index] != first[index] } }
    }
    let sourceDims = varying(sourceShapes)
    let writtenDims = varying(writtenShapes)
    guard writtenShapes.allSatisfy({ $0.count == writtenShapes[0].count }), sourceDims.count == writtenDims.count,
      zip(sourceShapes, writtenShapes).allSatisfy({ source, written in
        zip(sourceDims, writtenDims).allSatisfy { source[$0] == written[$1] }
      })
    else {
      throw ConversionError.invalidInputShape(
        input: input,
        detail:
          "the written input's sizes \(writtenShapes) do not follow the flexible dimensions \(sourceDims) of \(sourceShapes) (a classic neural network declares no batch axis, so a flexible batch cannot be written)"
      )
    }
    let base = writtenShapes[0]
    switch flexible.kind {
    case .enumerated:
      var unique: [[Int]] = []
      for shape in writtenShapes where !unique.contains(shape) { unique.append(shape) }
      return isImage ? .enumeratedImageSizes(unique) : .enumeratedShapes(unique)
    case .ranges(let ranges):
      let written = base.indices.map { index -> FeatureFlexibility.SizeRange in
        if let position = writtenDims.firstIndex(of: index) {
          let range = ranges[sourceDims[position]]
          return FeatureFlexibility.SizeRange(lower: range.lower, upper: range.upper)
        }
        return FeatureFlexibility.SizeRange(lower: base[index], upper: base[index])
      }
      if isImage {
        guard written.count == 2 else {
          throw ConversionError.invalidInputShape(input: input, detail: "an image has a height and a width")
        }
        return .imageSizeRange(height: written[0], width: written[1])
      }
      return .shapeRange(written)
    }
  }
}
