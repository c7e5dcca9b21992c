import Foundation
import ModelIR
import ReferenceRuntime

/// How a converted detector's final detections agree with the source's (`verify` of a detector
/// pipeline), after its network stage was compared layer by layer with the source network and its
/// decoding (`DetectorHead`): the source's raw outputs decoded and suppressed with the settings convert
/// was given, the converted stage's outputs suppressed as the file's suppression stage documents it.
public struct DetectorParity: Sendable, Equatable, Codable {
  /// Samples whose detections were compared (random and reference inputs).
  public var samples: Int
  public var expectedDetections: Int
  public var convertedDetections: Int
  /// Detections found in both, by class and IoU.
  public var paired: Int
  /// Detections of the source's the converted model lacks, and ones it adds, with confidences at or
  /// above `borderline`.
  public var missing: Int
  public var extra: Int
  /// Missing or extra detections below `borderline`: within the precision's tolerance of the
  /// confidence threshold, where a lower precision may decide either way. Reported, not failed.
  public var borderline: Int
  public var worstIoU: Double
  public var largestConfidenceDifference: Double
  /// The pass rule: pairs overlap by at least `minimumIoU`, confidences differ by at most
  /// `confidenceTolerance`, nothing missing or extra above `borderlineConfidence`.
  public var minimumIoU: Double
  public var confidenceTolerance: Double
  public var borderlineConfidence: Double
  /// The suppression the file declares.
  public var iouThreshold: Double
  public var confidenceThreshold: Double
  public var perClass: Bool
  public var maximumDetections: Int?
  /// The classes the network detects, and the confidence columns written (more when padded).
  public var classes: Int
  public var columns: Int
  /// Whether the thresholds were checked against settings given to verify (else the file's own are used
  /// for both sides).
  public var settingsChecked: Bool
  public var passed: Bool
}

enum DetectorVerification {
  /// Boxes of the same object agree when they overlap this much.
  static let minimumIoU = 0.98

  /// The confidence tolerance for a stage verified under `report`'s rule: the relative RMS bound of a
  /// float16 or quantized model, 1e-3 in float32 (confidences are at most 1).
  static func confidenceTolerance(_ report: ParityReport) -> Double {
    report.maximumRelativeRMSError.map { Double($0) } ?? 1e-3
  }

  /// The source network with the decoding the converted stage was written with, its confidence padded
  /// to the stage's columns.
  static func expectedStage(
    source: Graph, converted: ReadBackModel, stage: ReadBackModel.DetectorStage, settings: DetectorOptions?,
    path: String
  ) throws -> (graph: Graph, head: DetectorHead) {
    let graph = converted.graph
    guard
      let confidence = graph.outputs.first(where: { graph[$0].name == stage.confidenceInput }),
      let columns = graph[confidence].type.shape.last
    else {
      throw VerificationError.interfaceMismatch(
        "\(path): the suppression reads '\(stage.confidenceInput)', which the network stage does not output")
    }
    var expected = source
    do {
      let head = try DetectorHead.append(to: &expected, decoding: settings?.decoding, classesWritten: { _ in columns })
      return (expected, head)
    } catch let failure as DetectorHead.Failure {
      throw VerificationError.interfaceMismatch("the source is \(failure)")
    }
  }

  /// What differs between the pipeline's interface and settings and what the conversion should have made.
  static func differences(
    stage: ReadBackModel.DetectorStage, converted: ReadBackModel, head: DetectorHead, settings: DetectorOptions?,
    expectedLabels: [String]?
  ) -> [String] {
    var found: [String] = []
    let thresholdInputs = [stage.iouThresholdInput, stage.confidenceThresholdInput].filter { !$0.isEmpty }
    let networkInputs = converted.graph.inputs.map { converted.graph[$0].name }
    let declared = stage.inputs.map(\.name)
    let read = networkInputs + thresholdInputs
    for name in declared where !read.contains(name) {
      let optional = stage.inputs.first { $0.name == name }?.isOptional ?? false
      found.append(
        "the pipeline's input '\(name)' is read by no stage (its suppression lists no such input, so its stored thresholds hold)"
          + (optional ? "" : "; it is required, so an app must supply a value that changes nothing"))
    }
    if declared.filter(read.contains) != read {
      found.append("the pipeline's inputs are \(declared), expected \(read)")
    }
    for input in stage.inputs where thresholdInputs.contains(input.name) {
      if input.kind != .double || !input.isOptional {
        found.append("threshold input '\(input.name)' is not an optional double")
      }
    }
    let outputs = stage.outputs.map(\.name)
    if outputs != [stage.confidenceOutput, stage.coordinatesOutput] {
      found.append(
        "the pipeline's outputs are \(outputs), expected [\(stage.confidenceOutput), \(stage.coordinatesOutput)]")
    }
    let labels = stage.labels
    if !labels.isEmpty && labels.count != head.writtenClasses {
      found.append("\(labels.count) labels for \(head.writtenClasses) confidence columns")
    }
    if let expectedLabels, Array(labels.prefix(head.classes)) != expectedLabels {
      found.append("labels \(Array(labels.prefix(head.classes))), expected \(expectedLabels)")
    }
    if let settings {
      let nms = stage.suppression
      if nms.iouThreshold != settings.iouThreshold {
        found.append("IoU threshold \(nms.iouThreshold), expected \(settings.iouThreshold)")
      }
      if nms.confidenceThreshold != settings.confidenceThreshold {
        found.append("confidence threshold \(nms.confidenceThreshold), expected \(settings.confidenceThreshold)")
      }
      if nms.perClass == settings.agnostic {
        found.append(
          nms.perClass
            ? "suppression per class, expected across classes" : "suppression across classes, expected per class")
      }
      if nms.maximumBoxes != settings.maximumDetections {
        found.append(
          "at most \(nms.maximumBoxes.map(String.init) ?? "any number of") detections, expected \(settings.maximumDetections.map(String.init) ?? "no limit")"
        )
      }
    }
    return found
  }

  /// Runs both sides on the samples of `inputs` and compares their detections.
  static func compare(
    comparison: Comparison, samples: [([Tensor], [Tensor])], stage: ReadBackModel.DetectorStage, head: DetectorHead,
    settings: DetectorOptions?, tolerance: Double
  ) throws -> DetectorParity {
    let file = stage.suppression
    let expectedSuppression =
      settings.map {
        NonMaximumSuppression(
          iouThreshold: $0.iouThreshold, confidenceThreshold: $0.confidenceThreshold, perClass: !$0.agnostic,
          maximumBoxes: $0.maximumDetections)
      }
      ?? NonMaximumSuppression(
        iouThreshold: file.iouThreshold, confidenceThreshold: file.confidenceThreshold, perClass: file.perClass,
        maximumBoxes: file.maximumBoxes)
    let borderline = expectedSuppression.confidenceThreshold + tolerance
    var parity = DetectorParity(
      samples: samples.count, expectedDetections: 0, convertedDetections: 0, paired: 0, missing: 0, extra: 0,
      borderline: 0, worstIoU: 1, largestConfidenceDifference: 0, minimumIoU: minimumIoU,
      confidenceTolerance: tolerance, borderlineConfidence: borderline, iouThreshold: file.iouThreshold,
      confidenceThreshold: file.confidenceThreshold, perClass: file.perClass, maximumDetections: file.maximumBoxes,
      classes: head.classes, columns: head.writtenClasses, settingsChecked: settings != nil, passed: true)
    let columns = head.writtenClasses
    for (sourceInputs, convertedInputs) in samples {
      let run = comparison.run(sourceInputs: sourceInputs, convertedInputs: convertedInputs)
      guard run.sourceOutputs.count == 2, run.convertedOutputs.count == 2,
        run.sourceOutputs[0].values.count == run.convertedOutputs[0].values.count,
        run.sourceOutputs[1].values.count == run.convertedOutputs[1].values.count
      else {
        throw VerificationError.interfaceMismatch(
          "the network stage's outputs hold \(run.convertedOutputs.map(\.values.count)) values, the source's decoding \(run.sourceOutputs.map(\.values.count))"
        )
      }
      func doubles(_ tensor: Tensor) -> [Double] { tensor.values.map(Double.init) }
      let expected = try Detection.detections(
        confidence: doubles(run.sourceOutputs[0]), coordinates: doubles(run.sourceOutputs[1]), classes: columns,
        suppression: expectedSuppression)
      let actual = try Detection.detections(
        confidence: doubles(run.convertedOutputs[0]), coordinates: doubles(run.convertedOutputs[1]), classes: columns,
        suppression: file)
      let agreement = DetectionAgreement(
        expected: expected, actual: actual, minimumIoU: minimumIoU, borderline: borderline)
      parity.expectedDetections += agreement.expectedCount
      parity.convertedDetections += agreement.actualCount
      parity.paired += agreement.paired
      parity.missing += agreement.missing
      parity.extra += agreement.extra
      parity.borderline += agreement.borderline
      parity.worstIoU = min(parity.worstIoU, agreement.worstIoU)
      parity.largestConfidenceDifference = max(
        parity.largestConfidenceDifference, agreement.largestConfidenceDifference)
    }
    parity.passed = parity.missing == 0 && parity.extra == 0 && parity.largestConfidenceDifference <= tolerance
    return parity
  }
}
