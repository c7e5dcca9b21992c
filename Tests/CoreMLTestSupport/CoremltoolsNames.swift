import CoreMLReader
import Foundation
import TestSupport

extension Fixtures {
  /// The input and output names a Core ML file made by a coremltools script declares (a classifier's
  /// predicted label aside): the names its script gave, which a user gives `verify` as `--input-names`
  /// and `--output-names` when comparing that file with its Keras source.
  public static func coremltoolsNames(_ url: URL) throws -> (inputs: [String], outputs: [String]) {
    let spec = try CoreMLSpecReader.read(contentsOf: url)
    return (spec.inputs.map(\.name), spec.outputs.map(\.name).filter { $0 != spec.predictedFeatureName })
  }
}
