import Foundation

/// Looks inside a model file without converting or running it (see `ModelInspection`).
public enum ModelInspector {
  /// Inspects a model of any registered source format (see `Frontends`),
  /// recognised by content.
  ///
  /// Output shapes need the model imported into the IR; when that fails (an unsupported layer, an input
  /// with unknown dimensions), the rest is still reported and `shapesUnavailable` says why.
  /// - Parameter url: the model file or package.
  /// - Parameter inputShapes: shapes for inputs with unknown dimensions (`[H, W, C]` or `[1, H, W, C]`), by input name.
  public static func inspect(contentsOf url: URL, inputShapes: [String: [Int]] = [:]) throws -> ModelInspection {
    try Frontends.frontend(for: url).inspect(at: url, options: SourceOptions(inputShapes: inputShapes))
  }
}
