import Foundation
import KerasFormat

/// HDF5 files of saved tensors (`verify --reference`), read by the HDF5 reader the Keras frontend owns,
/// in its isolated reader process when the tool isolates file reading.
enum HDF5Datasets {
  /// Every float dataset under the file's reference group, by path (`inputs/0`), and the text of its
  /// `labels` attribute (empty when absent). Throws `VerificationError.invalidReference` for a file
  /// that is not HDF5 or a dataset that cannot be read.
  static func read(path: String) throws -> (datasets: [String: (shape: [Int], values: [Float])], labelsText: String) {
    let snapshot: KerasModelSnapshot
    do {
      snapshot = try KerasModelSnapshot.reference(path: path)
    } catch KerasReaderError.notHDF5 {
      throw VerificationError.invalidReference(path: path, detail: "not an HDF5 file")
    }
    var datasets: [String: (shape: [Int], values: [Float])] = [:]
    for (name, stored) in snapshot.weights[KerasModelSnapshot.referenceGroup] ?? [:] {
      switch stored {
      case .values(let shape, let values): datasets[name] = (shape, values)
      case .unreadable(let detail):
        throw VerificationError.invalidReference(path: path, detail: "cannot read \(name): \(detail)")
      case .located: throw VerificationError.invalidReference(path: path, detail: "cannot read \(name): not loaded")
      }
    }
    return (datasets, snapshot.configText)
  }
}
