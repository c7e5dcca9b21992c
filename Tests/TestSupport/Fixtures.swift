import CoreMLFormat
import Foundation
import KerasFormat

/// Paths of the fixtures that `Samples/` scripts made with real Keras (shared by every test target).
public enum Fixtures {
  public static let packageRoot = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
  public static let root = packageRoot.appendingPathComponent("Samples/Fixtures")
  public static let digits = packageRoot.appendingPathComponent("Samples/Digits")

  /// Keras dialects with a full fixture set.
  public static let dialects = ["tfkeras215", "tfkeras2", "keras3", "legacy224"]

  public static func url(_ relative: String) -> URL { root.appendingPathComponent(relative) }

  /// Every `(dialect, model)` pair that has a reference file.
  public static var models: [String] {
    dialects.flatMap { dialect -> [String] in
      let folder = root.appendingPathComponent(dialect)
      let files = (try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []
      return files.filter { $0.hasSuffix(".reference.h5") }.sorted()
        .map { "\(dialect)/" + $0.replacingOccurrences(of: ".reference.h5", with: "") }
    }
  }

  /// A fresh temporary directory.
  public static func temporaryDirectory() throws -> URL {
    let url = FileManager.default.temporaryDirectory.appendingPathComponent("modelconv-tests-\(UUID().uuidString)")
    try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
    return url
  }
}

/// The reference outputs and Core ML-layout weights that a `Samples/` script saved from real Keras.
public struct ReferenceFile {
  public let file: HDF5File

  public init(model: String) throws {
    file = try HDF5File(path: Fixtures.url(model + ".reference.h5").path)
  }

  public init(url: URL) throws {
    file = try HDF5File(path: url.path)
  }

  /// Output shapes without the batch dimension, in model output order.
  public func outputShapes() throws -> [[Int]] {
    let outputs = try require(file.group("outputs"))
    return try outputs.childNames().sorted { Int($0)! < Int($1)! }.map { Array(try outputs.floatDataset($0).shape.dropFirst()) }
  }

  /// Keras layer name → weight name → values in Core ML layout.
  public func coreMLWeights() throws -> [String: [String: [Float]]] {
    guard let group = file.group("coreml_weights") else { return [:] }
    var result: [String: [String: [Float]]] = [:]
    for layer in group.childNames() {
      let layerGroup = try require(group.group(layer))
      for weight in layerGroup.childNames() { result[layer, default: [:]][weight] = try layerGroup.floatDataset(weight).values }
    }
    return result
  }

  public func dataset(_ path: String) throws -> (shape: [Int], values: [Float]) { try file.root.floatDataset(path) }
}

private func `require`<T>(_ value: T?) throws -> T {
  guard let value else { throw FixtureError.missing }
  return value
}

public enum FixtureError: Error { case missing }

extension Fixtures {
  /// The input and output names a Core ML file made by a coremltools script declares (a classifier's
  /// predicted label aside): the names its script gave, which a user gives `verify` as `--input-names`
  /// and `--output-names` when comparing that file with its Keras source.
  public static func coremltoolsNames(_ url: URL) throws -> (inputs: [String], outputs: [String]) {
    let spec = try CoreMLSpecReader.read(contentsOf: url)
    return (spec.inputs.map(\.name), spec.outputs.map(\.name).filter { $0 != spec.predictedFeatureName })
  }
}
