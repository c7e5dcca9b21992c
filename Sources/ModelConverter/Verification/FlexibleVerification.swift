import Foundation
import ModelIR

/// One input size a flexible model was checked at (`ParityReport.shapes`).
public struct ShapeParity: Sendable, Equatable, Codable {
  public struct InputSize: Sendable, Equatable, Codable {
    public var name: String
    /// The source's shape (its own layout, as `--input-shape` gives it).
    public var source: [Int]
    /// The size the converted model was run at, in its declaration's terms (an array's shape, an image's
    /// `[height, width]`).
    public var converted: [Int]
  }
  public var inputs: [InputSize]
  /// Where the inputs came from: random samples, and a reference file when one holds this size.
  public var reference: String?
  public var outputs: [ParityReport.OutputParity]
  public var firstMismatch: LayerParity?
  /// Why the models could not be compared at this size at all (the converted model cannot be read or run
  /// there: a size written into a layer); nil when they were.
  public var failure: String? = nil
  public var passed: Bool
}

/// The checks of a converted model whose inputs accept several sizes: its declared sizes against the
/// ones convert was given, and the model run against the source at each checked size (the range's
/// bounds and an odd size between, every enumerated shape, and each reference file's size).
enum FlexibleVerification {
  /// The converted model's size for a source shape: the declared flexible dimensions take the source's
  /// flexible dimensions' sizes, in order.
  static func convertedSize(of shape: [Int], source: FlexibleInputShape, declared: FlexibleInputShape) -> [Int]? {
    let sourceDims = source.flexibleDimensions
    let declaredDims = declared.flexibleDimensions
    guard sourceDims.count == declaredDims.count, shape.count == source.defaultShape.count else { return nil }
    var size = declared.defaultShape
    for (from, to) in zip(sourceDims, declaredDims) where to < size.count { size[to] = shape[from] }
    return size
  }

  /// Why the declared sizes are not the ones asked for; nil when they are.
  static func difference(input: String, source: FlexibleInputShape, declared: FlexibleInputShape) -> String? {
    let sourceDims = source.flexibleDimensions
    let declaredDims = declared.flexibleDimensions
    let asked = "\(source)"
    guard sourceDims.count == declaredDims.count else {
      return
        "input '\(input)' declares \(declared) (\(declaredDims.count) flexible dimensions); convert was given \(asked) (\(sourceDims.count))"
    }
    switch (source.kind, declared.kind) {
    case (.ranges(let given), .ranges(let written)):
      for (from, to) in zip(sourceDims, declaredDims) where given[from] != written[to] {
        return "input '\(input)' declares \(declared); convert was given \(asked)"
      }
    case (.enumerated(let given), .enumerated(let written)):
      let project = { (shapes: [[Int]], dims: [Int]) in shapes.map { shape in dims.map { shape[$0] } } }
      if project(given, sourceDims) != project(written, declaredDims) {
        return "input '\(input)' declares the sizes \(declared); convert was given \(asked)"
      }
    default:
      return "input '\(input)' declares \(declared); convert was given \(asked)"
    }
    if convertedSize(of: source.defaultShape, source: source, declared: declared) != declared.defaultShape {
      return
        "input '\(input)' declares the default \(declared.defaultShape); convert was given the default \(source.defaultShape)"
    }
    return nil
  }

  /// The flexible inputs of `options` by the source graph's input index (keys are source or new names).
  static func flexibleInputs(_ options: VerificationOptions, source: ImportedSource) throws -> [Int: (
    key: String, shape: FlexibleInputShape
  )] {
    let names = source.graph.inputs.map { source.graph[$0].name }
    var result: [Int: (key: String, shape: FlexibleInputShape)] = [:]
    // A source's own sizes (a flexible Core ML model) are expected of the conversion unless the options say otherwise.
    var given = options.flexibleInputShapes
    for (name, flexible) in source.flexibleInputs where given[name] == nil && options.inputShapes[name] == nil {
      given[name] = flexible
    }
    for (key, shape) in given.sorted(by: { $0.key < $1.key }) where shape.isFlexible {
      guard let index = names.firstIndex(of: key) ?? source.inputSourceNames.firstIndex(of: key) else {
        throw ConversionError.unknownInput(
          name: key, known: source.inputSourceNames.isEmpty ? names : source.inputSourceNames)
      }
      result[index] = (key, shape)
    }
    return result
  }

  /// Whether a reference file holds the flexible inputs at their default sizes.
  static func isAtDefault(_ url: URL, flexible: [Int: (key: String, shape: FlexibleInputShape)]) throws -> Bool {
    let file = try ReferenceFile(url: url)
    return flexible.allSatisfy { index, input in
      file.sampleShape(ofInput: index).map { [1] + $0 == input.shape.defaultShape } ?? true
    }
  }

  /// Each checked size but the default (which the main report covers), and each reference file's size.
  static func check(
    source: ImportedSource, converted url: URL, reader: any ReadBackReading, base: ReadBackModel,
    options: VerificationOptions
  ) throws -> [ShapeParity] {
    let flexible = try flexibleInputs(options, source: source)
    guard !flexible.isEmpty else { return [] }
    let byKey = Dictionary(uniqueKeysWithValues: flexible.map { ($0.value.key, $0.value.shape) })
    var checks: [(shapes: [String: [Int]], reference: URL?)] = FlexibleInputShape.combinedChecks(byKey).dropFirst()
      .map { ($0, nil) }
    // A reference file holding another size is compared at that size.
    for url in options.moreReferences + (options.reference.map { [$0] } ?? []) {
      let file = try ReferenceFile(url: url)
      var shapes: [String: [Int]] = [:]
      for (index, input) in flexible {
        guard let saved = file.sampleShape(ofInput: index) else { continue }
        let shape = [1] + saved
        guard input.shape.allows(shape) else {
          throw VerificationError.invalidReference(
            path: url.path, detail: "its input '\(input.key)' has shape \(shape), which \(input.shape) does not allow")
        }
        shapes[input.key] = shape
      }
      if shapes == byKey.mapValues(\.defaultShape) { continue }  // the main report's size
      if let index = checks.firstIndex(where: { $0.shapes == shapes && $0.reference == nil }) {
        checks[index].reference = url
      } else {
        checks.append((shapes, url))
      }
    }
    let frontend = try Frontends.frontend(for: URL(fileURLWithPath: source.path))
    var results: [ShapeParity] = []
    for check in checks {
      var sourceOptions = SourceOptions(
        inputNames: options.inputNames, outputNames: options.outputNames,
        inputShapes: options.inputShapes.merging(byKey.mapValues(\.defaultShape)) { _, new in new },
        unknownLayersAsCustom: true, architecture: options.architecture)
      for (key, shape) in check.shapes { sourceOptions.inputShapes[key] = shape }
      let sourceAtSize = try frontend.importSource(at: URL(fileURLWithPath: source.path), options: sourceOptions)
      var sizes: [String: [Int]] = [:]
      var inputs: [ShapeParity.InputSize] = []
      for (index, input) in flexible.sorted(by: { $0.key < $1.key }) {
        guard index < base.inputs.count, let shape = check.shapes[input.key] else { continue }
        let name = base.inputs[index].name
        if base.flexibleInputs[name] == nil && base.sequenceInputs.contains(name) {
          // (read at the source's sequence length)
          inputs.append(ShapeParity.InputSize(name: name, source: shape, converted: []))
          continue
        }
        guard let declared = base.flexibleInputs[name],
          let size = convertedSize(of: shape, source: input.shape, declared: declared)
        else {
          throw VerificationError.interfaceMismatch(
            "input '\(name)' does not declare the flexible sizes \(input.shape) convert was given")
        }
        sizes[name] = size
        inputs.append(ShapeParity.InputSize(name: name, source: shape, converted: size))
      }
      var sizeOptions = options
      sizeOptions.sourceDeclarations = sourceAtSize.declaredArrays
      sizeOptions.reference = check.reference
      sizeOptions.samples = check.reference == nil ? max(options.samples, 1) : options.samples
      let report: ParityReport
      do {
        // A model that declares a size but cannot compute it fails at that size; the others are still checked.
        let convertedAtSize = try reader.readBack(at: url, source: sourceAtSize.graph, inputSizes: sizes)
        report = try ParityVerifier.verify(
          source: sourceAtSize.graph, converted: convertedAtSize, sourceName: source.path, convertedName: url.path,
          options: sizeOptions)
      } catch let error as VerificationError {
        throw error
      } catch {
        results.append(
          ShapeParity(
            inputs: inputs, reference: check.reference?.path, outputs: [], firstMismatch: nil,
            failure: "\(error)", passed: false))
        continue
      }
      results.append(
        ShapeParity(
          inputs: inputs, reference: check.reference?.path, outputs: report.outputs,
          firstMismatch: report.firstMismatch,
          passed: report.passed))
    }
    return results
  }
}
