import Foundation
import ReferenceRuntime

/// Inputs and expected outputs saved from the source framework (as onnxruntime or the training framework saved them) by the `Samples/` scripts.
///
/// Layout: `inputs/<i>` and `outputs/<i>` are `[N, ...]` float datasets, one per model input and output;
/// optional `pixels/<i>` (or a single `pixels` dataset) hold the 0-255 RGB pixels an image input was made
/// from; an optional root attribute `labels` names the classes.
struct ReferenceFile {
  let path: String
  let sampleCount: Int
  let labels: [String]?
  /// Every dataset the comparison reads, loaded once: `inputs/<i>`, `outputs/<i>`, `pixels/<i>`, `pixels`.
  private let datasets: [String: (shape: [Int], values: [Float])]

  init(url: URL) throws {
    guard FileManager.default.fileExists(atPath: url.path) else {
      throw VerificationError.referenceNotFound(path: url.path)
    }
    do {
      try self.init(reading: url)
    } catch let error as VerificationError {
      throw error
    } catch {
      // A dataset or attribute libhdf5 cannot read: the file is bad, whatever the library says.
      throw VerificationError.invalidReference(path: url.path, detail: "\(error)")
    }
  }

  /// Reads and checks the whole file (in the reader child process when the tool isolates file reading):
  /// at least one sample, every dataset with that many samples.
  private init(reading url: URL) throws {
    path = url.path
    let stored = try HDF5Datasets.read(path: url.path)
    let datasets = stored.datasets
    guard datasets["inputs/0"] != nil, datasets["outputs/0"] != nil else {
      throw VerificationError.invalidReference(path: url.path, detail: "needs datasets inputs/0 and outputs/0")
    }
    self.datasets = datasets
    sampleCount = datasets["inputs/0"]?.shape.first ?? 0
    guard sampleCount > 0 else {
      throw VerificationError.invalidReference(path: url.path, detail: "inputs/0 holds no samples")
    }
    for (name, dataset) in datasets.sorted(by: { $0.key < $1.key }) where (dataset.shape.first ?? 0) != sampleCount {
      throw VerificationError.invalidReference(
        path: url.path, detail: "\(name) has \(dataset.shape.first ?? 0) samples, inputs/0 has \(sampleCount)")
    }
    labels =
      stored.labelsText.isEmpty ? nil : try? JSONDecoder().decode([String].self, from: Data(stored.labelsText.utf8))
  }

  private func sample(_ dataset: String, _ sample: Int, shape: [Int]?) throws -> Tensor {
    guard let (datasetShape, values) = datasets[dataset] else {
      throw VerificationError.invalidReference(path: path, detail: "no dataset \(dataset)")
    }
    let perSample = datasetShape.dropFirst().reduce(1, *)
    guard datasetShape.first ?? 0 > sample, shape == nil || shape!.reduce(1, *) == perSample else {
      throw VerificationError.invalidReference(
        path: path, detail: "\(dataset) has shape \(datasetShape); expected [N] + \(shape ?? [])")
    }
    return Tensor(
      shape: shape ?? Array(datasetShape.dropFirst()),
      values: Array(values[sample * perSample..<(sample + 1) * perSample]))
  }

  /// How many `inputs/<i>` and `outputs/<i>` datasets the file has.
  /// The shape of one sample of input `index` as saved (`[N, ...]` without N).
  func sampleShape(ofInput index: Int) -> [Int]? { datasets["inputs/\(index)"].map { Array($0.shape.dropFirst()) } }

  var inputCount: Int { (0...).first { datasets["inputs/\($0)"] == nil }! }
  var outputCount: Int { (0...).first { datasets["outputs/\($0)"] == nil }! }

  func input(_ index: Int, sample: Int, shape: [Int]) throws -> Tensor {
    try self.sample("inputs/\(index)", sample, shape: shape)
  }

  func pixels(_ index: Int, sample: Int, shape: [Int]) throws -> Tensor? {
    if datasets["pixels/\(index)"] != nil { return try self.sample("pixels/\(index)", sample, shape: shape) }
    if index == 0, datasets["pixels"] != nil { return try self.sample("pixels", sample, shape: shape) }
    return nil
  }

  func outputs(sample: Int) throws -> [Tensor] {
    var result: [Tensor] = []
    while datasets["outputs/\(result.count)"] != nil {
      result.append(try self.sample("outputs/\(result.count)", sample, shape: nil))
    }
    return result
  }
}
