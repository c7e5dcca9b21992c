import CoreMLFormat
import CoreMLTestSupport
import Foundation
import KerasFormat
import ModelConverter
import ModelIR
import ReferenceRuntime
import TestSupport
import Testing

/// `CoreMLSpecificationRules` against the restrictions Apple's NeuralNetwork.proto states: correct conversions of
/// real Keras fixtures break none of them, and specs changed to break one are reported under that rule.
@Suite struct SpecificationRuleTests {
  /// Every fixture conversion (Samples/Fixtures and Samples/Fixtures/layers, minus the ones the reader must refuse).
  static var models: [String] {
    Fixtures.models
      + LayerCoverageTests.models.filter { LayerCoverageTests.importErrors[LayerCoverageTests.name(of: $0)] == nil }.map
    { "layers/" + $0 }
  }

  private func spec(_ model: String, _ options: ConversionOptions = ConversionOptions()) throws -> CoreMLModelSpec {
    try CoreMLSpecReader.read(try KerasConverter.convert(modelAt: Fixtures.url(model + ".h5"), options: options).bytes)
  }

  private func rules(_ spec: CoreMLModelSpec) -> [String] { CoreMLSpecificationRules.violations(in: spec).map(\.rule) }

  @Test(arguments: models)
  func correctConversionHasNoViolations(_ model: String) throws {
    let violations = CoreMLSpecificationRules.violations(in: try spec(model))
    #expect(violations == [], "\(model)")
  }

  /// A Keras 2 hard_sigmoid LSTM is written as Core ML's LSTM with sigmoidHard alpha 0.2 / beta 0.5 (the only hard
  /// sigmoid Apple's recurrent layers support); the same layer with alpha 1/6 is the RNN-SIGMOID-HARD violation.
  @Test func recurrentSigmoidHardOtherThanPointTwoIsAViolation() throws {
    var lstm = try spec("layers/tfkeras215/lstm_sequences_out")
    let index = try #require(lstm.layers.firstIndex { $0.kind == "uniDirectionalLSTM" })
    #expect(lstm.layers[index].uniDirectionalLSTM?.activations.map(\.fieldNumber) == [41, 30, 30])
    #expect(lstm.layers[index].uniDirectionalLSTM?.activations.first == .sigmoidHard(alpha: 0.2, beta: 0.5))
    #expect(rules(lstm) == [])
    lstm.layers[index].uniDirectionalLSTM?.activations[0] = .sigmoidHard(alpha: Float(1.0 / 6), beta: 0.5)
    let violations = CoreMLSpecificationRules.violations(in: lstm)
    #expect(violations.map(\.rule) == ["RNN-SIGMOID-HARD"])
    #expect(violations.first?.layer == lstm.layers[index].name)

    // Core ML's gru (reset_after=False) with its recurrent activation changed the same way, then to an activation
    // recurrent layers do not take at all (ELU, field 50).
    var gru = try spec("layers/tfkeras215/gru_reset_before")
    let g = try #require(gru.layers.firstIndex { $0.kind == "gru" })
    #expect(rules(gru) == [])
    gru.layers[g].gru?.activations = [.sigmoidHard(alpha: Float(1.0 / 6), beta: 0.5), .tanh]
    #expect(rules(gru) == ["RNN-SIGMOID-HARD"])
    gru.layers[g].gru?.activations = [.sigmoid, .elu(alpha: 0)]
    #expect(rules(gru) == ["RNN-ACTIVATIONS"])
    gru.layers[g].gru?.activations = [.sigmoid]
    #expect(rules(gru) == ["RNN-ACTIVATION-COUNT"])
  }

  /// Keras 3's hard_sigmoid (relu6(x + 3) / 6) in GRU, LSTM and Bidirectional LSTM: written step by step with
  /// standalone sigmoidHard activation layers (alpha 1/6), no recurrent layer, no violation, and the Keras outputs.
  @Test(arguments: ["gru_hard_sigmoid", "lstm_hard_sigmoid", "lstm_sequences_out"])
  func keras3HardSigmoidRecurrentLayersConvertExactly(_ name: String) throws {
    let source = Fixtures.url("layers/keras3/\(name).h5")
    let reference = Fixtures.url("layers/keras3/\(name).reference.h5")
    let converted = try KerasConverter.convert(modelAt: source)
    let spec = try CoreMLSpecReader.read(converted.bytes)
    #expect(
      !spec.layers.contains { ["simpleRecurrent", "gru", "uniDirectionalLSTM", "biDirectionalLSTM"].contains($0.kind) })
    #expect(
      spec.layers.contains {
        $0.kind == "activation.sigmoidHard" && $0.activation == .sigmoidHard(alpha: Float(1.0 / 6), beta: 0.5)
      })
    #expect(CoreMLSpecificationRules.violations(in: spec) == [])

    let directory = try Fixtures.temporaryDirectory()
    defer { try? FileManager.default.removeItem(at: directory) }
    let output = directory.appendingPathComponent("model.mlmodel")
    try converted.write(to: output)
    let report = try ParityVerifier.verify(
      source: source, converted: output, options: VerificationOptions(samples: 3, reference: reference))
    #expect(
      report.passed, "\(name): \(report.outputs.filter { !$0.passed }.map { "\($0.name): \($0.maxAbsoluteError)" })")
    #expect(report.outputs.contains { $0.comparedWith == .referenceOutputs && $0.elements > 0 })
  }

  @Test func bidirectionalLSTMBackwardActivationsMustMatchForward() throws {
    var spec = try spec("layers/tfkeras215/text_bilstm")
    let index = try #require(spec.layers.firstIndex { $0.kind == "biDirectionalLSTM" })
    #expect(rules(spec) == [])
    spec.layers[index].biDirectionalLSTM?.activationsBackwardLSTM = [.sigmoid, .tanh, .relu]
    #expect(rules(spec) == ["BILSTM-BACKWARD-ACTIVATIONS"])
  }

  @Test func weightCountsMustMatchDeclaredSizes() throws {
    var gru = try spec("layers/tfkeras215/gru_reset_before")
    let g = try #require(gru.layers.firstIndex { $0.kind == "gru" })
    gru.layers[g].gru?.updateGate.weightMatrix?.removeLast()
    #expect(rules(gru) == ["RNN-WEIGHT-SIZES"])

    var dense = try spec("tfkeras215/dense_classifier")
    let d = try #require(dense.layers.firstIndex { $0.kind == "innerProduct" })
    dense.layers[d].innerProduct?.outputChannels += 1
    #expect(rules(dense) == ["INNER-PRODUCT-WEIGHTS", "INNER-PRODUCT-WEIGHTS"])  // weights and bias
  }

  @Test func convolutionGroupsMustDivideOutputChannels() throws {
    var spec = try spec("tfkeras215/conv_variants")
    let index = try #require(spec.layers.firstIndex { $0.kind == "convolution" })
    let outputs = try #require(spec.layers[index].convolution?.outputChannels)
    spec.layers[index].convolution?.nGroups = outputs + 1
    #expect(rules(spec).contains("CONV-GROUPS"))
  }

  @Test func spatialLayerRestrictions() throws {
    var spec = try spec("layers/tfkeras215/sequence_reshape")
    #expect(rules(spec) == [])
    let pad = try #require(spec.layers.firstIndex { $0.kind == "padding" })
    let upsample = try #require(spec.layers.firstIndex { $0.kind == "upsample" })
    spec.layers[pad].padding?.paddingAmounts = [1, 2]
    #expect(rules(spec) == ["BORDER-AMOUNTS"])
    spec.layers[pad].padding?.paddingAmounts = [0, 0, 1, 2]
    // ALIGN_CORNERS_FALSE without BILINEAR, and in a file that does not declare specification 5.
    spec.layers[upsample].upsample?.linearUpsampleMode = .known(.alignCornersFalse)
    #expect(Set(rules(spec)) == ["UPSAMPLE-LINEAR-MODE", "UPSAMPLE-VERSION"])
    spec.layers[upsample].upsample?.mode = .known(.bilinear)
    spec.specificationVersion = 5
    #expect(rules(spec) == [])
  }

  /// The bilinear UpSampling2D fixture (ALIGN_CORNERS_FALSE) declares specification 5.
  @Test func bilinearUpsampleDeclaresSpecification5() throws {
    let spec = try spec("tfkeras215/reshape_ops")
    #expect(
      spec.layers.contains { $0.kind == "upsample" && $0.upsample?.linearUpsampleMode == .known(.alignCornersFalse) })
    #expect(spec.specificationVersion >= 5)
    #expect(!rules(spec).contains("UPSAMPLE-VERSION"))
  }

  /// A gelu layer (Core ML 3) needs specification 4, and Apple forbids it beside the rank-5 input mapping: our
  /// writer therefore builds GELU from classic layers; a file that has the layer breaks both rules.
  @Test func newerLayersNeedTheirSpecificationVersion() throws {
    var spec = try spec("tfkeras215/activations")
    #expect(!spec.layers.contains { $0.kind == "gelu" })
    #expect(rules(spec) == [])
    let index = try #require(spec.layers.firstIndex { $0.kind == "activation.tanh" })
    spec.layers[index].kind = "gelu"
    spec.layers[index].parameters = .gelu(GeluParameters(mode: .known(.exact)))
    spec.specificationVersion = 3
    #expect(rules(spec).contains("SPEC-VERSION-LAYERS"))
    spec.specificationVersion = 4
    #expect(rules(spec).contains("RANK5-MAPPING"))
    spec.exactArrayMapping = true
    #expect(!rules(spec).contains("RANK5-MAPPING"))
  }

  @Test func classifierLabelsMatchTheProbabilityVector() throws {
    let labels = try ClassLabels.load(fromFile: Fixtures.url("tfkeras215/dense_classifier.labels.txt").path)
    var spec = try spec("tfkeras215/dense_classifier", ConversionOptions(classLabels: labels))
    #expect(spec.modelType == "neuralNetworkClassifier")
    #expect(rules(spec) == [])
    spec.stringClassLabels.append("frog")
    #expect(rules(spec) == ["CLASSIFIER-LABELS"])
  }

  @Test func violationsAreCodableAndDescribed() throws {
    let violation = SpecificationViolation(
      layer: "gru", layerType: "gru", rule: "RNN-SIGMOID-HARD", detail: "alpha 0.1667")
    let decoded = try JSONDecoder().decode(SpecificationViolation.self, from: JSONEncoder().encode(violation))
    #expect(decoded == violation)
    #expect(violation.description.contains("RNN-SIGMOID-HARD") && violation.description.contains("'gru'"))
  }
}

/// Keras allows a BatchNormalization epsilon of 0; Core ML would read a stored 0 as 1e-5.
@Test func batchNormalizationEpsilonZeroStaysZero() throws {
  var builder = GraphBuilder()
  let x = try builder.addInput(name: "x", type: TensorType([2, 2, 3]))
  let ones = Constant(shape: [3], values: [1, 1, 1])
  let zeros = Constant(shape: [3], values: [0, 0, 0])
  // A tiny variance makes the epsilon matter: 1 / sqrt(1e-6) versus 1 / sqrt(1e-6 + 1e-5).
  let variance = Constant(shape: [3], values: [1e-6, 1e-6, 1e-6])
  let y = try builder.add(
    .batchNormalization(BatchNormalization(gamma: ones, beta: zeros, mean: zeros, variance: variance, epsilon: 0)),
    name: "bn", inputs: [x])
  let bytes = try CoreMLWriter.serialize(builder.build(outputs: [y]), options: CoreMLWriterOptions())
  let spec = try CoreMLSpecReader.read(bytes, path: "bn")
  let epsilon = try #require(spec.layers.first { $0.kind == "batchnorm" }?.batchnorm?.epsilon)
  #expect(epsilon > 0 && epsilon < 1e-30)
  let model = try CoreMLGraphImporter.importModel(spec, path: "bn")
  let output = Interpreter(graph: model.graph).run([
    Tensor(shape: model.graph[model.graph.inputs[0]].type.shape, values: [Float](repeating: 1e-3, count: 12))
  ])[0]
  // 1e-3 / sqrt(1e-6) = 1, as Keras computes with epsilon 0.
  #expect(output.values.allSatisfy { abs($0 - 1) < 1e-4 }, "\(output.values)")
}
