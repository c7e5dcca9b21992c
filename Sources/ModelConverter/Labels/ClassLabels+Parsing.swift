import CoreMLFormat
import Foundation
import ModelFormats

extension ClassLabels {
  /// The largest labels file read: 16 MiB.
  public static let maximumFileBytes = 16 << 20

  /// Labels from a list: all-integer lists become integer labels, as in coremltools.
  public static func parse(_ labels: [String]) throws -> ClassLabels {
    let trimmed = labels.map { $0.trimmingCharacters(in: .whitespaces) }
    guard !trimmed.isEmpty, !trimmed.contains(where: \.isEmpty) else {
      throw ConversionError.invalidLabels("class labels must not be empty")
    }
    let integers = trimmed.compactMap { Int64($0) }
    let labels: ClassLabels = integers.count == trimmed.count ? .integers(integers) : .strings(trimmed)
    // Core ML's label-to-probability dictionary needs distinct keys ("-0" and "0" are one int64 key).
    var seen = Set<String>()
    for label in labels.descriptions where !seen.insert(label).inserted {
      throw ConversionError.invalidLabels("class label '\(label)' appears twice; every class needs its own label")
    }
    return labels
  }

  /// Labels from a file with one label per line, or Teachable Machine's `index label` lines.
  public static func load(fromFile path: String) throws -> ClassLabels {
    guard let kind = PathNode.kind(path) else { throw ConversionError.labelsFileUnreadable(path: path) }
    guard kind == "a regular file" else { throw ConversionError.labelsFileNotRegular(path: path, kind: kind) }
    guard PathNode.size(path) <= maximumFileBytes else {
      throw ConversionError.invalidLabels("\(path): the labels file is larger than \(maximumFileBytes >> 20) MiB")
    }
    guard let text = try? String(contentsOfFile: path, encoding: .utf8) else {
      throw ConversionError.labelsFileUnreadable(path: path)
    }
    let lines = text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter {
      !$0.isEmpty
    }
    guard !lines.isEmpty else { throw ConversionError.invalidLabels("\(path): the labels file has no labels") }
    // Teachable Machine writes "0 With Mask", "1 Without Mask": numbered in order from 0.
    let numbered = lines.enumerated().compactMap { index, line -> String? in
      let parts = line.split(separator: " ", maxSplits: 1)
      guard parts.count == 2, Int(parts[0]) == index else { return nil }
      return String(parts[1])
    }
    return try parse(numbered.count == lines.count ? numbered : lines)
  }
}
