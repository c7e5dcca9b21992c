import Foundation
import ModelFormats

/// An `.mlpackage` folder: `Manifest.json`, the model specification and (for an ML Program) its weights.
///
/// ```
/// Name.mlpackage/
///   Manifest.json
///   Data/com.apple.CoreML/model.mlmodel
///   Data/com.apple.CoreML/weights/weight.bin
/// ```
public enum ModelPackage {
  public static let author = "com.apple.CoreML"
  public static let modelPath = "com.apple.CoreML/model.mlmodel"
  public static let weightsPath = "com.apple.CoreML/weights"
  public static let weightFileName = "weight.bin"
  /// How a program names its weight file: `@model_path` is the folder holding `model.mlmodel`.
  public static let programWeightFileName = "@model_path/weights/weight.bin"

  /// Why a package could not be read.
  public struct FormatError: Error, Equatable, CustomStringConvertible {
    public var path: String
    public var detail: String
    public var description: String { "\(path): \(detail)" }
  }

  /// What a package holds, as read from its manifest.
  public struct Contents: Sendable, Equatable {
    /// The root model specification (`model.mlmodel`).
    public var modelURL: URL
    /// The folder holding `weight.bin`, when the manifest lists one.
    public var weightsURL: URL?
  }

  /// Reads `Manifest.json` and finds the root model: the item named by `rootModelIdentifier`.
  public static func contents(of package: URL) throws -> Contents {
    let manifestURL = package.appendingPathComponent("Manifest.json")
    let data: Data
    do { data = Data(try RangedFile.bytes(manifestURL.path, limit: 1 << 20)) } catch let failure as RangedFile.Failure {
      throw FormatError(
        path: package.path, detail: "has no readable Manifest.json (\(failure.detail)); is it an .mlpackage folder?")
    }
    guard let manifest = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else {
      throw FormatError(path: manifestURL.path, detail: "is not a JSON object")
    }
    guard let version = manifest["fileFormatVersion"] as? String else {
      throw FormatError(path: manifestURL.path, detail: "has no fileFormatVersion")
    }
    guard version.split(separator: ".").first == "1" else {
      throw FormatError(
        path: manifestURL.path, detail: "fileFormatVersion \(version) is newer than 1.x, the version this reader knows")
    }
    guard let entries = manifest["itemInfoEntries"] as? [String: Any],
      let root = manifest["rootModelIdentifier"] as? String
    else {
      throw FormatError(path: manifestURL.path, detail: "has no itemInfoEntries or rootModelIdentifier")
    }
    func item(_ id: String) throws -> URL {
      guard let entry = entries[id] as? [String: Any], let path = entry["path"] as? String,
        ["author", "description", "name"].allSatisfy({ entry[$0] is String })
      else { throw FormatError(path: manifestURL.path, detail: "item \(id) lacks author, description, name or path") }
      // Items live under Data/; a path leaving it is refused.
      let parts = path.split(separator: "/")
      guard !path.hasPrefix("/"), !parts.contains(".."), !parts.isEmpty else {
        throw FormatError(
          path: manifestURL.path, detail: "item \(id) has path '\(path)' outside the package's Data folder")
      }
      return package.appendingPathComponent("Data").appendingPathComponent(path)
    }
    guard entries[root] != nil else {
      throw FormatError(path: manifestURL.path, detail: "rootModelIdentifier \(root) names no item")
    }
    let model = try item(root)
    var weights: URL?
    for id in entries.keys.sorted() where id != root {
      let url = try item(id)
      if url.lastPathComponent == "weights" { weights = url }
    }
    let weightsFolder = weights ?? model.deletingLastPathComponent().appendingPathComponent("weights")
    // Everything the package holds stays inside it: a symbolic link out of the package (model.mlmodel to
    // another model, weight.bin to /etc/passwd, Data to /) is refused, as for ONNX external data.
    let packageRoot = SourceProtection.resolved(package.path)
    for url in [model, weightsFolder, weightsFolder.appendingPathComponent(weightFileName)] {
      let real = SourceProtection.resolved(url.path)
      guard real.hasPrefix(packageRoot == "/" ? "/" : packageRoot + "/") else {
        throw FormatError(
          path: package.path,
          detail:
            "\(url.path.dropFirst(package.path.count + 1)) resolves to \(real), outside the package (a symbolic link?)")
      }
    }
    return Contents(modelURL: model, weightsURL: weightsFolder)
  }

  /// The manifest coremltools writes: the model item and, when there are weights, the weights folder item.
  package static func manifest(hasWeights: Bool) throws -> Data {
    let modelID = UUID().uuidString
    let weightsID = UUID().uuidString
    var entries: [String: [String: String]] = [
      modelID: [
        "author": author, "description": "CoreML Model Specification", "name": "model.mlmodel", "path": modelPath,
      ]
    ]
    if hasWeights {
      entries[weightsID] = [
        "author": author, "description": "CoreML Model Weights", "name": "weights", "path": weightsPath,
      ]
    }
    let manifest: [String: Any] = [
      "fileFormatVersion": "1.0.0", "itemInfoEntries": entries, "rootModelIdentifier": modelID,
    ]
    return try JSONSerialization.data(withJSONObject: manifest, options: [.prettyPrinted, .sortedKeys])
  }

  /// Writes a package to `url`: built in a hidden temporary folder beside it, then renamed into place,
  /// so a failure leaves no half package and an existing package is replaced only by a complete one.
  ///
  /// An existing `url` must be a package folder (it has a `Manifest.json`) or absent; anything else is refused.
  public static func write(model: [UInt8], weights: [UInt8]?, to url: URL) throws {
    try write(
      model: { try model.withUnsafeBytes($0.write) },
      weights: weights.map { bytes in { try bytes.withUnsafeBytes($0.write) } }, to: url)
  }

  /// Writes a package like `write(model:weights:to:)`, each file's bytes sent by its producer as they
  /// are made (`weights` nil: no weight file).
  public static func write(
    model: (AtomicFile.Output) throws -> Void, weights: ((AtomicFile.Output) throws -> Void)?, to url: URL
  ) throws {
    let fileManager = FileManager.default
    if let existing = AtomicFile.nodeKind(url.path) {
      guard existing.kind == "a folder",
        fileManager.fileExists(atPath: url.appendingPathComponent("Manifest.json").path)
      else {
        throw AtomicFile.DestinationError.notARegularFile(
          path: url.path, kind: existing.kind == "a folder" ? "a folder that is not an .mlpackage" : existing.kind)
      }
    }
    let directory = url.deletingLastPathComponent()
    let staging = directory.appendingPathComponent(".\(url.lastPathComponent).\(UUID().uuidString).tmp")
    do {
      let data = staging.appendingPathComponent("Data").appendingPathComponent("com.apple.CoreML")
      try fileManager.createDirectory(at: data, withIntermediateDirectories: true)
      try manifest(hasWeights: weights != nil).write(to: staging.appendingPathComponent("Manifest.json"))
      try AtomicFile.write(to: data.appendingPathComponent("model.mlmodel"), producing: model)
      if let weights {
        let folder = data.appendingPathComponent("weights")
        try fileManager.createDirectory(at: folder, withIntermediateDirectories: true)
        try AtomicFile.write(to: folder.appendingPathComponent(weightFileName), producing: weights)
      }
      try install(staging, at: url)
    } catch {
      try? fileManager.removeItem(at: staging)
      throw error
    }
  }

  /// Moves a finished folder to `url`. An existing folder is swapped out first and removed only after
  /// the new one is in place.
  package static func install(_ staging: URL, at url: URL) throws {
    guard AtomicFile.nodeKind(url.path) != nil else {
      if rename(staging.path, url.path) != 0 {
        throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
      }
      return
    }
    let old = url.deletingLastPathComponent().appendingPathComponent(
      ".\(url.lastPathComponent).\(UUID().uuidString).old")
    guard rename(url.path, old.path) == 0 else {
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
    }
    guard rename(staging.path, url.path) == 0 else {
      _ = rename(old.path, url.path)
      throw CocoaError(.fileWriteUnknown, userInfo: [NSFilePathErrorKey: url.path])
    }
    try? FileManager.default.removeItem(at: old)
  }
}

extension ModelPackage.FormatError: LocalizedError {
  /// The same text as `description`, so `localizedDescription` says what went wrong.
  public var errorDescription: String? { description }
}
