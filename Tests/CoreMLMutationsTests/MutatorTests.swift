import CoreMLMutations
import CoreMLReader
import Foundation
import TestSupport
import Testing

/// The mutator alone on a coremltools-written classifier: it lists mutations of the layers it holds,
/// each applied changes the file, and a mutation it did not list is refused.
@Suite struct MutatorTests {
  static let model = Fixtures.url("coremltools/digits_cnn.mlmodel")

  @Test func mutationsChangeTheFile() throws {
    let bytes = try [UInt8](Data(contentsOf: Self.model))
    let mutations = try CoreMLMutator.mutations(of: bytes)
    let kinds = Set(mutations.map(\.kind))
    #expect(kinds.contains(.changedBias) && kinds.contains(.swappedOutputChannels), "\(kinds)")
    let layers = Set(try CoreMLSpecReader.read(bytes).layers.map(\.name))
    for mutation in mutations {
      if let layer = mutation.layer { #expect(layers.contains(layer), "\(mutation)") }
      let mutated = try CoreMLMutator.apply(mutation, to: bytes)
      #expect(mutated != bytes, "\(mutation) left the file unchanged")
    }
  }

  @Test func aMutationNotListedIsRefused() throws {
    let bytes = try [UInt8](Data(contentsOf: Self.model))
    let foreign = CoreMLMutation(kind: .changedBias, layer: "no such layer", blob: nil, detail: "")
    #expect(throws: CoreMLMutationError.self) { try CoreMLMutator.apply(foreign, to: bytes) }
  }
}
