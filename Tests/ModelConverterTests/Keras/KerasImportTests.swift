import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import KerasTestSupport
import ModelConverter
import ModelIR
import TestSupport
import Testing

/// Every dialect's fixtures import, and shapes match what real Keras computed.
@Suite struct KerasImportTests {
  @Test(arguments: Fixtures.models)
  func outputShapesMatchKeras(model: String) throws {
    let keras = try KerasModelFile(path: Fixtures.url(model + ".h5").path)
    let graph = try KerasGraphImporter.importGraph(keras)
    let expected = try ReferenceFile(model: model).outputShapes()
    #expect(graph.outputs.map { graph[$0].type.shape } == expected)
  }

  @Test func dialectsAreRecognized() throws {
    #expect(try KerasModelFile(path: Fixtures.url("keras3/conv_variants.h5").path).isKeras3)
    let legacy = try KerasModelFile(path: Fixtures.url("legacy224/dense_classifier.h5").path)
    #expect(legacy.kerasVersion == "2.2.4")
    #expect(!legacy.isKeras3)
  }

  @Test func inferenceNoOpsDisappear() throws {
    for dialect in ["tfkeras215", "keras3"] {
      let graph = try KerasGraphImporter.importGraph(
        KerasModelFile(path: Fixtures.url("\(dialect)/dropout_noise.h5").path))
      #expect(graph.nodes.map(\.operation.kindName) == ["dense", "dense"])
    }
  }

  @Test func splitLayerNamesAttributeIsRead() throws {
    let keras = try KerasModelFile(path: Fixtures.url("bad/split_names.h5").path)
    let graph = try KerasGraphImporter.importGraph(keras)
    #expect(try graph.outputs.map { graph[$0].type.shape } == ReferenceFile(model: "bad/split_names").outputShapes())
    #expect(graph.nodes.count == keras.config.layers.filter { $0.className != "InputLayer" }.count)
  }

  @Test func sharedLayerIsAppliedTwice() throws {
    for dialect in Fixtures.dialects {
      let graph = try KerasGraphImporter.importGraph(
        KerasModelFile(path: Fixtures.url("\(dialect)/multi_io_shared.h5").path))
      #expect(graph.inputs.count == 2)
      #expect(graph.outputs.count == 2)
      let convolutions = graph.nodes.filter {
        if case .convolution2D = $0.operation { return true } else { return false }
      }
      #expect(convolutions.count == 2)
      #expect(Set(convolutions.map(\.inputs)).count == 2)
    }
  }

  @Test func weightsOnlyFilePlusArchitectureJSON() throws {
    let model = try KerasConverter.convert(
      architectureAt: Fixtures.url("bad/weights_only.json"), weightsAt: Fixtures.url("bad/weights_only.h5"))
    #expect(model.graph.nodes.contains { $0.operation.kindName == "dense" })
  }

  @Test func tfKerasWeightsFileWithItsJSONMatchesTheFullModel() throws {
    let pair = try KerasConverter.convert(
      architectureAt: Fixtures.url("tfkeras215/dense_classifier.json"),
      weightsAt: Fixtures.url("tfkeras215/dense_classifier.weights.h5"))
    let spec = try CoreMLSpecReader.read(pair.bytes)
    let expected = try ReferenceFile(model: "tfkeras215/dense_classifier").coreMLWeights()
    #expect(!expected.isEmpty)
    for (layer, weights) in expected {
      #expect(spec.layer(named: layer)?.namedWeights["weights"] == weights["weights"])
    }
  }

  @Test func notHDF5() throws {
    // A text file named .h5 is reported as text; an unknown binary file as not HDF5.
    let path = Fixtures.url("bad/not_hdf5.h5").path
    #expect(
      throws: KerasReaderError.unsupportedFormat(
        path: path, what: "a text file",
        advice: "give a Keras model saved with model.save(\"model.keras\") or model.save(\"model.h5\")")
    ) {
      try KerasModelFile(path: path)
    }
    let binary = try Fixtures.temporaryDirectory().appendingPathComponent("random.h5")
    try Data([0x00, 0xFF, 0x13, 0x37, 0x00, 0x01, 0x02, 0x03]).write(to: binary)
    #expect(throws: KerasReaderError.notHDF5(path: binary.path)) { try KerasModelFile(path: binary.path) }
  }

  @Test func missingFile() {
    #expect(throws: KerasReaderError.fileNotFound(path: "/nonexistent/model.h5")) {
      try KerasModelFile(path: "/nonexistent/model.h5")
    }
  }

  @Test func weightsOnlyFileWithoutArchitecture() {
    let path = Fixtures.url("bad/weights_only.h5").path
    #expect(throws: KerasReaderError.noModelConfig(path: path, weightsOnly: true)) { try KerasModelFile(path: path) }
  }

  @Test func missingDataset() throws {
    let path = Fixtures.url("bad/missing_dataset.h5").path
    #expect(throws: KerasReaderError.missingWeight(path: path, layer: "hidden", weight: "kernel")) {
      try KerasGraphImporter.importGraph(KerasModelFile(path: path))
    }
  }

  @Test func wrongWeightShape() throws {
    let path = Fixtures.url("bad/wrong_shape.h5").path
    do {
      _ = try KerasGraphImporter.importGraph(KerasModelFile(path: path))
      Issue.record("expected a shape error")
    } catch KerasReaderError.weightShapeMismatch(_, let layer, _, let expected, let actual) {
      #expect(layer == "hidden")
      #expect(expected != actual)
    }
  }

  @Test func everyUnsupportedLayerIsListedAtOnce() throws {
    let path = Fixtures.url("bad/unsupported.h5").path
    do {
      _ = try KerasGraphImporter.importGraph(KerasModelFile(path: path))
      Issue.record("expected unsupported layers")
    } catch KerasReaderError.unsupportedLayers(_, let layers) {
      #expect(Set(layers.map(\.className)) == ["Conv3D", "Lambda"])
    }
  }

}
