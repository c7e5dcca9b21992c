import Foundation
import KerasFormat
import ReferenceRuntime

/// Inputs and expected outputs saved from real Keras by the `Samples/` scripts.
///
/// Layout: `inputs/<i>` and `outputs/<i>` are `[N, ...]` float datasets, one per model input and output;
/// optional `pixels/<i>` (or a single `pixels` dataset) hold the 0-255 RGB pixels an image input was made
/// from; an optional root attribute `labels` names the classes.
struct ReferenceFile {
  let path: String
  let file: HDF5File
  let sampleCount: Int
  let labels: [String]?

  init(url: URL) throws {
    path = url.path
    do {
      file = try HDF5File(path: url.path)
    } catch {
      throw VerificationError.invalidReference(path: url.path, detail: "not an HDF5 file")
    }
    guard file.root.hasDataset("inputs/0"), file.root.hasDataset("outputs/0") else {
      throw VerificationError.invalidReference(path: url.path, detail: "needs datasets inputs/0 and outputs/0")
    }
    sampleCount = try file.root.floatDataset("inputs/0").shape.first ?? 0
    labels = try file.root.stringArrayAttribute("labels")
  }

  private func sample(_ dataset: String, _ sample: Int, shape: [Int]?) throws -> Tensor {
    let (datasetShape, values) = try file.root.floatDataset(dataset)
    let perSample = datasetShape.dropFirst().reduce(1, *)
    guard datasetShape.first ?? 0 > sample, shape == nil || shape!.reduce(1, *) == perSample else {
      throw VerificationError.invalidReference(path: path, detail: "\(dataset) has shape \(datasetShape); expected [N] + \(shape ?? [])")
    }
    return Tensor(shape: shape ?? Array(datasetShape.dropFirst()), values: Array(values[sample * perSample..<(sample + 1) * perSample]))
  }

  func input(_ index: Int, sample: Int, shape: [Int]) throws -> Tensor {
    guard file.root.hasDataset("inputs/\(index)") else { throw VerificationError.invalidReference(path: path, detail: "no dataset inputs/\(index)") }
    return try self.sample("inputs/\(index)", sample, shape: shape)
  }

  func pixels(_ index: Int, sample: Int, shape: [Int]) throws -> Tensor? {
    if file.root.hasDataset("pixels/\(index)") { return try self.sample("pixels/\(index)", sample, shape: shape) }
    if index == 0, file.root.hasDataset("pixels") { return try self.sample("pixels", sample, shape: shape) }
    return nil
  }

  func outputs(sample: Int) throws -> [Tensor] {
    var result: [Tensor] = []
    while file.root.hasDataset("outputs/\(result.count)") { result.append(try self.sample("outputs/\(result.count)", sample, shape: nil)) }
    return result
  }
}
