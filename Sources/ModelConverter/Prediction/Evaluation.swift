import Dispatch
import Foundation
import ImageFormat

/// How `Evaluation.run` works through a folder.
public struct EvaluationOptions: Sendable, Equatable {
  public var topK: Int
  public var cropAndScale: CropAndScale
  /// Images classified at once; 0 means every core.
  public var threads: Int

  public init(topK: Int = 3, cropAndScale: CropAndScale = .centerCrop, threads: Int = 0) {
    self.topK = topK
    self.cropAndScale = cropAndScale
    self.threads = threads
  }
}

/// Accuracy of a model on a labelled folder, and optionally its agreement with a second model.
public struct EvaluationReport: Sendable, Equatable, Codable {
  public struct ClassMetrics: Sendable, Equatable, Codable {
    public var label: String
    /// Images of this class in the folder.
    public var support: Int
    /// Nil when the model never predicted the class (or the folder has none of it).
    public var precision: Double?
    public var recall: Double?
    public var f1: Double?
  }

  public struct Prediction: Sendable, Equatable, Codable {
    public var path: String
    public var trueLabel: String
    public var predicted: String
    public var probability: Float
    /// The second model's top label (`--against`), when there is one.
    public var otherPredicted: String?
  }

  public struct LabelMatch: Sendable, Equatable, Codable {
    public var folder: String
    public var model: String
  }

  public struct ModelResult: Sendable, Equatable, Codable {
    public var path: String
    public var kind: String
    public var accuracy: Double
    public var topKAccuracy: Double
  }

  public var folder: String
  public var topK: Int
  public var cropAndScale: CropAndScale
  /// Images classified (those whose label the model knows and that could be read).
  public var evaluated: Int
  public var model: ModelResult
  public var other: ModelResult?
  /// Share of images on which both models give the same top label.
  public var agreement: Double?
  /// Images on which the two models disagree.
  public var disagreements: [Prediction]
  /// The model's labels, the rows and columns of the confusion matrix.
  public var labels: [String]
  /// `confusion[true][predicted]` image counts.
  public var confusion: [[Int]]
  public var classes: [ClassMetrics]
  public var misclassified: [Prediction]
  /// Folder labels the model does not have (their images are not evaluated), and model labels without a folder.
  public var folderLabelsNotInModel: [String]
  public var modelLabelsWithoutImages: [String]
  /// Folders whose name matched a model label only when case is ignored (`Happy` → `happy`).
  public var labelsMatchedIgnoringCase: [LabelMatch]
  /// Images that could not be read, with why.
  public var unreadable: [String: String]
  public var skippedFiles: [String]
  public var imagesPerSecond: Double
  public var threads: Int
}

/// Runs models over a labelled folder.
public enum Evaluation {
  /// Called with (done, total) as images finish, from any thread.
  public typealias Progress = @Sendable (Int, Int) -> Void

  public static func run(
    _ model: ImageModel, on folder: LabelledFolder, against other: ImageModel? = nil,
    options: EvaluationOptions = EvaluationOptions(),
    progress: Progress? = nil
  ) throws -> EvaluationReport {
    // A folder matches its model label exactly, else ignoring case when that picks one label
    // (`Happy` for `happy`); the second model's labels are matched the same way.
    let known = Set(model.labels)
    let folded = Dictionary(grouping: model.labels, by: { $0.lowercased() })
    func modelLabel(_ label: String) -> String? {
      if known.contains(label) { return label }
      if let candidates = folded[label.lowercased()], candidates.count == 1 { return candidates[0] }
      return nil
    }
    let matched = Dictionary(uniqueKeysWithValues: folder.labels.map { ($0, modelLabel($0)) })
    let items = folder.items.compactMap { item -> LabelledFolder.Item? in
      matched[item.label]?.flatMap { LabelledFolder.Item(path: item.path, label: $0) }
    }
    guard !items.isEmpty else {
      throw PredictionError.noImagesForModelLabels(
        folder: folder.url.path, folderLabels: folder.labels, modelLabels: model.labels)
    }
    let threads = threadsFitting(
      options.threads > 0 ? options.threads : ProcessInfo.processInfo.activeProcessorCount, model, other)
    let start = ContinuousClock.now
    let results = classifyAll(
      items.map { folder.url.appendingPathComponent($0.path) }, model, other, options, threads: threads,
      progress: progress)
    let seconds = max((ContinuousClock.now - start).seconds, 1e-9)

    let index = Dictionary(uniqueKeysWithValues: model.labels.enumerated().map { ($1, $0) })
    var confusion = [[Int]](repeating: [Int](repeating: 0, count: model.labels.count), count: model.labels.count)
    var unreadable: [String: String] = [:]
    var misclassified: [EvaluationReport.Prediction] = []
    var disagreements: [EvaluationReport.Prediction] = []
    var (correct, topK, otherCorrect, otherTopK, agree, evaluated) = (0, 0, 0, 0, 0, 0)
    for (item, result) in zip(items, results) {
      switch result {
      case .failure(let error): unreadable[item.path] = "\(error)"
      case .success(let (mine, theirs)):
        evaluated += 1
        let truth = index[item.label]!
        confusion[truth][mine.classIndices[0]] += 1
        let prediction = EvaluationReport.Prediction(
          path: item.path, trueLabel: item.label, predicted: mine.ranked[0].label,
          probability: mine.ranked[0].probability,
          otherPredicted: theirs?.ranked[0].label)
        if mine.ranked[0].label == item.label { correct += 1 } else { misclassified.append(prediction) }
        if mine.top(options.topK).contains(where: { $0.label == item.label }) { topK += 1 }
        if let theirs {
          let theirTop = modelLabel(theirs.ranked[0].label) ?? theirs.ranked[0].label
          if theirTop == item.label { otherCorrect += 1 }
          if theirs.top(options.topK).contains(where: { modelLabel($0.label) == item.label }) { otherTopK += 1 }
          if theirTop == mine.ranked[0].label { agree += 1 } else { disagreements.append(prediction) }
        }
      }
    }
    let n = Double(max(evaluated, 1))
    let classes = model.labels.enumerated().map { i, label -> EvaluationReport.ClassMetrics in
      let support = confusion[i].reduce(0, +)
      let predicted = confusion.reduce(0) { $0 + $1[i] }
      let hits = confusion[i][i]
      let precision = predicted > 0 ? Double(hits) / Double(predicted) : nil
      let recall = support > 0 ? Double(hits) / Double(support) : nil
      var f1: Double?
      if let precision, let recall { f1 = precision + recall > 0 ? 2 * precision * recall / (precision + recall) : 0 }
      return .init(label: label, support: support, precision: precision, recall: recall, f1: f1)
    }
    let withImages = Set(items.map(\.label))
    var caseMatches: [EvaluationReport.LabelMatch] = []
    for label in folder.labels {
      if let target = matched[label] ?? nil, target != label { caseMatches.append(.init(folder: label, model: target)) }
    }
    let notInModel = folder.labels.filter { (matched[$0] ?? nil) == nil }
    return EvaluationReport(
      folder: folder.url.path, topK: options.topK, cropAndScale: options.cropAndScale, evaluated: evaluated,
      model: .init(path: model.path, kind: model.kind, accuracy: Double(correct) / n, topKAccuracy: Double(topK) / n),
      other: other.map {
        .init(path: $0.path, kind: $0.kind, accuracy: Double(otherCorrect) / n, topKAccuracy: Double(otherTopK) / n)
      },
      agreement: other == nil ? nil : Double(agree) / n, disagreements: disagreements, labels: model.labels,
      confusion: confusion,
      classes: classes, misclassified: misclassified, folderLabelsNotInModel: notInModel,
      modelLabelsWithoutImages: model.labels.filter { !withImages.contains($0) },
      labelsMatchedIgnoringCase: caseMatches, unreadable: unreadable, skippedFiles: folder.skipped,
      imagesPerSecond: Double(items.count) / seconds, threads: threads)
  }

  /// Each image's classification, or why it could not be read, in input order, on `threads` threads.
  public static func classify(_ urls: [URL], with model: ImageModel, cropAndScale: CropAndScale, threads: Int)
    -> [Result<Classification, ImageFileError>]
  {
    classifyAll(
      urls, model, nil, EvaluationOptions(cropAndScale: cropAndScale), threads: threadsFitting(threads, model, nil),
      progress: nil
    ).map { $0.map(\.0) }
  }

  /// At most `threads`, and no more images at once than their tensors fit in the memory the process may use.
  static func threadsFitting(_ threads: Int, _ model: ImageModel, _ other: ImageModel?) -> Int {
    let perImage = RuntimeMemory.saturating(model.bytesPerImage.addingReportingOverflow(other?.bytesPerImage ?? 0))
    return max(1, min(threads, RuntimeMemory.defaultLimit / max(perImage, 1)))
  }

  /// Classifies every image on `threads` threads; results in input order.
  static func classifyAll(
    _ urls: [URL], _ model: ImageModel, _ other: ImageModel?, _ options: EvaluationOptions, threads: Int,
    progress: Progress?
  ) -> [Result<(Classification, Classification?), ImageFileError>] {
    let results = SlotBox<Result<(Classification, Classification?), ImageFileError>>(count: urls.count)
    DispatchQueue.concurrentPerform(iterations: min(threads, max(urls.count, 1))) { worker in
      var index = worker
      while index < urls.count {
        do {
          let photo = try ImageFile.read(contentsOf: urls[index])
          // A flexible model runs each photo at the allowed size nearest its own.
          let mine = try model.classifyAtNearestSize(photo, cropAndScale: options.cropAndScale)
          let theirs = try other?.classifyAtNearestSize(photo, cropAndScale: options.cropAndScale)
          let done = results.set(index, .success((mine, theirs)))
          progress?(done, urls.count)
        } catch {
          let failure = (error as? ImageFileError) ?? .unreadable(path: urls[index].path, reason: "\(error)")
          // Stored first: `progress?(...)` would skip evaluating its arguments when there is no progress callback.
          let done = results.set(index, .failure(failure))
          progress?(done, urls.count)
        }
        index += threads
      }
    }
    return results.values.map { $0! }
  }
}

/// Values written by several threads, each to its own slot (images classified, verify's samples).
final class SlotBox<Element>: @unchecked Sendable {
  private var storage: [Element?]
  private let lock = NSLock()
  private var finished = 0

  init(count: Int) { storage = Array(repeating: nil, count: count) }

  /// Stores a value and returns how many are stored.
  @discardableResult
  func set(_ index: Int, _ value: Element) -> Int {
    lock.withLock {
      storage[index] = value
      finished += 1
      return finished
    }
  }

  var values: [Element?] { lock.withLock { storage } }
}
