import CoreMLCommon
import Foundation
import KerasTestSupport
import ModelConverter
import TestSupport
import Testing

/// An ML Program computes in float16 by default (as coremltools'), except where a layer's values leave
/// float16's range: a recurrent layer with `exponential` gates (exp overflows float16 above 11.09, and
/// an LSTM's cell state compounds the gates over the steps) computes in float32 unless float16 is asked for.
@Suite struct Float16RangeTests {
  /// lstm_variants (two LSTMs, the second with go_backwards, as the hostile campaign's case) with
  /// `exponential` as both LSTMs' recurrent activation: an edit Keras accepts, and its outputs leave
  /// float16's range on verify's inputs.
  static func exponentialLSTM() throws -> URL {
    try KerasFileEditing.edited(
      "layers/tfkeras215/lstm_variants.h5",
      [("\"recurrent_activation\": \"sigmoid\"", "\"recurrent_activation\": \"exponential\"")])
  }

  static func mlProgram(precision: WeightPrecision? = nil) -> ConversionOptions {
    var options = ConversionOptions()
    options.format = .mlProgram
    options.precision = precision
    return options
  }

  @Test func exponentialGatesMakeTheDefaultProgramFloat32AndItVerifies() throws {
    let source = try Self.exponentialLSTM()
    let converted = try Converter.convert(modelAt: source, options: Self.mlProgram())
    #expect(converted.writerOptions.precision == .float32)
    #expect(converted.summary.precision == "float32")
    // One note per layer with exponential activations, naming it.
    #expect(converted.precisionNotes.count == 2, "\(converted.precisionNotes)")
    #expect(
      converted.precisionNotes.contains { $0.contains("'lstm_backwards'") && $0.contains("computes in float32") },
      "\(converted.precisionNotes)")
    let output = try Fixtures.temporaryDirectory().appendingPathComponent("lstm.mlpackage")
    try converted.write(to: output)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 4))
    #expect(report.passed, "\(report.outputs)")
  }

  @Test func float16AskedForIsKeptWithAWarningAndOverflows() throws {
    let source = try Self.exponentialLSTM()
    let converted = try Converter.convert(modelAt: source, options: Self.mlProgram(precision: .float16))
    #expect(converted.writerOptions.precision == .float16)
    #expect(
      converted.precisionNotes.contains { $0.contains("'lstm_backwards'") && $0.contains("may overflow") },
      "\(converted.precisionNotes)")
    // Why the default differs: in float16 the model computes something else (verify simulates float16 as
    // Apple documents it: values beyond 65 504 are infinite).
    let output = try Fixtures.temporaryDirectory().appendingPathComponent("lstm16.mlpackage")
    try converted.write(to: output)
    let report = try ParityVerifier.verify(source: source, converted: output, options: VerificationOptions(samples: 4))
    #expect(!report.passed, "a float16 program of exponential LSTMs verified: \(report.outputs)")
  }

  @Test func modelsWithoutSuchLayersKeepFloat16AndNeuralNetworksHaveNoNotes() throws {
    // The same LSTMs with their sigmoid gates: the default stays float16.
    let plain = try Converter.convert(
      modelAt: Fixtures.url("layers/tfkeras215/lstm_variants.h5"), options: Self.mlProgram())
    #expect(plain.writerOptions.precision == .float16)
    #expect(plain.precisionNotes.isEmpty)
    // A neural network stores float32 and computes as the device does: nothing to say.
    var options = ConversionOptions()
    options.format = .neuralNetwork
    let network = try Converter.convert(modelAt: try Self.exponentialLSTM(), options: options)
    #expect(network.precisionNotes.isEmpty)
  }
}
