import Foundation
import ImageFormat

/// A self-contained HTML page of an evaluation: no scripts, no network; the confusion matrix is an inline
/// SVG picture and misclassified images are embedded as PNG thumbnails.
public enum EvaluationPage {
  /// Longest side of a thumbnail, in pixels.
  public static let thumbnailSize = 96
  /// Misclassified images shown (the rest are counted).
  public static let maximumThumbnails = 200

  public static func html(_ report: EvaluationReport, folder: LabelledFolder) -> String {
    func escape(_ text: String) -> String {
      text.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        .replacingOccurrences(of: ">", with: "&gt;").replacingOccurrences(of: "\"", with: "&quot;")
    }
    func percent(_ value: Double?) -> String { value.map { String(format: "%.1f%%", $0 * 100) } ?? "–" }
    var page = """
      <!DOCTYPE html>
      <html lang="en"><head><meta charset="utf-8"><title>Evaluation of \(escape(URL(fileURLWithPath: report.model.path).lastPathComponent))</title>
      <style>body{font-family:system-ui,sans-serif;margin:2em;color:#222}table{border-collapse:collapse}td,th{padding:4px 8px;border-bottom:1px solid #ddd;text-align:right}
      th:first-child,td:first-child{text-align:left}.grid{display:flex;flex-wrap:wrap;gap:12px}.card{width:\(thumbnailSize + 24)px;font-size:12px}
      .card img{image-rendering:pixelated;border:1px solid #ccc;max-width:\(thumbnailSize)px}.bad{color:#b00}</style></head><body>
      <h1>Evaluation</h1>
      <p>Model <code>\(escape(report.model.path))</code> on <code>\(escape(report.folder))</code>: \(report.evaluated) images,
      accuracy <b>\(percent(report.model.accuracy))</b>, top-\(report.topK) \(percent(report.model.topKAccuracy)).</p>

      """
    if let other = report.other {
      page +=
        "<p>Against <code>\(escape(other.path))</code>: accuracy <b>\(percent(other.accuracy))</b>, top-\(report.topK) \(percent(other.topKAccuracy)); "
        + "agreement \(percent(report.agreement)), \(report.disagreements.count) images differ.</p>\n"
    }
    if !report.folderLabelsNotInModel.isEmpty {
      page +=
        "<p class=\"bad\">Folders whose label the model does not have (not evaluated): \(escape(report.folderLabelsNotInModel.joined(separator: ", ")))</p>\n"
    }
    if !report.modelLabelsWithoutImages.isEmpty {
      page += "<p>Model labels without images: \(escape(report.modelLabelsWithoutImages.joined(separator: ", ")))</p>\n"
    }
    page += "<h2>Confusion matrix</h2>\n" + confusionSVG(report, escape: escape)
    page +=
      "<h2>Per class</h2>\n<table><tr><th>label</th><th>precision</th><th>recall</th><th>F1</th><th>images</th></tr>\n"
    for row in report.classes {
      page +=
        "<tr><td>\(escape(row.label))</td><td>\(percent(row.precision))</td><td>\(percent(row.recall))</td><td>\(percent(row.f1))</td><td>\(row.support)</td></tr>\n"
    }
    page += "</table>\n<h2>Misclassified images (\(report.misclassified.count))</h2>\n<div class=\"grid\">\n"
    for item in report.misclassified.prefix(maximumThumbnails) {
      let thumbnail = (try? ImageFile.read(contentsOf: folder.url.appendingPathComponent(item.path))).flatMap(
        thumbnailURI)
      page +=
        "<div class=\"card\">" + (thumbnail.map { "<img src=\"\($0)\" alt=\"\(escape(item.path))\">" } ?? "")
        + "<br>\(escape(item.path))<br>true <b>\(escape(item.trueLabel))</b>, predicted <span class=\"bad\">\(escape(item.predicted))</span> "
        + String(format: "%.1f%%", Double(item.probability) * 100) + "</div>\n"
    }
    if report.misclassified.count > maximumThumbnails {
      page += "<p>… and \(report.misclassified.count - maximumThumbnails) more.</p>\n"
    }
    page += "</div>\n</body></html>\n"
    return page
  }

  /// The matrix as squares shaded by the share of each true label's images.
  static func confusionSVG(_ report: EvaluationReport, escape: (String) -> String) -> String {
    let n = report.labels.count
    let cell = max(14, min(48, 640 / max(n, 1)))
    let margin = 12 + 7 * min(24, report.labels.map(\.count).max() ?? 1)
    let size = margin + n * cell + 4
    var svg =
      "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"\(size)\" height=\"\(size)\" font-size=\"11\" font-family=\"sans-serif\">\n"
    for (i, label) in report.labels.enumerated() {
      let text = escape(String(label.prefix(24)))
      svg += "<text x=\"\(margin - 4)\" y=\"\(margin + i * cell + cell / 2 + 4)\" text-anchor=\"end\">\(text)</text>\n"
      svg +=
        "<text transform=\"translate(\(margin + i * cell + cell / 2 + 4),\(margin - 4)) rotate(-90)\">\(text)</text>\n"
    }
    for (i, row) in report.confusion.enumerated() {
      let total = max(row.reduce(0, +), 1)
      for (j, count) in row.enumerated() {
        let share = Double(count) / Double(total)
        let shade = Int(255 - share * 200)
        let color = i == j ? "rgb(\(shade),\(min(255, shade + 40)),\(shade))" : "rgb(255,\(shade),\(shade))"
        svg +=
          "<rect x=\"\(margin + j * cell)\" y=\"\(margin + i * cell)\" width=\"\(cell - 1)\" height=\"\(cell - 1)\" fill=\"\(color)\"><title>true \(escape(report.labels[i])), predicted \(escape(report.labels[j])): \(count)</title></rect>\n"
        if count > 0 && cell >= 18 {
          svg +=
            "<text x=\"\(margin + j * cell + cell / 2)\" y=\"\(margin + i * cell + cell / 2 + 4)\" text-anchor=\"middle\">\(count)</text>\n"
        }
      }
    }
    return svg + "</svg>\n"
  }

  /// A PNG data URI of the image scaled so its longest side is at most `thumbnailSize` (small images
  /// are enlarged by whole pixels in the page instead).
  static func thumbnailURI(_ image: RGBImage) -> String? {
    let scale = min(1, Double(thumbnailSize) / Double(max(image.width, image.height)))
    let width = max(1, Int((Double(image.width) * scale).rounded()))
    let height = max(1, Int((Double(image.height) * scale).rounded()))
    let small = scale < 1 ? ImageScaling.fit(image, width: width, height: height, option: .scaleFill) : image
    return ImageFile.pngData(small).map { "data:image/png;base64," + Data($0).base64EncodedString() }
  }
}
