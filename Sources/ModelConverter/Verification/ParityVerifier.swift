import Foundation
import ModelIR
import ReferenceRuntime

/// Runs a source model and its conversion on the same inputs and compares what they compute, and checks
/// that the conversion presents the interface the source declares (`InterfaceParity`).
///
/// Both models run in our float32 reference runtime: the source graph as its frontend reads it, the
/// converted model as the reader of its format reads it back (`ReadBackReading`, written from the
/// format's documentation, not from our writer), so a wrong kernel layout, padding, label order or image
/// preprocessing in the written file shows up as a difference.
public enum ParityVerifier {
  /// Compares the source model at `source` with the converted model at `converted` (any registered formats).
  public static func verify(source: URL, converted: URL, options: VerificationOptions = VerificationOptions()) throws
    -> ParityReport
  {
    let frontend = try Frontends.frontend(for: source)
    // Unknown layers import as custom layers, so that verify says it cannot run them rather than that it cannot read them.
    let sourceOptions = SourceOptions(
      inputNames: options.inputNames, outputNames: options.outputNames,
      inputShapes: options.inputShapes.merging(options.flexibleInputShapes.mapValues(\.defaultShape)) { _, new in new },
      unknownLayersAsCustom: true, architecture: options.architecture)
    return try verify(
      source: frontend.importSource(at: source, options: sourceOptions), converted: converted, options: options)
  }

  /// Compares a source already read into the IR with the converted model at `converted` (`convert --verify`
  /// reads its source once for both). What the source declares (its image preprocessing, its labels) is
  /// what the converted model is expected to keep, unless the options say otherwise.
  public static func verify(source: ImportedSource, converted: URL, options: VerificationOptions) throws -> ParityReport
  {
    guard let reader = try Frontends.frontend(for: converted) as? any ReadBackReading else {
      throw VerificationError.notVerifiable(
        path: converted.path, format: try Frontends.frontend(for: converted).displayName)
    }
    let convertedModel = try reader.readBack(at: converted, source: source.graph)
    var options = options
    // A source's own image inputs are each expected to keep their own preprocessing.
    if options.expectedPreprocessing == nil, options.expectedPreprocessingByInput.isEmpty {
      options.expectedPreprocessingByInput = source.imageInputs
    }
    if options.expectedLabels == nil, let classifier = source.classifier {
      options.expectedLabels = classifier.labels.descriptions
    }
    options.sourceTolerance = source.tolerance
    options.sourceDeclarations = source.declaredArrays
    options.sourceImageOutputs = Set(source.imageOutputs.keys)
    options.sourceImageInputs = Set(source.imageInputs.keys)
    options.referenceInputsAsDeclared = source.referenceInputsAsDeclared
    options.sourceStates = source.streamingStates
    if let stage = convertedModel.detector {
      return try verifyDetector(
        source: source, converted: convertedModel, stage: stage, path: converted.path, options: options)
    }
    // A flexible model: its declared sizes are those convert was given (the source's interface expects
    // them), and a reference file holding another size is compared at that size.
    var expected = source.interface
    var sizeDifferences: [String] = []
    var sequenceNotes: [String] = []
    let flexible = try FlexibleVerification.flexibleInputs(options, source: source)
    for (index, input) in flexible where index < convertedModel.inputs.count && index < expected.inputs.count {
      let name = convertedModel.inputs[index].name
      guard let declared = convertedModel.flexibleInputs[name] else {
        // (sizes the source itself declares are compared by the interface check)
        if expected.inputs[index].flexibility != nil { continue }
        if convertedModel.sequenceInputs.contains(name), input.shape.flexibleDimensions.count == 1 {
          sequenceNotes.append(
            "input '\(name)': the classic network takes any sequence length at run time (not declared); checked at each size"
          )
          continue
        }
        sizeDifferences.append(
          "input '\(name)' declares one size; convert was given \(input.shape) (give verify the shapes convert was given)"
        )
        continue
      }
      if let difference = FlexibleVerification.difference(input: name, source: input.shape, declared: declared) {
        sizeDifferences.append(difference)
      } else if let written = convertedModel.declaredInputs.first(where: { $0.name == name }) {
        expected.inputs[index].flexibility = written.flexibility
      }
    }
    var mainOptions = options
    if !flexible.isEmpty, let reference = options.reference,
      !(try FlexibleVerification.isAtDefault(reference, flexible: flexible))
    {
      mainOptions.reference = nil
    }
    // Sizes the model declares that verify was not given cannot be checked.
    for (index, input) in convertedModel.inputs.enumerated()
    where flexible[index] == nil && index < expected.inputs.count && expected.inputs[index].flexibility == nil {
      if let declared = convertedModel.flexibleInputs[input.name] {
        sizeDifferences.append(
          "input '\(input.name)' accepts \(declared) in the model, one size in the source (give verify the shapes convert was given to check them)"
        )
      }
    }
    var interface = InterfaceParity.check(source: expected, converted: convertedModel)
    interface.differences += sizeDifferences
    interface.notes += sequenceNotes
    interface.passed = interface.differences.isEmpty
    // Another number of inputs or outputs cannot be compared at all: the differences say why.
    if !interface.passed,
      source.graph.inputs.count != convertedModel.inputs.count
        || source.graph.outputs.count != convertedModel.graph.outputs.count
    {
      throw VerificationError.interfaceMismatch(interface.differences.joined(separator: "; "))
    }
    var report = try verify(
      source: source.graph, converted: convertedModel, sourceName: source.path, convertedName: converted.path,
      options: mainOptions)
    report.interface = interface
    // (other sizes are checked when the declared ones are those expected)
    if !flexible.isEmpty && interface.passed {
      report.shapes = try FlexibleVerification.check(
        source: source, converted: converted, reader: reader, base: convertedModel, options: options)
    }
    report.passed = report.passed && interface.passed && (report.shapes ?? []).allSatisfy(\.passed)
    return report
  }

  /// A detector pipeline: its network stage against the source network with the same decoding, layer by
  /// layer as any conversion; its interface and suppression settings against what convert was asked for;
  /// then the final detections of both on every sample (`DetectorParity`).
  static func verifyDetector(
    source: ImportedSource, converted: ReadBackModel, stage: ReadBackModel.DetectorStage, path: String,
    options: VerificationOptions
  ) throws -> ParityReport {
    let settings = options.detector
    let (expected, head) = try DetectorVerification.expectedStage(
      source: source.graph, converted: converted, stage: stage, settings: settings, path: path)
    // The network stage presents the source's inputs and the decoded arrays.
    var stageInterface = source.interface
    // (its outputs are internal to the pipeline: named as the suppression reads them)
    stageInterface.outputs = zip(expected.outputs, [stage.confidenceInput, stage.coordinatesInput]).map {
      InterfaceFeature(name: $1, kind: .array, shape: expected[$0].type.shape, detail: "float32")
    }
    var interface = InterfaceParity.check(source: stageInterface, converted: converted)
    let labels =
      options.expectedLabels ?? source.metadata.userDefined["names"].flatMap(DetectorClassNames.parse)
    interface.differences += DetectorVerification.differences(
      stage: stage, converted: converted, head: head, settings: settings, expectedLabels: labels)
    interface.passed = interface.differences.isEmpty
    if source.graph.inputs.count != converted.inputs.count {
      throw VerificationError.interfaceMismatch(interface.differences.joined(separator: "; "))
    }
    // The stage as any conversion (a reference file holds the raw outputs: it is used for detections only).
    var stageOptions = options
    stageOptions.reference = nil
    stageOptions.expectedLabels = nil
    var report = try verify(
      source: expected, converted: converted, sourceName: source.path, convertedName: path, options: stageOptions)
    let comparison = try Comparison(source: expected, converted: converted, options: stageOptions)
    var generator = SplitMix64(seed: options.seed)
    var samples = (0..<options.samples).map { _ in comparison.randomInputs(&generator) }
    if let reference = options.reference {
      let file = try ReferenceFile(url: reference)
      guard file.inputCount == source.graph.inputs.count else {
        throw VerificationError.invalidReference(
          path: reference.path, detail: "holds \(file.inputCount) inputs; the model has \(source.graph.inputs.count)")
      }
      for sample in 0..<file.sampleCount { samples.append(try comparison.referenceInputs(file, sample: sample)) }
    }
    let detector = try DetectorVerification.compare(
      comparison: comparison, samples: samples, stage: stage, head: head, settings: settings,
      tolerance: DetectorVerification.confidenceTolerance(report))
    report.detector = detector
    report.interface = interface
    report.passed = report.passed && interface.passed && detector.passed
    return report
  }

  /// Compares an IR graph with a converted model read back.
  public static func verify(
    source: Graph, converted: ReadBackModel, sourceName: String, convertedName: String, options: VerificationOptions
  ) throws -> ParityReport {
    var seen = Set<String>()
    let notRunnable =
      (Interpreter.unsupportedOperations(in: source) + Interpreter.unsupportedOperations(in: converted.graph)).filter {
        seen.insert($0).inserted
      }
    guard notRunnable.isEmpty else { throw VerificationError.notRunnable(notRunnable) }
    var comparison = try Comparison(source: source, converted: converted, options: options)
    let threads = options.threads > 0 ? options.threads : ProcessInfo.processInfo.activeProcessorCount
    let memory = try VerificationMemory.plan(
      source: source, converted: converted.graph, convertedPath: convertedName,
      kernelBytes: RuntimeMemory.saturating(
        comparison.sourceRuntime.kernelBytesPerThread.addingReportingOverflow(
          comparison.convertedRuntime.kernelBytesPerThread)),
      comparesLayersLocally: comparison.comparesLayersLocally, samples: max(options.samples, 1),
      threads: threads, limit: options.memoryLimit ?? RuntimeMemory.defaultLimit)
    // The inputs are drawn in sample order, so the report is the same however many run at once.
    var generator = SplitMix64(seed: options.seed)
    try comparison.compareRandom(count: options.samples, threads: memory.samplesAtOnce) { $0.randomInputs(&generator) }
    var expectedLabels = options.expectedLabels
    let states = options.sourceStates
    let referenceFile = try options.reference.map { try ReferenceFile(url: $0) }
    if let file = referenceFile, !states.isEmpty, file.inputCount == source.inputs.count - states.count,
      file.outputCount == source.outputs.count - states.count
    {
      // A stream: the saved steps in order, each model carrying its own states from its previous step's
      // outputs, starting from the source's initial values.
      try comparison.compareStream(file, states: states)
      if expectedLabels == nil && !converted.classLabels.isEmpty { expectedLabels = file.labels }
    } else if let reference = options.reference, let file = referenceFile {
      guard file.inputCount == source.inputs.count, file.outputCount == source.outputs.count else {
        throw VerificationError.invalidReference(
          path: reference.path,
          detail:
            "holds \(file.inputCount) inputs and \(file.outputCount) outputs; the model has \(source.inputs.count) and \(source.outputs.count)"
        )
      }
      // The reference's labels describe the source model's outputs; they are expected only of a classifier.
      if expectedLabels == nil && !converted.classLabels.isEmpty { expectedLabels = file.labels }
      for sample in 0..<file.sampleCount {
        let (sourceInputs, convertedInputs) = try comparison.referenceInputs(file, sample: sample)
        try comparison.compare(
          sourceInputs: sourceInputs, convertedInputs: convertedInputs, expected: file.outputs(sample: sample))
      }
    }
    let outputs = comparison.outputReports()
    let layers = comparison.layerReports()
    let classifier = comparison.classifierReport(expectedLabels: expectedLabels, k: options.topK)
    var preprocessing = comparison.preprocessing
    // Advice about the scale a network was trained on is for inputs the conversion made images of, not
    // for images the source itself declares with their preprocessing.
    for (index, plan) in comparison.plans.enumerated()
    where plan.input.image != nil && !options.sourceImageInputs.contains(plan.input.name) {
      guard let row = preprocessing.firstIndex(where: { $0.input == plan.input.name }),
        let image = plan.sourcePreprocessing,
        let space = plan.input.colorSpace
      else { continue }
      preprocessing[row].warnings = PreprocessingAdvisor.warnings(
        graph: source, input: source.inputs[index], preprocessing: image, colorSpace: space)
    }
    // What the format's runtime would refuse or compute differently from our reading (for Core ML, Apple's
    // documented limits, `Schemas/NeuralNetwork.proto` [rule ...] notes) fails the check, whatever the numbers say.
    let violations = converted.violations
    let ran = max(comparison.runs, 1)
    let tolerance = comparison.tolerance
    return ParityReport(
      source: sourceName, converted: convertedName, samples: options.samples, seed: options.seed,
      absoluteTolerance: tolerance.absolute, relativeTolerance: tolerance.relative, toleranceBasis: tolerance.basis,
      maximumRelativeRMSError: tolerance.maximumRelativeRMS, outputs: outputs,
      layers: layers, layersFromSourceValues: comparison.comparesLayersLocally,
      firstMismatch: layers.first { !$0.passed }, preprocessing: preprocessing, violations: violations,
      classifier: classifier, interface: nil,
      timing: .init(
        sourceSecondsPerSample: comparison.sourceSeconds / Double(ran),
        convertedSecondsPerSample: comparison.convertedSeconds / Double(ran)),
      memory: memory,
      passed: violations.isEmpty && outputs.allSatisfy(\.passed) && layers.allSatisfy(\.passed)
        && preprocessing.allSatisfy(\.passed) && (classifier?.passed ?? true))
  }
}
