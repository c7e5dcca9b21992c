import CoreMLFormat
import ModelIR

/// A converted detector: the network stage (network and decoding, `DetectorHead`) and Core ML's
/// non-maximum suppression, written as one pipeline, as Vision's object detection takes it.
public struct DetectorPipeline: Sendable, Equatable {
  /// The decoding written after the network.
  public var head: DetectorHead
  /// The suppression stage as written (its labels padded like the confidence columns).
  public var suppression: NonMaximumSuppressionModel.Parameters
  /// The labels of the network's classes, as a user sees them (without padding); nil when none were given.
  public var labels: ClassLabels?

  /// The metadata key Xcode's preview reads, and its value for object detectors.
  public static let previewTypeKey = "com.apple.coreml.model.preview.type"
  public static let previewType = "objectDetector"

  /// The pipeline's stages' names.
  public static let stageNames = ["detector", "nonMaximumSuppression"]

  /// Settles the suppression stage for `head`: labels given, padded to the columns written.
  static func make(head: DetectorHead, options: DetectorOptions, labels: ClassLabels?) throws -> DetectorPipeline {
    if let labels, labels.count != head.classes {
      throw ConversionError.invalidDetector(
        "\(labels.count) labels for a detector of \(head.classes) classes (its output has \(head.classes) class \(head.decoding == .anchorsLast ? "rows" : "columns"))"
      )
    }
    let padding = head.writtenClasses - head.classes
    var written = labels
    switch labels {
    case .strings(let names)?:
      var used = Set(names)
      var extra: [String] = []
      var index = head.classes
      while extra.count < padding {
        let name = "unused_\(index)"
        index += 1
        if used.insert(name).inserted { extra.append(name) }
      }
      written = .strings(names + extra)
    case .integers(let values)?:
      let next = (values.max() ?? -1) + 1
      written = .integers(values + (0..<Int64(padding)).map { next + $0 })
    case nil: break
    }
    var suppression = NonMaximumSuppressionModel.Parameters(
      iouThreshold: options.iouThreshold, confidenceThreshold: options.confidenceThreshold, perClass: !options.agnostic,
      labels: written, boxes: head.anchors, classes: head.writtenClasses, maximumBoxes: options.maximumDetections)
    suppression.confidenceInput = DetectorHead.confidenceName
    suppression.coordinatesInput = DetectorHead.coordinatesName
    suppression.float32Arrays = true
    suppression.featureDescriptions = [
      suppression.iouThresholdInput: "(optional) IoU threshold override (default: \(options.iouThreshold))",
      suppression.confidenceThresholdInput:
        "(optional) Confidence threshold override (default: \(options.confidenceThreshold))",
      suppression.confidenceOutput: "Boxes × Class confidence",
      suppression.coordinatesOutput: "Boxes × [x, y, width, height] (relative to image size)",
    ]
    return DetectorPipeline(head: head, suppression: suppression, labels: labels)
  }

  /// The pipeline of the network stage `network` and the suppression.
  func encode(network: EncodedModel, metadata: ModelMetadata) throws -> EncodedModel {
    var metadata = metadata
    metadata.userDefined[Self.previewTypeKey] = Self.previewType
    metadata.userDefined["IoU threshold"] = String(suppression.iouThreshold)
    metadata.userDefined["Confidence threshold"] = String(suppression.confidenceThreshold)
    let nms = try NonMaximumSuppressionModel.encode(suppression)
    return try PipelineModel.encode([network, nms], names: Self.stageNames, metadata: metadata)
  }
}
