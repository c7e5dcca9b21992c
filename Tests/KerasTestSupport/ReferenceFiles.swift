import Foundation
import KerasFormat
import TestSupport

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
    return try outputs.childNames().sorted { Int($0)! < Int($1)! }.map {
      Array(try outputs.floatDataset($0).shape.dropFirst())
    }
  }

  /// Keras layer name → weight name → values in Core ML layout.
  public func coreMLWeights() throws -> [String: [String: [Float]]] {
    guard let group = file.group("coreml_weights") else { return [:] }
    var result: [String: [String: [Float]]] = [:]
    for layer in group.childNames() {
      let layerGroup = try require(group.group(layer))
      for weight in layerGroup.childNames() {
        result[layer, default: [:]][weight] = try layerGroup.floatDataset(weight).values
      }
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
